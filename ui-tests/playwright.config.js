/**
 * Browser tests of the sidebar with Galata, in Debian's headless Chromium (never a browser
 * download). JupyterLab is started by `webServer` with a private run store.
 */
const fs = require('fs');
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

// Debian's headless shell where it is installed (a fifth less CPU than the whole browser's
// headless mode, tests/browser_support.py), else Debian's Chromium; PX_CHROMIUM chooses.
const chromium =
  process.env.PX_CHROMIUM ||
  ['/usr/bin/chromium-headless-shell', '/usr/bin/chromium'].find(path =>
    fs.existsSync(path)
  ) ||
  '/usr/bin/chromium';

const port = process.env.PX_UI_TESTS_PORT || '8917';

module.exports = {
  ...baseConfig,
  timeout: 600 * 1000,
  expect: { timeout: 30 * 1000 },
  workers: 1,
  fullyParallel: false,
  retries: 0,
  reporter: [['list'], ['html', { open: 'never' }]],
  globalTeardown: require.resolve('./teardown.js'),
  use: {
    ...baseConfig.use,
    baseURL: `http://localhost:${port}`,
    video: 'off',
    trace: 'off',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: chromium,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync'
      ]
    }
  },
  webServer: {
    command: 'bash ./start_jupyterlab.sh',
    url: `http://localhost:${port}/lab`,
    timeout: 180 * 1000,
    reuseExistingServer: false
  }
};
