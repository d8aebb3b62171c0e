/**
 * A sweep without an objective in the notebook, run once and shown in Light and then Dark (the
 * theme switched live, the plots redrawn in it): a real three-trial grid sweep whose trials log
 * `loss` (falling over eight decades) and `acc`. Its view says once how to declare an
 * objective, draws each logged metric with a line per trial (no empty chart of invented axes, no
 * value column of "-"), its trials read Succeeded as their runs do, and the per-trial charts are
 * on a log axis by themselves (the values span eight decades), which the "log scale" box turns
 * off and on. Screenshots:
 * ui-tests/screenshots/sweep-noobjective-{light,dark}-{01-metrics,02-linear}.png.
 */
import { expect, IJupyterLabPageFixture, test } from './fixtures';

import { inEachTheme, notebook, setTheme, shot, openNotebook } from './helpers';

const cells = (name: string) => [
  '%load_ext jupyter_px',
  `%%px_topology free
framework: pytorch
hptuning:
  concurrency: 3
  matrix:
    lr: {values: [0.1, 0.01, 0.001]}`,
  `%%px_distributed -t free --name ${name}
from jupyter_px import tracking
for step in range(5):
    tracking.log_metrics(step=step, loss=lr * 10 ** (-2 * step), acc=1 - lr)
`
];

const sweepView = (page: IJupyterLabPageFixture) =>
  page.locator('.jp-Notebook .jp-Cell').nth(2).locator('.jp-px-sweep-output');

test(`a sweep without an objective draws every logged metric (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  const name = `free-${Date.now().toString(36)}`;
  const file = `${tmpPath}/free.ipynb`;
  await page.contents.uploadContent(notebook(cells(name)), 'text', file);
  await openNotebook(page, file);
  await setTheme(page, 'light');
  await page.notebook.run();

  const view = sweepView(page);
  await expect(view).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 240000
  });
  const plots = view.locator('.jp-px-sweep-metric-plot');
  await expect(plots).toHaveCount(2, { timeout: 60000 }); // acc and loss
  for (const plot of await plots.all()) {
    await expect(plot.locator('.scatterlayer .trace')).toHaveCount(3);
  }
  // the sweep's summary says it as the table does, never "complete"
  await expect(view.locator('.jp-px-run-message')).toContainText('3 succeeded');
  await expect(view.locator('.jp-px-sweep-note')).toHaveCount(1); // said once
  await expect(view.locator('.jp-px-sweep-note')).toContainText('metric:');
  await expect(view.locator('.jp-px-sweep-missing')).toHaveCount(0);
  await expect(view.locator('.jp-px-sweep-objective')).toHaveCount(0);
  await expect(view.locator('.jp-px-sweep-trials thead th')).toHaveText([
    'trial',
    'state',
    'step',
    'params',
    'reason'
  ]);
  await expect(view.locator('.jp-px-trial-state')).toHaveText([
    'Succeeded',
    'Succeeded',
    'Succeeded'
  ]);
  // Eight decades: the axis is log by itself; the box turns it linear.
  const box = view.locator('.jp-px-sweep-log input');
  await expect(box).toBeChecked();
  const loss = plots.nth(1);
  await inEachTheme(page, async theme => {
    await expect(page.locator('body')).toHaveAttribute(
      'data-jp-theme-light',
      theme === 'light' ? 'true' : 'false'
    );
    for (const plot of await plots.all()) {
      await expect(plot.locator('.scatterlayer .trace')).toHaveCount(3);
    }
    await expect(box).toBeChecked();
    await expect(loss.locator('.ytick text').first()).toBeVisible();
    await view.scrollIntoViewIfNeeded();
    await shot(page, `sweep-noobjective-${theme}-01-metrics`);
  });
  await box.uncheck();
  await expect(box).not.toBeChecked();
  const linear = () =>
    loss
      .locator('.ytick text')
      .allTextContents()
      .then(texts => texts.some(text => /^0(\.\d+)?$/.test(text)));
  await expect.poll(linear).toBe(true); // a linear axis starts at 0
  await inEachTheme(page, async theme => {
    await expect(box).not.toBeChecked();
    await expect.poll(linear).toBe(true); // redrawn in the theme, still linear
    await shot(page, `sweep-noobjective-${theme}-02-linear`);
  });
});
