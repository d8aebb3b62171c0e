/**
 * The sidebar end to end, in headless Chromium against a real JupyterLab and real local runs:
 * fill the topology form (3 workers and a per-index override), see a bad value explained beside
 * its field, submit a notebook, follow the run to Succeeded, open its logs (a tab per replica),
 * its metrics plot and its TensorBoard, stop a second run; then the dark theme; then a store of
 * 1,000 runs. Screenshots of every step go to ui-tests/screenshots/.
 *
 * Each test sets up what it checks (its notebooks, its runs, its theme) and asserts only about
 * those: they share one JupyterLab and its run store, and pass in any order or alone.
 */
import { expect, galata, IJupyterLabPageFixture, test } from './fixtures';
import type { Locator } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

import { makeRuns, openNotebook } from './helpers';

const SHOTS = path.join(__dirname, '..', 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

async function shot(page: IJupyterLabPageFixture, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

function notebook(cells: { source: string; tags?: string[] }[]): string {
  return JSON.stringify({
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: {
        name: 'python3',
        display_name: 'Python 3 (ipykernel)',
        language: 'python'
      }
    },
    cells: cells.map((cell, i) => ({
      id: `cell-${i}`,
      cell_type: 'code',
      source: cell.source,
      metadata: { tags: cell.tags ?? [] },
      outputs: [],
      execution_count: null
    }))
  });
}

const TRAIN = `import os, time
from jupyter_px import tracking
for step in range(30):
    tracking.log_metrics(step=step, total_steps=30, loss=1.0 / (step + 1))
    time.sleep(0.02)
print("done on", os.environ["PX_TASK_TYPE"], os.environ["PX_TASK_INDEX"], flush=True)
`;

const SLEEP = `import time
print("sleeping", flush=True)
time.sleep(600)
`;

const sidebar = (page: IJupyterLabPageFixture) =>
  page.locator('#jupyter-px-sidebar');
const runRow = (page: IJupyterLabPageFixture, name: string) =>
  page.locator('li.jp-px-run', {
    has: page.locator('.jp-px-run-name', { hasText: name })
  });

/** Click one of a run row's actions: on the row (Logs, Metrics, TensorBoard), else in its "⋯" menu. */
async function rowAction(row: Locator, action: string): Promise<void> {
  const direct = row.locator(`.jp-px-run-actions > .jp-px-action-${action}`);
  if (await direct.count()) {
    await direct.click();
    return;
  }
  await row.locator('.jp-px-row-menu').click();
  await row.locator(`.jp-px-menu .jp-px-action-${action}`).click();
}

async function openSidebar(page: IJupyterLabPageFixture): Promise<void> {
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  const summary = sidebar(page).locator('.jp-px-topology-summary');
  if ((await summary.getAttribute('aria-expanded')) !== 'true') {
    await summary.click(); // the topology's one line opens its form
  }
  await expect(
    sidebar(page).locator('#root_environment_replicas_n_workers')
  ).toBeVisible();
}

/** Upload a notebook into the test's folder and open it: the sidebar submits the open notebook. */
async function openNewNotebook(
  page: IJupyterLabPageFixture,
  path: string,
  source: string
): Promise<void> {
  await page.contents.uploadContent(notebook([{ source }]), 'text', path);
  await openNotebook(page, path);
}

async function submitOpenNotebook(
  page: IJupyterLabPageFixture,
  name: string
): Promise<void> {
  await sidebar(page).locator('.jp-px-run-name-input').fill(name);
  const button = sidebar(page).locator('.jp-px-submit-button');
  await expect(button).toBeEnabled();
  await button.click();
  await expect(runRow(page, name)).toBeVisible({ timeout: 60000 });
}

test.describe('jupyter-px sidebar', () => {
  test('define, submit, follow, stop (light theme)', async ({
    page,
    tmpPath
  }) => {
    await page.contents.uploadContent(
      notebook([{ source: SLEEP }]),
      'text',
      `${tmpPath}/sleep.ipynb`
    );
    await page.theme.setLightTheme();
    await openNewNotebook(page, `${tmpPath}/train.ipynb`, TRAIN);
    await openSidebar(page);
    await expect(sidebar(page).locator('.jp-px-notebook')).toHaveText(
      'train.ipynb'
    );
    await expect(sidebar(page).locator('.jp-px-notebook')).toHaveAttribute(
      'title',
      `${tmpPath}/train.ipynb`
    );
    await shot(page, 'light-01-sidebar');

    // The form: 3 workers and an override for one index.
    await sidebar(page)
      .locator('#root_environment_replicas_n_workers')
      .fill('3');
    // Overrides are in the collapsible section under the card.
    await sidebar(page).locator('.jp-px-more-settings > summary').click();
    await sidebar(page).locator("button[title='Add item']").first().click();
    const index = sidebar(page).locator(
      '#root_environment_replicas_worker_0_index'
    );
    await index.fill('9');
    // A bad value, explained beside its field by the server's validation.
    await expect(
      sidebar(page).locator('#root_environment_replicas_worker_0_index__error')
    ).toHaveText('9 is not below n_workers (3)');
    await expect(sidebar(page).locator('.jp-px-submit-button')).toBeDisabled();
    await index.scrollIntoViewIfNeeded();
    await shot(page, 'light-02-bad-value');
    await index.fill('2');
    await sidebar(page)
      .locator('#root_environment_replicas_worker_0_resources_cpu_requests')
      .fill('1');
    await expect(sidebar(page).locator('.jp-px-verdict')).toContainText(
      '4 replicas'
    );
    await expect(
      sidebar(page).locator('#root_environment_replicas_worker_0_index__error')
    ).toHaveCount(0);
    await shot(page, 'light-03-valid');

    // Export shows the YAML of that topology.
    await sidebar(page).locator('.jp-px-export').click();
    const yaml = page.locator('.jp-Dialog textarea.jp-px-yaml');
    await expect(yaml).toHaveValue(/n_workers: 3/);
    await expect(yaml).toHaveValue(/index: 2/);
    await shot(page, 'light-04-export-yaml');
    await page.locator('.jp-Dialog .jp-mod-reject').click();

    // Submit the notebook; the run appears and reaches Succeeded.
    await submitOpenNotebook(page, 'galata flow');
    const row = runRow(page, 'galata flow');
    await shot(page, 'light-05-submitted');
    await expect(row).toHaveAttribute('data-state', 'Succeeded', {
      timeout: 150000
    });
    await expect(row.locator('.jp-px-replicas')).toHaveText('4 replicas');
    await shot(page, 'light-06-succeeded');

    // Logs: a tab per replica.
    await row.locator('.jp-px-action-logs').click();
    const logs = page.locator('.jp-px-panel-logs');
    await expect(logs.locator('.lm-TabBar-tab')).toHaveCount(4);
    await expect(logs.locator('.lm-TabBar-tab')).toHaveText([
      'master-0 · Succeeded',
      'worker-0 · Succeeded',
      'worker-1 · Succeeded',
      'worker-2 · Succeeded'
    ]);
    await logs.locator('.lm-TabBar-tab', { hasText: 'worker-2' }).click();
    await expect(
      logs.locator('.jp-px-log[data-replica="worker-2"] pre')
    ).toContainText('done on worker 2');
    await shot(page, 'light-07-logs');

    // Metrics: one trace per replica.
    await rowAction(row, 'metrics');
    const metrics = page.locator('.jp-px-panel-metrics');
    await expect(
      metrics.locator('.jp-px-plot .scatterlayer .trace')
    ).toHaveCount(4);
    await expect(metrics.locator('.jp-px-metric-select')).toHaveValue('loss');
    await shot(page, 'light-08-metrics');

    // TensorBoard through the server's authenticated TensorBoard route (px/tensorboard/<port>/).
    await rowAction(row, 'tensorboard');
    const frame = page.locator('.jp-px-panel-tensorboard iframe');
    await expect(frame).toHaveAttribute(
      'src',
      /\/px\/tensorboard\/\d+\/(\?darkMode=true)?$/,
      {
        timeout: 150000
      }
    );
    const url = (await frame.getAttribute('src'))!;
    const answer = await page.request.get(url);
    expect(answer.status()).toBe(200);
    expect(await answer.text()).toContain('TensorBoard');
    await expect(
      page.frameLocator('.jp-px-panel-tensorboard iframe').locator('app-header')
    ).toBeVisible({ timeout: 60000 });
    await shot(page, 'light-09-tensorboard');

    // A second run, stopped from the list (with a confirmation).
    // (opened by command: the file browser is not showing while the sidebar is)
    await page.evaluate(async path => {
      await (window as any).jupyterapp.commands.execute('docmanager:open', {
        path
      });
    }, `${tmpPath}/sleep.ipynb`);
    await expect(
      page.locator('.lm-TabBar-tab.lm-mod-current', { hasText: 'sleep.ipynb' })
    ).toBeVisible();
    await openSidebar(page);
    await expect(sidebar(page).locator('.jp-px-notebook')).toHaveText(
      'sleep.ipynb'
    );
    await submitOpenNotebook(page, 'galata stop');
    const second = runRow(page, 'galata stop');
    await expect(second).toHaveAttribute('data-state', 'Running', {
      timeout: 60000
    });
    await rowAction(second, 'stop');
    await shot(page, 'light-10-stop-confirm');
    await page.locator('.jp-Dialog .jp-mod-warn').click();
    await expect(second).toHaveAttribute('data-state', 'Stopped', {
      timeout: 60000
    });
    await shot(page, 'light-11-stopped');
  });

  test('dark theme', async ({ page, tmpPath }) => {
    await page.theme.setDarkTheme();
    await openNewNotebook(page, `${tmpPath}/train-dark.ipynb`, TRAIN);
    await openSidebar(page);
    await sidebar(page)
      .locator('#root_environment_replicas_n_workers')
      .fill('-1');
    await expect(
      sidebar(page).locator('#root_environment_replicas_n_workers__error')
    ).toHaveText('at least 0'); // the bound in the form's words
    await expect(sidebar(page).locator('.jp-px-submit-button')).toBeDisabled();
    await shot(page, 'dark-01-sidebar-bad-value');
    await sidebar(page)
      .locator('#root_environment_replicas_n_workers')
      .fill('3');
    await expect(sidebar(page).locator('.jp-px-verdict')).toContainText(
      '4 replicas'
    );
    await submitOpenNotebook(page, 'galata dark');
    const row = runRow(page, 'galata dark');
    await expect(row).toHaveAttribute('data-state', 'Succeeded', {
      timeout: 150000
    });
    await row.locator('.jp-px-action-logs').click();
    await expect(page.locator('.jp-px-panel-logs .lm-TabBar-tab')).toHaveCount(
      4
    );
    await shot(page, 'dark-02-logs');
    await rowAction(row, 'metrics');
    await expect(
      page.locator('.jp-px-panel-metrics .jp-px-plot .scatterlayer .trace')
    ).toHaveCount(4);
    await shot(page, 'dark-03-metrics');
  });

  test('1,000 stored runs stay responsive', async ({ page }) => {
    await page.theme.setLightTheme();
    // 1,000 finished runs into the server's store; the script answers how many runs the store
    // holds then (these and any other test's), which the list must count.
    const prefix = `bulk-${Date.now().toString(36)}`;
    const total = makeRuns(1000, prefix);
    expect(total).toBeGreaterThanOrEqual(1000);
    await openSidebar(page);
    const rows = sidebar(page).locator('li.jp-px-run');
    await expect(sidebar(page).locator('.jp-px-more')).toContainText(
      `of ${total}`,
      { timeout: 60000 }
    );
    await expect(rows).toHaveCount(100);
    await shot(page, 'light-12-thousand-runs');

    // Browser time to fetch and render 100 more rows, measured in the page.
    const more = sidebar(page).locator('.jp-px-more');
    const started = await page.evaluate(() => performance.now());
    await more.click();
    await expect(rows).toHaveCount(200);
    const elapsed = (await page.evaluate(() => performance.now())) - started;
    // The list stays interactive: a row's action answers at once.
    const clickStarted = await page.evaluate(() => performance.now());
    await rowAction(rows.nth(150), 'copy');
    const clickElapsed =
      (await page.evaluate(() => performance.now())) - clickStarted;
    const report = {
      rows: 200,
      showMoreMs: Math.round(elapsed),
      clickMs: Math.round(clickElapsed)
    };
    fs.writeFileSync(
      path.join(SHOTS, 'thousand-runs.json'),
      JSON.stringify(report, null, 1)
    );
    console.log('1,000 runs:', report);
    expect(elapsed).toBeLessThan(10000);
  });
});
