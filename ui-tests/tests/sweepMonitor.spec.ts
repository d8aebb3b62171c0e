/**
 * The sweep in the notebook, one sweep shown in Light and then Dark (the theme switched live at
 * each look, the plots redrawn in it): a real four-trial grid sweep started with
 * `%%px_distributed -t sw` shows the sweep's view (this extension's, from the server): both plots
 * draw while it runs and after it has succeeded (the objective per trial by step, a line per
 * trial; the parallel coordinates with their color bar inside the plot), on the theme's
 * background; `%px_attach SWEEP` shows it again with both plots drawn. Screenshots:
 * ui-tests/screenshots/sweep-{light,dark}-*.png.
 */
import { expect, IJupyterLabPageFixture, test } from './fixtures';

import { inEachTheme, notebook, setTheme, shot, openNotebook } from './helpers';

const cells = (name: string) => [
  '%load_ext jupyter_px',
  `%%px_topology sw
framework: pytorch
environment:
  replicas:
    n_workers: 0
hptuning:
  concurrency: 2
  metric: {name: loss, optimization: minimize}
  matrix:
    lr: {values: [0.1, 0.2, 0.3, 0.4]}`,
  `%%px_distributed -t sw --name ${name}
import os, time
from jupyter_px import tracking
for step in range(12):
    tracking.log_metrics(step=step, loss=lr * (12 - step))
    time.sleep(0.25)
    # the last two trials run on after the first end, until the test has seen the sweep live
    # (a file beside the notebook, the trials' working folder)
    while lr > 0.25 and step == 5 and not os.path.exists("release"):
        time.sleep(0.2)
`
];

const sweepView = (page: IJupyterLabPageFixture, cell: number) =>
  page
    .locator('.jp-Notebook .jp-Cell')
    .nth(cell)
    .locator('.jp-px-sweep-output');

/** Both plots drawn: a line per trial with a value, and the parallel coordinates. */
async function expectPlots(
  page: IJupyterLabPageFixture,
  cell: number,
  trials: number
): Promise<void> {
  const view = sweepView(page, cell);
  const objective = view.locator('.jp-px-sweep-objective');
  await expect(objective.locator('.scatterlayer .trace')).toHaveCount(trials, {
    timeout: 120000
  });
  const parallel = view.locator('.jp-px-sweep-parallel');
  await expect(parallel.locator('.parcoords')).toHaveCount(1, {
    timeout: 60000
  });
  // The color bar sits inside the plot, not clipped at its right edge.
  const plotBox = (await parallel.locator('.main-svg').first().boundingBox())!;
  const bar = (await parallel.locator('.colorbar').first().boundingBox())!;
  expect(bar.x + bar.width).toBeLessThanOrEqual(plotBox.x + plotBox.width + 1);
}

test(`a sweep's plots draw live and after %px_attach (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  await setTheme(page, 'light');
  const name = `sw-${Date.now().toString(36)}`;
  const file = `${tmpPath}/sweep.ipynb`;
  await page.contents.uploadContent(notebook(cells(name)), 'text', file);
  await openNotebook(page, file);
  await page.notebook.run();

  // Live: the view draws the trials that have reported while the sweep runs, and the
  // parallel coordinates once a trial is complete (two at a time: the first two end in 3 s,
  // the last two wait half-way for the test's release: a loaded machine once saw the sweep
  // end, at a fixed 48 s, before it had drawn and switched the theme twice).
  const view = sweepView(page, 2);
  await expect(view).toBeVisible({ timeout: 60000 });
  await expect(
    view.locator('.jp-px-sweep-objective .scatterlayer .trace').first()
  ).toBeVisible({ timeout: 120000 });
  await expect(view.locator('.jp-px-sweep-parallel .parcoords')).toHaveCount(
    1,
    { timeout: 60000 }
  );
  await inEachTheme(page, async theme => {
    // redrawn in the theme, live: both plots still there, the sweep still running
    await expect(
      view.locator('.jp-px-sweep-objective .scatterlayer .trace').first()
    ).toBeVisible();
    await expect(view.locator('.jp-px-sweep-parallel .parcoords')).toHaveCount(
      1
    );
    await expect(view).toHaveAttribute('data-state', 'Running'); // still live when both drew
    await view.locator('.jp-px-sweep-parallel').scrollIntoViewIfNeeded();
    await shot(page, `sweep-${theme}-01-live`);
  });

  // Finished: both plots, every trial.
  await page.contents.uploadContent('', 'text', `${tmpPath}/release`);
  await expect(view).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 240000
  });
  await expectPlots(page, 2, 4);
  await expect(view.locator('.jp-px-sweep-stop')).toHaveCount(0); // nothing left to stop
  const tick = view.locator('.jp-px-sweep-objective .xtick text').first();
  const textIsLight = async () => {
    const fill = await tick.evaluate(node => getComputedStyle(node).fill);
    const [r, g, b] = (fill.match(/\d+/g) ?? []).map(Number);
    const brightness = (r + g + b) / 3;
    return Number.isFinite(brightness) ? brightness > 128 : null;
  };
  await inEachTheme(page, async theme => {
    await expectPlots(page, 2, 4);
    // On the theme's ground: the plot's text in the theme's color (light on Dark, dark on
    // Light), its background transparent (the notebook's own), never a white box on Dark.
    // Polled: the view's last redraw (on the final status, or the theme's switch) replaces the
    // tick labels, and a label read while it is being replaced has no fill yet.
    await expect.poll(textIsLight).toBe(theme === 'dark');
    const ground = await view
      .locator('.jp-px-sweep-objective .main-svg')
      .first()
      .evaluate(node => getComputedStyle(node).backgroundColor);
    expect(ground).toBe('rgba(0, 0, 0, 0)');
    await view.scrollIntoViewIfNeeded();
    await shot(page, `sweep-${theme}-02-finished`);
  });

  // %px_attach: the sweep again, both plots drawn.
  const sweepId = (await view.getAttribute('data-sweep-id'))!;
  await page.notebook.addCell('code', `%px_attach ${sweepId}`);
  // Run as Shift+Enter runs it (the new cell is the active one), its output awaited below:
  // galata's runCell waits a fixed time for the execution, which a loaded CI machine outran.
  await page.evaluate(() =>
    (window as any).jupyterapp.commands.execute('notebook:run-cell')
  );
  await expectPlots(page, 3, 4);
  await inEachTheme(page, async theme => {
    await expectPlots(page, 3, 4);
    await sweepView(page, 3).scrollIntoViewIfNeeded();
    await shot(page, `sweep-${theme}-03-attach`);
  });
});
