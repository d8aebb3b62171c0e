/**
 * The run's live view in the notebook, on a real three-replica run whose worker-1 is three times
 * slower, run once and shown in Light and then Dark (the theme switched live at each look):
 *  - it is the extension's view of the run on the server, so a kernel restart leaves it live (no
 *    frozen "Running" with a Stop that cannot act): the run keeps moving in it until it ends;
 *  - its age ticks ("started 3s ago" counts up, and "ended ... ago" after the end);
 *  - its Logs tab follows a replica's log to the last line;
 *  - the finished run is shown once (no second header, tables or logs from the saved view);
 *  - each rank's pace: the straggler line names worker-1;
 *  - run again with another learning rate, the cell's new run says what changed since the
 *    previous run of the same cell (the code, the param, the loss).
 * Screenshots: ui-tests/screenshots/runview-{light,dark}-*.png.
 */
import { expect, IJupyterLabPageFixture, test } from './fixtures';

import { inEachTheme, notebook, setTheme, shot, openNotebook } from './helpers';

const train = (
  name: string,
  lr: number
) => `%%px_distributed -t three --name ${name}
import os, time
from jupyter_px import tracking
slow = os.environ["PX_TASK_TYPE"] == "worker" and os.environ["PX_TASK_INDEX"] == "1"
lr = ${lr}
tracking.log_params(lr=lr)
for step in range(60):
    time.sleep(0.3 if slow else 0.1)
    print(f"step {step}", flush=True)
    tracking.log_metrics(step=step, total_steps=60, loss=lr / (step + 1))
if os.environ["PX_TASK_TYPE"] == "master":
    done = time.time()
    while not os.path.exists("release"):  # the test lets the run end once it has seen it live
        time.sleep(0.2)
    time.sleep(max(0.0, done + 14 - time.time()))  # it ends with its master: after the slow worker
`;

const cells = (name: string) => [
  '%load_ext jupyter_px',
  '%%px_topology three\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2',
  train(name, 0.4)
];

const card = (page: IJupyterLabPageFixture) =>
  page.locator('.jp-Notebook .jp-Cell').nth(2).locator('.jp-px-run-output');
const host = (page: IJupyterLabPageFixture) =>
  page
    .locator('.jp-Notebook .jp-Cell')
    .nth(2)
    .locator('.jp-px-run-output-host');

async function restartKernel(page: IJupyterLabPageFixture): Promise<void> {
  // What Kernel > Restart Kernel does, without its dialog: the kernel that held the run's
  // monitor is gone, a new one starts.
  await page.evaluate(async () => {
    const context = (window as any).jupyterapp.shell.currentWidget
      .sessionContext;
    // The session's kernel connection, read each time: JupyterLab may dispose the first one it
    // made for the new kernel and hold another.
    const kernel = () => context.session?.kernel;
    const connected = () => kernel()?.connectionStatus === 'connected';
    const waitUpTo = async (ms: number) => {
      for (let waited = 0; !connected() && waited < ms; waited += 500) {
        await new Promise(resolve => setTimeout(resolve, 500));
      }
    };
    // jupyter_server can answer a new kernel's first websocket with a 500 (an AttributeError in
    // its select_subprotocol, jupyter_server#1265), and JupyterLab then stays disconnected from
    // it: reconnect, as the kernel status' "reconnect" does; where even that leaves it
    // disconnected (seen once in CI), start another kernel, as a second restart would.
    for (let restarts = 0; !connected() || restarts === 0; restarts++) {
      if (restarts === 3) {
        throw new Error(
          `the new kernel never connected: ${kernel()?.connectionStatus}`
        );
      }
      const before = kernel()?.id;
      await context.changeKernel({ name: 'python3' }); // the old kernel shut down, a new one
      if (kernel()?.id === before) {
        throw new Error('the kernel was not replaced');
      }
      await waitUpTo(30000);
      for (let tries = 0; !connected() && tries < 3; tries++) {
        const current = kernel();
        if (current && !current.isDisposed) {
          void current.reconnect();
        }
        await waitUpTo(15000);
      }
    }
  });
}

test(`the run's view stays live, ticks, follows its logs and says what changed (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  await setTheme(page, 'light');
  const name = `live-${Date.now().toString(36)}`;
  const file = `${tmpPath}/live.ipynb`;
  await page.contents.uploadContent(notebook(cells(name)), 'text', file);
  await openNotebook(page, file);
  await page.notebook.run();

  const view = card(page);
  await expect(view).toHaveAttribute('data-state', 'Running', {
    timeout: 300000 // a run's start takes minutes on a slow machine beside the pytest workers
  });
  await expect(host(page).locator('.px-run-monitor')).toHaveCount(0); // never the widget here
  const meta = view.locator('.jp-px-run-output-meta');
  await expect(meta).toContainText('started');
  await expect(view.locator('.jp-px-phase-bar')).toBeVisible(); // the server's view is in
  // In seconds, whichever unit it shows ("48s ago", "1m ago"): a loaded machine's poll may
  // first read it past the minute.
  const unit: Record<string, number> = { s: 1, m: 60, h: 3600 };
  const age = async () => {
    const shown = /(\d+)([smh]) ago/.exec((await meta.textContent()) ?? '');
    return shown ? Number(shown[1]) * unit[shown[2]] : -1;
  };
  const first = await age();
  expect(first).toBeGreaterThanOrEqual(0);
  await expect.poll(age, { timeout: 30000 }).toBeGreaterThan(first); // it ticks
  // (The run cannot end before the test lets it: both themes' shots are of the live run.)
  await inEachTheme(page, async theme => {
    await expect(view).toHaveAttribute('data-state', 'Running');
    await view.scrollIntoViewIfNeeded();
    await shot(page, `runview-${theme}-01-live`);
  });

  // The kernel restarts: the view is still the run as the server has it, moving on.
  await restartKernel(page);
  const progress = view.locator('.jp-px-training .jp-px-phase-text');
  await expect(progress).toContainText('step', { timeout: 30000 });
  const before = await progress.textContent();
  if (!before!.includes('step 60/60')) {
    // still moving (on a loaded machine the restart can outlast the steps: then it is at its end)
    await expect(progress).not.toHaveText(before!, { timeout: 20000 });
  }
  await expect(view.locator('.jp-px-output-stop')).toBeVisible(); // Stop works through the server
  await expect(view.locator('.jp-px-straggler')).toContainText(
    /worker-1 is \d+(\.\d)?x slower than the median rank/,
    { timeout: 30000 }
  );
  await inEachTheme(page, async theme => {
    await expect(view.locator('.jp-px-output-stop')).toBeVisible();
    await view.scrollIntoViewIfNeeded();
    await shot(page, `runview-${theme}-02-after-restart`);
  });
  // Seen live after the restart (however long it took on a loaded machine): the run may end.
  await page.contents.uploadContent('', 'text', `${tmpPath}/release`);

  // The Logs tab follows a replica's log to its last line.
  await view.locator('.jp-px-output-tab-logs').click();
  const logs = host(page).locator('.jp-px-run-output-logs');
  await expect(logs).toBeVisible();
  const log = logs.locator('.jp-px-log[data-replica="master-0"]');
  await expect(log.locator('pre')).toContainText('step 59', {
    timeout: 120000
  });
  const scroller = log.locator('.jp-px-log-scroller');
  await inEachTheme(page, async theme => {
    await expect
      .poll(() =>
        scroller.evaluate(
          node => node.scrollHeight - node.scrollTop - node.clientHeight
        )
      )
      .toBeLessThan(4);
    await shot(page, `runview-${theme}-03-logs-follow`);
  });

  // Finished: shown once, ended ... ago ticking.
  await expect(view).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 120000
  });
  await expect(host(page).locator('.jp-px-run-output-head')).toHaveCount(1);
  await expect(host(page).locator('.px-run-final')).toHaveCount(0);
  await expect(meta).toContainText('ended');
  const ended = await age();
  await expect.poll(age, { timeout: 10000 }).toBeGreaterThan(ended); // no poll after the end: the clock

  // Again with another learning rate: what changed since the previous run of this cell.
  // (The cell's text set in its model: typed into the editor, it would be auto-indented.)
  await page.evaluate(
    source => {
      const panel = (window as any).jupyterapp.shell.currentWidget;
      panel.content.widgets[2].model.sharedModel.setSource(source);
    },
    train(name, 0.1)
  );
  await page.notebook.run();
  const changes = card(page).locator('.jp-px-changes');
  await expect(changes).toBeVisible({ timeout: 120000 });
  await expect(changes.locator('summary')).toContainText(
    'Since the last run of this cell'
  );
  await expect(changes.locator('summary')).toContainText('lr 0.4 → 0.1');
  await changes.locator('summary').click();
  await expect(changes.locator('.jp-px-changes-diff')).toContainText(
    '+lr = 0.1'
  );
  await expect(changes.locator('.jp-px-changes-diff')).toContainText(
    '-lr = 0.4'
  );
  await expect(changes.locator('.jp-px-changes-metrics')).toContainText('loss');
  await inEachTheme(page, async theme => {
    await expect(changes.locator('.jp-px-changes-diff')).toBeVisible();
    await card(page).scrollIntoViewIfNeeded();
    await shot(page, `runview-${theme}-04-changed-since`);
  });
  // The second run would wait for a release the test's folder may no longer have once the test
  // ends: stopped, as a user stops a run from its view, so nothing outlives the test. It may also
  // end by itself first, the release still there (in CI, while the themes were looked at): then
  // there is no Stop to press, and the state below says how it ended.
  await card(page)
    .locator('.jp-px-output-stop')
    .click({ timeout: 10000 })
    .catch(() => undefined);
  await expect(card(page)).toHaveAttribute(
    'data-state',
    /^(Stopped|Succeeded)$/,
    { timeout: 60000 }
  );
});
