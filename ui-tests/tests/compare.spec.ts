/**
 * A comparison people would choose, made once and shown in Light and then Dark at each step (the
 * theme switched live, the plots redrawn in it): the four trials of a sweep (make_sweep.py, with
 * curves; the last trial was stopped early with the lowest loss seen) compared from the sweep's
 * menu. The trial's value `lr` is a column of its own; the plot fills the panel, with real
 * axes and ticks; hover lists every run's value at the step; x as step or time, smoothing, log
 * scale; the best run is the best of those that succeeded (the stopped one is not), marked in the
 * table and thick in the plot; the params' view draws the parallel coordinates and which params
 * matter. Screenshots: ui-tests/screenshots/compare-{light,dark}-*.png.
 */
import { expect, galata, test } from './fixtures';
import { execFileSync } from 'child_process';
import * as path from 'path';

import { inEachTheme, setTheme, shot, sidebar } from './helpers';

/** Remove a sweep's trial runs (the store's own delete): the later specs count runs in the list. */
function removeTrials(sweepId: string): void {
  execFileSync(
    process.env.PX_PYTHON || 'python',
    [
      '-c',
      'import sys\nfrom jupyter_px.runstore import RunStore\nstore = RunStore()\n' +
        'for run_id in store.run_ids():\n    if run_id.startswith(sys.argv[1] + "-t"):\n        store.delete(run_id)\n',
      sweepId
    ],
    { env: { ...process.env, PX_HOME: path.join(__dirname, '..', '.px_home') } }
  );
}

function makeSweep(name: string): string {
  return execFileSync(
    process.env.PX_PYTHON || 'python',
    [path.join(__dirname, '..', 'make_sweep.py'), name, '4', 'curves'],
    { env: { ...process.env, PX_HOME: path.join(__dirname, '..', '.px_home') } }
  )
    .toString()
    .trim();
}

test(`comparison of a sweep's trials (Light, then Dark)`, async ({ page }) => {
  await page.setViewportSize({ width: 1400, height: 950 });
  await setTheme(page, 'light');
  const sweepId = makeSweep('cmp');
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  const group = sidebar(page).locator(
    `.jp-px-sweep[data-sweep-id="${sweepId}"]`
  );
  await expect(group).toBeVisible({ timeout: 30000 });
  await group.locator('.jp-px-row-menu').first().click();
  await group.locator('.jp-px-menu .jp-px-action-compare-trials').click();
  await page.sidebar.close();

  const panel = page.locator('.jp-px-compare').last();
  await expect(panel).toHaveAttribute('data-state', 'ready', {
    timeout: 60000
  });
  // One column per param: the trial's value, not a column of PX_PARAMS JSON.
  const headers = panel.locator('.jp-px-compare-table th');
  await expect(headers.filter({ hasText: /^lr/ })).toHaveCount(1);
  await expect(headers.filter({ hasText: 'PX_PARAMS' })).toHaveCount(0);
  await expect(panel.locator('.jp-px-compare-summary')).toHaveText(
    '4 runs, 2 metrics (at most 500 points a curve)'
  );

  // The best of the runs that succeeded, said and marked: trial 2, not the stopped trial 3.
  await expect(panel.locator('.jp-px-compare-best-line')).toContainText(
    'among the 3 runs that succeeded'
  );
  const bestRow = panel.locator('.jp-px-compare-table tbody tr', {
    has: page.locator('.jp-px-compare-best-cell')
  });
  await expect(bestRow.first()).toHaveAttribute('data-run', `${sweepId}-t2`);
  await expect(
    panel.locator(`.jp-px-compare-table tr[data-run="${sweepId}-t3"] td`).nth(1)
  ).toHaveText('Stopped');

  // The plot fills the panel's width, with ticks on both axes, a line per run.
  const plot = panel.locator('.jp-px-compare-plot');
  await expect(plot).toHaveAttribute('data-state', 'drawn');
  await expect(plot.locator('.scatterlayer .trace')).toHaveCount(4);
  const panelBox = (await panel.boundingBox())!;
  const svg = plot.locator('.main-svg').first();
  // The plot follows the panel's width (the sidebar closed just before: it grows to it).
  await expect
    .poll(async () => (await svg.boundingBox())!.width)
    .toBeGreaterThan(panelBox.width * 0.9);
  const plotBox = (await svg.boundingBox())!;
  expect(plotBox.height).toBeGreaterThanOrEqual(400);
  expect(await plot.locator('.xtick').count()).toBeGreaterThanOrEqual(4);
  expect(await plot.locator('.ytick').count()).toBeGreaterThanOrEqual(3);
  await inEachTheme(page, async theme => {
    // redrawn in the theme: a line per run, ticks on both axes
    await expect(plot.locator('.scatterlayer .trace')).toHaveCount(4);
    expect(await plot.locator('.xtick').count()).toBeGreaterThanOrEqual(4);
    expect(await plot.locator('.ytick').count()).toBeGreaterThanOrEqual(3);
    await shot(page, `compare-${theme}-01-curves`);
  });

  // Hover: every run's value at the step under the pointer (brought over the plot again in each
  // theme: the redraw takes the hover away).
  const area = plot.locator('.nsewdrag').first();
  const hover = plot.locator('.hoverlayer .legend');
  await inEachTheme(page, async theme => {
    const box = (await area.boundingBox())!;
    await page.mouse.move(0, 0);
    await page.mouse.move(box.x + box.width * 0.3, box.y + box.height * 0.5);
    await expect(hover).toBeVisible();
    await expect(hover).toContainText('trial 2');
    await expect(hover).toContainText('trial 0');
    await shot(page, `compare-${theme}-02-hover`);
  });

  // Hovering a row highlights its run's line (thick) and the row.
  await page.mouse.move(0, 0);
  const row = panel.locator(
    `.jp-px-compare-table tr[data-run="${sweepId}-t1"]`
  );
  await row.hover();
  await expect(row).toHaveClass(/jp-mod-active/);

  // x as relative time, smoothing, log scale.
  await panel.locator('.jp-px-x-select').selectOption('relative');
  await expect(plot.locator('.g-xtitle')).toHaveText(
    'time since the run started (s)'
  );
  await panel.locator('.jp-px-smoothing').fill('0.6');
  await expect(panel.locator('.jp-px-smoothing-value')).toHaveText('0.60');
  await expect(plot.locator('.scatterlayer .trace')).toHaveCount(8); // raw lines stay, faint
  await panel.locator('.jp-px-log-scale input').check();
  await inEachTheme(page, async theme => {
    await expect(plot.locator('.g-xtitle')).toHaveText(
      'time since the run started (s)'
    );
    await expect(plot.locator('.scatterlayer .trace')).toHaveCount(8);
    await expect(plot.locator('.ytick text').first()).toBeVisible();
    await shot(page, `compare-${theme}-03-smoothed-log`);
  });

  // Best at the last step every run reached.
  await panel.locator('.jp-px-best-rule').selectOption('common_step');
  await expect(panel.locator('.jp-px-compare-best-line')).toContainText(
    'at step 20, the last step every run reached'
  );

  // The params' view: parallel coordinates and which params matter.
  await panel.locator('.jp-px-compare-tab-params').click();
  const parallel = panel.locator('.jp-px-compare-parallel');
  await inEachTheme(page, async theme => {
    await expect(parallel.locator('.parcoords')).toHaveCount(1);
    await expect(
      parallel.locator('.parcoords .axis-title').first()
    ).toBeVisible();
    await expect(
      panel.locator('.jp-px-compare-importance .bars .point')
    ).not.toHaveCount(0);
    await shot(page, `compare-${theme}-04-params`);
  });
  removeTrials(sweepId);
});
