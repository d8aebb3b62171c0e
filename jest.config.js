const jestJupyterLab = require('@jupyterlab/testutils/lib/jest-config');

const esModules = [
  '@codemirror',
  '@jupyter/ydoc',
  '@jupyter/react-components',
  '@jupyter/web-components',
  '@jupyterlab/',
  '@marijn',
  'color',
  'marked',
  '@microsoft',
  'exenv-es6',
  'lib0',
  'nanoid',
  'vscode-ws-jsonrpc',
  'y-protocols',
  'y-websocket',
  'yjs'
].join('|');

const baseConfig = jestJupyterLab(__dirname);

module.exports = {
  ...baseConfig,
  automock: false,
  collectCoverageFrom: ['labextension/src/**/*.{ts,tsx}', '!labextension/src/**/*.d.ts'],
  coverageReporters: ['lcov', 'text'],
  // plotly.js cannot draw in jsdom: the views' figures are checked through a stand-in (its file
  // says why); Galata checks the drawing in Chromium.
  moduleNameMapper: {
    ...(baseConfig.moduleNameMapper || {}),
    '^plotly\\.js-dist-min$': '<rootDir>/labextension/src/__tests__/plotlyStub.ts'
  },
  modulePathIgnorePatterns: ['<rootDir>/jupyter_px/labextension', '<rootDir>/ui-tests', '<rootDir>/lib'],
  testRegex: 'labextension/src/.*/.*.spec.ts[x]?$',
  transformIgnorePatterns: [`/node_modules/(?!${esModules}).+`]
};
