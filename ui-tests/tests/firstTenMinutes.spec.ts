/**
 * A new user's first ten minutes, in headless Chromium against a real JupyterLab and real local
 * runs, once, each step shown in Light and then Dark (the theme switched live): open
 * quickstart.ipynb and the form shows its %%px_topology; Enter in Workers runs the valid form (as
 * Enter submits a form) and changes nothing else; Run distributed (the accent button) runs the
 * notebook; a run that fails opens its Logs on the failing replica, the card showing the
 * exception's last line. Screenshots of each step go to ui-tests/screenshots/first-*.png. The
 * notebook's final view (its TensorBoard, the plot) is finalView.spec.ts.
 */
import { expect, IJupyterLabPageFixture, test } from './fixtures';
import * as fs from 'fs';
import * as path from 'path';

import {
  expectFailingReplicaLog,
  notebook,
  openPath,
  openSidebar,
  inEachTheme,
  runRow,
  setTheme,
  shot as shotAs,
  sidebar,
  openNotebook
} from './helpers';

const QUICKSTART = fs.readFileSync(
  path.join(__dirname, '..', '..', 'notebooks', 'quickstart.ipynb'),
  'utf-8'
);

const shot = (page: IJupyterLabPageFixture, name: string) =>
  shotAs(page, `first-${name}`);

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

async function submit(page: IJupyterLabPageFixture, name: string) {
  await sidebar(page).locator('.jp-px-run-name-input').fill(name);
  const button = sidebar(page).locator('.jp-px-submit-button');
  await expect(button).toBeEnabled();
  await expect(button).toHaveClass(/jp-mod-accept/);
  await button.click();
  await expect(runRow(page, name)).toBeVisible({ timeout: 60000 });
  return runRow(page, name);
}

test(`the first ten minutes (Light, then Dark)`, async ({ page, tmpPath }) => {
  await setTheme(page, 'light');
  const quickstart = `${tmpPath}/quickstart.ipynb`;
  await page.contents.uploadContent(QUICKSTART, 'text', quickstart);
  await openNotebook(page, quickstart);
  await openSidebar(page);

  // The form shows the notebook's %%px_topology, and says where it came from.
  await expect(sidebar(page).locator('.jp-px-loaded-from')).toHaveText(
    'From quickstart.ipynb, cell 4 (%%px_topology quick)'
  );
  const workers = sidebar(page).locator('#root_environment_replicas_n_workers');
  await expect(workers).toHaveValue('2');
  await expect(sidebar(page).locator('.jp-px-verdict')).toContainText(
    '3 replicas'
  );
  await inEachTheme(page, async theme => {
    await shot(page, `${theme}-01-quickstart-topology`);
  });

  // Enter in Workers runs the valid form, as Enter submits a form, and changes nothing else:
  // no empty override, the same three replicas.
  await sidebar(page).locator('.jp-px-run-name-input').fill('by enter');
  await workers.fill('2');
  await workers.press('Enter');
  await expect(runRow(page, 'by enter')).toBeVisible({
    timeout: 60000
  });
  await expect(
    sidebar(page).locator('#root_environment_replicas_worker_0_index')
  ).toHaveCount(0);
  await expect(workers).toHaveValue('2');
  await expect(sidebar(page).locator('.jp-px-verdict')).toContainText(
    '3 replicas'
  );
  const run = sidebar(page).locator('.jp-px-submit-button');
  await expect(run).toBeEnabled();
  await expect(run).toHaveClass(/jp-mod-accept/);
  await inEachTheme(page, async theme => {
    await run.scrollIntoViewIfNeeded();
    await shot(page, `${theme}-02-enter-runs-changes-nothing`);
  });
  await expect(runRow(page, 'by enter')).toHaveCount(1);

  // Run distributed on the quickstart: its %%px_distributed cell runs on 3 replicas.
  const quick = await submit(page, 'first quickstart');
  await expect(quick).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 240000
  });
  await inEachTheme(page, async theme => {
    await shot(page, `${theme}-03-quickstart-succeeded`);
  });

  // A failing run: the card names the exception, Logs open on the failing replica.
  const failing = `${tmpPath}/failing.ipynb`;
  await page.contents.uploadContent(FAILING, 'text', failing);
  await openPath(page, failing);
  await openSidebar(page);
  await expect(sidebar(page).locator('.jp-px-loaded-from')).toHaveText(
    'From failing.ipynb, cell 1 (%%px_topology broken)'
  );
  const row = await submit(page, 'first failing');
  await expect(row).toHaveAttribute('data-state', 'Failed', {
    timeout: 120000
  });
  await expect(row.locator('.jp-px-run-failure')).toHaveText(
    'worker-0: ValueError: bad shard 7', // the sidebar card's own line
    { timeout: 30000 }
  );
  await inEachTheme(page, async theme => {
    await shot(page, `${theme}-04-failed-run-card`);
  });
  await row.locator('.jp-px-action-logs').click();
  const logs = page.locator('.jp-px-panel-logs').last();
  await expectFailingReplicaLog(logs, 'worker-0', 'ValueError: bad shard 7');
  await inEachTheme(page, async theme => {
    await shot(page, `${theme}-05-logs-on-failing-replica`);
  });
});
