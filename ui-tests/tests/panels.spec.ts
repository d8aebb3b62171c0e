/**
 * The compact topology card, the state colors, the Metrics panel (plotly: full width, the legend
 * under the plot, integer steps, a log scale by default where the loss spans decades, hover) and
 * the Logs toolbar (follow, wrap, search, download), on a finished run written into the store by
 * make_runs.py: one pass, each step shown in Light and then Dark (the theme switched live, the
 * colors and the plot checked in each). Screenshots go to
 * ui-tests/screenshots/panels-{light,dark}-*.png.
 */
import { expect, galata, IJupyterLabPageFixture, test } from './fixtures';
import * as fs from 'fs';
import * as path from 'path';

import { inEachTheme, makeRuns, setTheme, Theme } from './helpers';

const SHOTS = path.join(__dirname, '..', 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

const sidebar = (page: IJupyterLabPageFixture) =>
  page.locator('#jupyter-px-sidebar');

test(`topology card, colors, metrics and logs panels (Light, then Dark)`, async ({
  page
}) => {
  const shot = (theme: Theme, name: string) =>
    page.screenshot({
      path: path.join(SHOTS, `panels-${theme}-${name}.png`)
    });
  await setTheme(page, 'light');
  const prefix = `panels-${Date.now().toString(36)}`;
  makeRuns(1, prefix, 'output');
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  await sidebar(page).locator('.jp-px-topology-summary').click(); // the form, from its one line

  // The card: what PyTorch has, then TensorFlow's chief, ps and evaluators.
  const card = sidebar(page).locator('.jp-px-card');
  await expect(card).toBeVisible();
  await sidebar(page).locator('#root_framework').selectOption('pytorch');
  await expect(card.locator('.jp-px-card-field > span')).toHaveText([
    'Framework',
    'Backend',
    'master',
    'Workers'
  ]);
  await expect(sidebar(page).locator('.jp-px-submit-button')).toBeVisible();
  await inEachTheme(page, async theme => {
    await expect(card.locator('.jp-px-card-field > span')).toHaveCount(4);
    await shot(theme, '01-card-pytorch');
  });
  await sidebar(page).locator('#root_framework').selectOption('tensorflow');
  await expect(card.locator('.jp-px-card-field > span')).toHaveText([
    'Framework',
    'Backend',
    'chief',
    'Workers',
    'Parameter servers',
    'Evaluators'
  ]);
  await card.locator('.jp-px-card-role[data-role="worker"]').click();
  await card.locator('#px_card_worker_cpu_requests').fill('0.5');
  await card.locator('#px_card_worker_cpu_limits').fill('1');
  await expect(sidebar(page).locator('.jp-px-verdict')).toContainText('✓');
  await inEachTheme(page, async theme => {
    await expect(card.locator('#px_card_worker_cpu_limits')).toHaveValue('1');
    await shot(theme, '02-card-tensorflow');
  });
  // Back as it was, for the tests after this one (they share the form).
  await card.locator('#px_card_worker_cpu_requests').fill('');
  await card.locator('#px_card_worker_cpu_limits').fill('');
  await sidebar(page).locator('#root_framework').selectOption('pytorch');
  // Empty resource fields read as not set, not as grey values.
  await expect(card.locator('#px_card_worker_memory_requests')).toHaveAttribute(
    'placeholder',
    'not set'
  );
  await sidebar(page).locator('.jp-px-topology-summary').click(); // closed again

  // One color per state, from the variables the notebook's colors match, in each theme.
  await sidebar(page).locator('.jp-px-filter-text').fill(prefix);
  const row = sidebar(page).locator(
    `li.jp-px-run[data-run-id="${prefix}-0000"]`
  );
  await inEachTheme(page, async () => {
    const stopped = await page.evaluate(() =>
      getComputedStyle(document.documentElement)
        .getPropertyValue('--px-state-stopped')
        .trim()
    );
    expect(stopped).toBe('#8e7cc3');
    await expect(row.locator('.jp-px-badge')).toHaveCSS(
      'background-color',
      'rgb(34, 165, 89)' // Succeeded: #22a559, the notebook's
    );
  });

  // Metrics: plotly, as every plot; the width of the panel, the legend under the plot, integer
  // steps ticked at integers, a log scale by default (the loss falls four decades), hover.
  await row.locator('.jp-px-action-metrics').click();
  const metrics = page.locator('.jp-px-panel-metrics').last();
  const plot = metrics.locator('.jp-px-plot');
  await expect(plot).toHaveAttribute('data-state', 'drawn');
  await expect(plot.locator('.scatterlayer .trace')).toHaveCount(3);
  const view = (await metrics.locator('.jp-px-metrics-view').boundingBox())!;
  const drawn = (await plot.locator('.main-svg').first().boundingBox())!;
  expect(drawn.width).toBeGreaterThan(view.width * 0.9);
  await expect(metrics.locator('.jp-px-log-scale input')).toBeChecked();
  await expect(plot).toHaveAttribute('aria-label', 'loss by step (log scale)');
  const xticks = await plot.locator('.xtick text').allTextContents();
  expect(xticks.length).toBeGreaterThanOrEqual(3);
  expect(xticks.every(tick => /^[\d,]+$/.test(tick))).toBe(true);
  await expect(metrics.locator('.jp-px-plot-status')).toHaveText(
    'run finished'
  );
  await inEachTheme(page, async theme => {
    // Redrawn in the theme: the log scale kept, the legend under the plot, hover (the pointer
    // brought over it again: the redraw took the hover away).
    await expect(plot).toHaveAttribute(
      'aria-label',
      'loss by step (log scale)'
    );
    await expect(plot.locator('.scatterlayer .trace')).toHaveCount(3);
    const legend = (await plot.locator('.legend').boundingBox())!;
    const area = (await plot.locator('.nsewdrag').first().boundingBox())!;
    expect(legend.y).toBeGreaterThan(area.y + area.height); // under the plot, not beside it
    await page.mouse.move(0, 0);
    await page.mouse.move(area.x + area.width / 2, area.y + area.height / 2);
    await expect(plot.locator('.hoverlayer .legend')).toContainText('master-0');
    // The mode bar (shown on hover) keeps the download, but nothing that sends the figure's
    // data off this machine: plotly.js 4 adds "Share chart..." unless told not to.
    await expect(plot.locator('.modebar-btn').first()).toBeAttached();
    await expect(
      plot.locator(
        '.modebar-btn[data-title*="Share"], .modebar-btn[data-title*="Chart Studio"], .modebar-btn[data-attr="sendChartToCloud"]'
      )
    ).toHaveCount(0);
    await shot(theme, '03-metrics-hover');
  });
  await metrics.locator('.jp-px-log-scale input').uncheck();
  await expect(plot).toHaveAttribute('aria-label', 'loss by step');
  await inEachTheme(page, async theme => {
    await expect(plot).toHaveAttribute('aria-label', 'loss by step');
    await shot(theme, '04-metrics-linear');
  });

  // Logs: follow, wrap, search, download.
  await row.locator('.jp-px-action-logs').click();
  const logs = page.locator('.jp-px-panel-logs').last();
  const log = logs.locator('.jp-px-log[data-replica="master-0"]');
  await expect(log.locator('pre')).toContainText('master-0 line 199');
  await expect(log.locator('.jp-px-log-follow input')).toBeChecked();
  await log.locator('.jp-px-log-wrap input').uncheck();
  await expect(log.locator('pre')).toHaveClass(/jp-mod-nowrap/);
  await log.locator('.jp-px-log-search').fill('line 12');
  await expect(log.locator('.jp-px-log-count')).toHaveText('1 of 11');
  await log.locator('.jp-px-log-search').press('Enter');
  await expect(log.locator('.jp-px-log-count')).toHaveText('2 of 11');
  expect(await page.evaluate(() => String(window.getSelection()))).toBe(
    'line 12'
  );
  await inEachTheme(page, async theme => {
    await expect(log.locator('.jp-px-log-count')).toHaveText('2 of 11');
    await expect(log.locator('pre')).toHaveClass(/jp-mod-nowrap/);
    await shot(theme, '05-logs-toolbar');
  });
  const download = page.waitForEvent('download');
  await log.locator('.jp-px-log-download').click();
  const file = await download;
  expect(file.suggestedFilename()).toBe(`${prefix}-0000-master-0.log`);
  const saved = fs.readFileSync((await file.path())!, 'utf-8');
  expect(saved.split('\n').length).toBe(201);
});
