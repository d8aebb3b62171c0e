/**
 * A new user's first ten minutes, in headless Chromium against a real JupyterLab and real local
 * runs, Light and Dark: open quickstart.ipynb and the form shows its %%px_topology; Enter in
 * Workers changes nothing else; Run distributed (the accent button) runs the notebook; a run
 * that fails opens its Logs on the failing replica, the card showing the exception's last line.
 * Screenshots of each step go to ui-tests/screenshots/first-*.png.
 */
import {
  expect,
  galata,
  IJupyterLabPageFixture,
  test
} from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

const SHOTS = path.join(__dirname, '..', 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });
const QUICKSTART = fs.readFileSync(
  path.join(__dirname, '..', '..', 'notebooks', 'quickstart.ipynb'),
  'utf-8'
);

async function shot(page: IJupyterLabPageFixture, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `first-${name}.png`) });
}

function notebook(sources: string[]): string {
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
    cells: sources.map((source, i) => ({
      id: `cell-${i}`,
      cell_type: 'code',
      source,
      metadata: {},
      outputs: [],
      execution_count: null
    }))
  });
}

// One worker fails with an exception; the master waits long enough to be outlived.
const FAILING = notebook([
  '%%px_topology broken\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 1',
  `%%px_distributed -t broken
import os, time
print("replica", os.environ["PX_TASK_TYPE"], flush=True)
if os.environ["PX_TASK_TYPE"] == "worker":
    raise ValueError("bad shard 7")
time.sleep(20)
`
]);

const sidebar = (page: IJupyterLabPageFixture) =>
  page.locator('#jupyter-px-sidebar');
const runRow = (page: IJupyterLabPageFixture, name: string) =>
  page.locator('li.jp-px-run', {
    has: page.locator('.jp-px-run-name', { hasText: name })
  });

async function openSidebar(page: IJupyterLabPageFixture): Promise<void> {
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  await expect(
    sidebar(page).locator('#root_environment_replicas_n_workers')
  ).toBeVisible();
}

async function submit(page: IJupyterLabPageFixture, name: string) {
  await sidebar(page).locator('.jp-px-run-name-input').fill(name);
  const button = sidebar(page).locator('.jp-px-submit-button');
  await expect(button).toBeEnabled();
  await expect(button).toHaveClass(/jp-mod-accept/);
  await button.click();
  await expect(runRow(page, name)).toBeVisible({ timeout: 60000 });
  return runRow(page, name);
}

for (const theme of ['light', 'dark'] as const) {
  test(`the first ten minutes (${theme})`, async ({ page, tmpPath }) => {
    if (theme === 'dark') {
      await page.theme.setDarkTheme();
    } else {
      await page.theme.setLightTheme();
    }
    const quickstart = `${tmpPath}/quickstart.ipynb`;
    await page.contents.uploadContent(QUICKSTART, 'text', quickstart);
    await page.notebook.openByPath(quickstart);
    await openSidebar(page);

    // The form shows the notebook's %%px_topology, and says where it came from.
    await expect(sidebar(page).locator('.jp-px-loaded-from')).toHaveText(
      'Topology from quickstart.ipynb, cell 4 (%%px_topology quick)'
    );
    const workers = sidebar(page).locator(
      '#root_environment_replicas_n_workers'
    );
    await expect(workers).toHaveValue('2');
    await expect(sidebar(page).locator('.jp-px-verdict')).toContainText(
      '3 replicas'
    );
    await shot(page, `${theme}-01-quickstart-topology`);

    // Enter in Workers changes nothing else: no empty override, still valid.
    await workers.fill('2');
    await workers.press('Enter');
    await workers.press('Enter');
    await expect(
      sidebar(page).locator('#root_environment_replicas_worker_0_index')
    ).toHaveCount(0);
    await expect(sidebar(page).locator('.jp-px-verdict')).toContainText(
      '3 replicas'
    );
    const run = sidebar(page).locator('.jp-px-submit-button');
    await expect(run).toBeEnabled();
    await expect(run).toHaveClass(/jp-mod-accept/);
    await run.scrollIntoViewIfNeeded();
    await shot(page, `${theme}-02-enter-changes-nothing`);

    if (theme === 'light') {
      // Run distributed on the quickstart: its %%px_distributed cell runs on 3 replicas.
      const row = await submit(page, 'first quickstart');
      await expect(row).toHaveAttribute('data-state', 'Succeeded', {
        timeout: 240000
      });
      await shot(page, `${theme}-03-quickstart-succeeded`);
    }

    // A failing run: the card names the exception, Logs open on the failing replica.
    const failing = `${tmpPath}/failing.ipynb`;
    await page.contents.uploadContent(FAILING, 'text', failing);
    await page.evaluate(async path => {
      await (window as any).jupyterapp.commands.execute('docmanager:open', {
        path
      });
    }, failing);
    await openSidebar(page);
    await expect(sidebar(page).locator('.jp-px-loaded-from')).toHaveText(
      'Topology from failing.ipynb, cell 1 (%%px_topology broken)'
    );
    const row = await submit(page, `first failing ${theme}`);
    await expect(row).toHaveAttribute('data-state', 'Failed', {
      timeout: 120000
    });
    await expect(row.locator('.jp-px-run-failure')).toHaveText(
      'worker 0: ValueError: bad shard 7',
      { timeout: 30000 }
    );
    await shot(page, `${theme}-04-failed-run-card`);
    await row.locator('.jp-px-action-logs').click();
    const logs = page.locator('.jp-px-panel-logs').last();
    await expect(logs.locator('.lm-TabBar-tab.lm-mod-current')).toHaveText(
      'worker 0 · Failed'
    );
    await expect(
      logs.locator('.jp-px-log[data-replica="worker-0"] pre')
    ).toContainText('ValueError: bad shard 7');
    await shot(page, `${theme}-05-logs-on-failing-replica`);
  });
}
