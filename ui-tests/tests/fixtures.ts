/**
 * Galata's `test`, with JupyterLab given the time a loaded machine needs to start.
 *
 * After each page load galata waits for JupyterLab's plugins to start, for 15 s (a constant in
 * its `waitForAppStarted`, 5.6). In CI the Python suite runs beside these tests on two cores,
 * and a load has taken longer: the test failed with "Timed out waiting for condition to be
 * fulfilled" before it began. Here the page is loaded as galata's `autoGoto` loads it (the
 * test's folder, a reset workspace), and every load, `page.reload()` too, waits up to 120 s.
 * Everything else is galata's, re-exported, so specs import from here only.
 */
import { IJupyterLabPageFixture, test as galataTest } from '@jupyterlab/galata';

export * from '@jupyterlab/galata';

const APP_START_MS = 120_000;

function patientAppStart(page: IJupyterLabPageFixture): void {
  // `waitForAppStarted` is an instance property of galata's page (an arrow function), and
  // `goto` and `reload` call it through `this`: replaced here, it serves both.
  (page as any).waitForAppStarted = () =>
    page.waitForCondition(
      () =>
        page.evaluate(async () => {
          const app = (window as any).jupyterapp;
          if (typeof app === 'object') {
            await app.started;
            return true;
          }
          return false;
        }),
      APP_START_MS
    );
}

export const test = galataTest.extend({
  autoGoto: [false, { option: true }],
  page: async ({ page, tmpPath }, use) => {
    patientAppStart(page);
    await page.goto(`tree/${tmpPath}?reset`);
    await use(page);
  }
});
