/**
 * The sidebar laid out around the user's path, at 950 px, in Light and then Dark (the theme
 * switched live at each look, the layout checked in each): the Run button and what will run (the
 * notebook, the cells, the run's name) in view at the top; the topology in one line that opens its
 * form; at least eight runs in view without scrolling, in one scroll container; the selection bar
 * in view while the list scrolls; each row's Logs, Metrics and TensorBoard in view and runs of one
 * name told apart. And no request to jupyter-server-proxy's lab extension (its servers-info 404 on
 * every page load): only this extension's and JupyterLab's own.
 * Screenshots: ui-tests/screenshots/sidebar-layout-{light,dark}-*.png.
 */
import { expect, galata, test } from './fixtures';
import {
  inEachTheme,
  makeRuns,
  notebook,
  setTheme,
  shot,
  sidebar,
  openNotebook
} from './helpers';

/** Whether `inner` is wholly inside `outer`'s visible box. */
function inside(
  inner: { x: number; y: number; width: number; height: number },
  outer: { x: number; y: number; width: number; height: number }
): boolean {
  return (
    inner.y >= outer.y - 1 &&
    inner.y + inner.height <= outer.y + outer.height + 1
  );
}

test(`the sidebar at 950 px: Run in view, eight runs, a sticky selection bar (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  const failed: string[] = [];
  page.on('response', response => {
    // jupyter-server-proxy's lab plugin asked its switched-off server for servers-info on every
    // load (a 404): disabled by ours, it asks nothing (its bundle may still be fetched).
    if (
      response.status() === 404 ||
      response.url().includes('/server-proxy/servers-info')
    ) {
      failed.push(`${response.status()} ${response.url()}`);
    }
  });
  await page.setViewportSize({ width: 1300, height: 950 });
  await page.reload();
  await setTheme(page, 'light');
  const prefix = `lay-${Date.now().toString(36)}`;
  makeRuns(20, prefix, 'recent');
  await page.contents.uploadContent(
    notebook(['print("hello")']),
    'text',
    `${tmpPath}/ux.ipynb`
  );
  await openNotebook(page, `${tmpPath}/ux.ipynb`);
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  const bar = sidebar(page).locator('.jp-px-run-bar');
  const pane = (await sidebar(page).boundingBox())!;

  // What will run and the Run button, together at the top.
  await expect(bar.locator('.jp-px-notebook')).toHaveText('ux.ipynb');
  await expect(bar.locator('.jp-px-run-name-input')).toHaveAttribute(
    'placeholder',
    'name: ux'
  );
  const run = bar.locator('.jp-px-submit-button');
  await expect(run).toBeEnabled({ timeout: 30000 });
  expect(inside((await run.boundingBox())!, pane)).toBe(true);
  // The topology in one line (valid, its headline); a click opens the form, another closes it.
  const summary = bar.locator('.jp-px-topology-summary');
  await expect(summary).toContainText('Topology');
  await expect(summary.locator('.jp-px-valid')).toBeVisible();
  await summary.click();
  await expect(
    sidebar(page).locator('#root_environment_replicas_n_workers')
  ).toBeVisible();
  await inEachTheme(page, async theme => {
    await expect(
      sidebar(page).locator('#root_environment_replicas_n_workers')
    ).toBeVisible();
    expect(inside((await run.boundingBox())!, pane)).toBe(true); // the button stays in view
    await shot(page, `sidebar-layout-${theme}-01-form-open`);
  });
  await summary.click();
  await expect(
    sidebar(page).locator('#root_environment_replicas_n_workers')
  ).toHaveCount(0);

  // At least eight runs in view, without scrolling; the list is the one scroll container.
  const list = sidebar(page).locator('.jp-px-runs');
  await expect(
    sidebar(page).locator(`li.jp-px-run[data-run-id^="${prefix}"]`)
  ).toHaveCount(20, {
    timeout: 60000
  });
  const listBox = (await list.boundingBox())!;
  const rows = sidebar(page).locator('li.jp-px-run');
  await inEachTheme(page, async theme => {
    let visible = 0;
    for (let i = 0; i < (await rows.count()); i++) {
      if (inside((await rows.nth(i).boundingBox())!, listBox)) {
        visible++;
      }
    }
    expect(visible).toBeGreaterThanOrEqual(8);
    const scrolling = await sidebar(page).evaluate(
      root =>
        Array.from(root.querySelectorAll('*')).filter(node => {
          const style = getComputedStyle(node);
          return (
            /(auto|scroll)/.test(style.overflowY) &&
            node.scrollHeight > node.clientHeight + 1
          );
        }).length
    );
    expect(scrolling).toBe(1);
    // Each row's Logs, Metrics and TensorBoard in view.
    const first = rows.first();
    await expect(
      first.locator('.jp-px-run-actions > .jp-px-action-metrics')
    ).toBeVisible();
    await expect(
      first.locator('.jp-px-run-actions > .jp-px-action-tensorboard')
    ).toBeVisible();
    await shot(page, `sidebar-layout-${theme}-02-runs`);
  });

  // Two runs checked; the list scrolled to its end: the selection bar is still in view.
  await rows.nth(0).locator('.jp-px-run-select').check();
  await rows.nth(1).locator('.jp-px-run-select').check();
  const selection = sidebar(page).locator('.jp-px-selection');
  await expect(selection.locator('.jp-px-selection-count')).toHaveText(
    '2 selected'
  );
  await list.evaluate(node => (node.scrollTop = node.scrollHeight));
  await expect
    .poll(() => list.evaluate(node => node.scrollTop))
    .toBeGreaterThan(100);
  await inEachTheme(page, async theme => {
    expect(await list.evaluate(node => node.scrollTop)).toBeGreaterThan(100); // still scrolled
    expect(inside((await selection.boundingBox())!, listBox)).toBe(true);
    await expect(selection.locator('.jp-px-selection-compare')).toBeVisible();
    await shot(page, `sidebar-layout-${theme}-03-scrolled-selection`);
  });

  expect(failed).toEqual([]);
});
