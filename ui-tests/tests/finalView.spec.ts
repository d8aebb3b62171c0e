/**
 * The run in the notebook, each scenario run once and shown in Light and then Dark (the theme
 * switched live at each look): a `%%px_distributed` cell shows this extension's view of the run
 * (never the ipywidgets monitor, which serves other front-ends), live and once the run has ended:
 * the run's state, an interactive plotly plot (every replica under the pointer, the log scale), a
 * TensorBoard button that opens the run's TensorBoard as the sidebar does (in the theme's mode,
 * the page again in the other mode when the theme is switched). Saved, closed and opened again,
 * the output still shows the run, read from the server; a failed run names its exception once
 * and opens the failing replica's log. Screenshots: ui-tests/screenshots/final-*.png.
 */
import { expect, IJupyterLabPageFixture, test } from './fixtures';

import {
  expectFailingReplicaLog,
  expectFrameLoaded,
  inEachTheme,
  notebook,
  openPath,
  setTheme,
  shot,
  openNotebook
} from './helpers';

const cells = (name: string) => [
  '%load_ext jupyter_px',
  '%%px_topology tiny\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 1',
  `%%px_distributed -t tiny --name ${name}
import time
from jupyter_px import tracking
for step in range(40):
    tracking.log_metrics(step=step, total_steps=40, loss=1.0 / (step + 1))
    time.sleep(0.15)
`
];

const output = (page: IJupyterLabPageFixture) =>
  page.locator('.jp-Notebook .jp-px-run-output-host').first();

test(`the notebook's run view: its plot, TensorBoard, and reopened (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  await setTheme(page, 'light');
  const name = `final-${Date.now().toString(36)}`;
  const file = `${tmpPath}/final.ipynb`;
  await page.contents.uploadContent(notebook(cells(name)), 'text', file);
  await openNotebook(page, file);
  await page.notebook.run();

  // The output is this extension's view of the run, live and after the end: never the widget.
  const host = output(page);
  const view = host.locator('.jp-px-run-output');
  await expect(view).toBeVisible({ timeout: 60000 });
  await expect(host.locator('.px-run-monitor')).toHaveCount(0);
  await inEachTheme(page, async theme => {
    await shot(page, `final-${theme}-01-live`); // back to back: the run lasts 6 s
  });
  await expect(view).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 180000
  });
  await expect(view.locator('.jp-px-run-output-name')).toHaveText(name);
  const runId = (await view.getAttribute('data-run-id'))!;
  expect(runId).toMatch(new RegExp(`^${name}`));

  // The plot is plotly's, interactive: every replica's value under the pointer.
  const plot = host.locator('.jp-px-run-output-metrics .jp-px-plot');
  await expect(plot).toHaveAttribute('data-state', 'drawn', {
    timeout: 30000
  });
  await expect(host.locator('.jp-px-metric-select')).toHaveValue('loss');
  await expect(plot.locator('.scatterlayer .trace')).toHaveCount(2);
  await inEachTheme(page, async theme => {
    // The pointer brought over the plot again: the redraw in the theme took its hover away.
    await expect(plot.locator('.scatterlayer .trace')).toHaveCount(2);
    await plot.scrollIntoViewIfNeeded();
    const area = (await plot.locator('.nsewdrag').first().boundingBox())!;
    await page.mouse.move(0, 0);
    await page.mouse.move(area.x + area.width / 2, area.y + area.height / 2);
    await expect(plot.locator('.hoverlayer .legend')).toContainText('master-0');
    await shot(page, `final-${theme}-02-final-view-plot-hover`);
  });

  // TensorBoard from the final view: the run's own, in the sidebar's panel.
  await view.locator('.jp-px-output-tensorboard').click();
  const panel = page.locator('.jp-px-panel-tensorboard').last();
  await expect(
    page.locator('.lm-TabBar-tab.lm-mod-current', {
      hasText: `TensorBoard: ${runId}`
    })
  ).toBeVisible();
  await expect(panel.locator('iframe')).toHaveAttribute(
    'src',
    /\/px\/tensorboard\/\d+\/$/,
    { timeout: 150000 }
  );
  await inEachTheme(page, async theme => {
    // In the theme's mode, the page again when the theme is switched.
    await expect(panel.locator('iframe')).toHaveAttribute(
      'src',
      theme === 'dark'
        ? /\/px\/tensorboard\/\d+\/\?darkMode=true$/
        : /\/px\/tensorboard\/\d+\/$/
    );
    await expectFrameLoaded(panel.locator('iframe'));
    await expect(
      page
        .frameLocator('.jp-px-panel-tensorboard iframe')
        .last()
        .locator('body')
    ).toContainText(
      // Its scalars (the replicas' runs), or, before the first event file, its directory.
      new RegExp(`master-0|${runId}/tensorboard`),
      { timeout: 60000 }
    );
    await shot(page, `final-${theme}-03-tensorboard-from-final-view`);
  });

  // Saved and reloaded: the output shows the run as the server has it, not a dead widget.
  await test.step('save, close the notebook, open it again from disk', async () => {
    await page.evaluate(async () => {
      const app = (window as any).jupyterapp;
      for (const widget of Array.from(app.shell.widgets('main')) as any[]) {
        if (widget.context?.path?.endsWith('final.ipynb')) {
          await widget.context.save();
          widget.close();
        }
      }
    });
    await expect(page.locator('.jp-NotebookPanel')).toHaveCount(0);
    await openPath(page, file);
  });
  const again = output(page).locator('.jp-px-run-output');
  await expect(again).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 60000
  });
  await expect(
    output(page).locator(
      '.jp-px-run-output-metrics .jp-px-plot .scatterlayer .trace'
    )
  ).toHaveCount(2, { timeout: 30000 });
  await expect(page.locator('.jp-Notebook')).not.toContainText(
    'model not found'
  );
  await inEachTheme(page, async theme => {
    await expect(
      output(page).locator(
        '.jp-px-run-output-metrics .jp-px-plot .scatterlayer .trace'
      )
    ).toHaveCount(2);
    await again.scrollIntoViewIfNeeded();
    await shot(page, `final-${theme}-04-reopened`);
  });
});

test(`a saved live monitor, reopened after its kernel is gone, shows the run as it is now (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  await setTheme(page, 'light');
  const name = `outlives-${Date.now().toString(36)}`;
  const file = `${tmpPath}/outlives.ipynb`;
  // The run goes on until the test releases it (a file beside the notebook, the replicas'
  // working folder): a run of a fixed length once ended before a loaded machine showed it live.
  const source = cells(name);
  source[2] = `%%px_distributed -t tiny --name ${name}
import os, time
from jupyter_px import tracking
step = 0
while step < 3 or not os.path.exists("release"):
    tracking.log_metrics(step=step, loss=1.0 / (step + 1))
    time.sleep(0.2)
    step += 1
`;
  await page.contents.uploadContent(notebook(source), 'text', file);
  await openNotebook(page, file);
  await page.notebook.run();
  // The kernel's start and the replicas' first imports took over 60 s once, in the
  // project's CI beside four test workers; minutes on a slower machine.
  await expect(output(page).locator('.jp-px-run-output')).toHaveAttribute(
    'data-state',
    'Running',
    { timeout: 300000 }
  );

  // Its kernel goes away while the run runs, then the notebook is saved with the live
  // monitor's output: the run goes on, and nothing will ever replace that output in the file.
  // The kernel first: the project's CI once found the notebook still open 30 s after its
  // close. JupyterLab's close leaves a notebook open only behind "Save your work", for a
  // notebook dirty again after its save: an output the kernel sent after the save (the run's
  // final view, had it ended by then) does that. A kernel that is gone sends nothing more, and
  // a dialog, should one show, is named by the check below.
  await page.evaluate(async () => {
    const app = (window as any).jupyterapp;
    for (const widget of Array.from(app.shell.widgets('main')) as any[]) {
      if (widget.context?.path?.endsWith('outlives.ipynb')) {
        await widget.sessionContext.session?.shutdown();
        await widget.context.save();
        widget.close();
      }
    }
  });
  await expect(page.locator('.jp-Dialog')).toHaveCount(0);
  await expect(page.locator('.jp-NotebookPanel')).toHaveCount(0);
  await openPath(page, file);

  // No "model not found": the run as the server has it, followed until it ends.
  const view = output(page).locator('.jp-px-run-output');
  await expect(view).toBeVisible({ timeout: 60000 });
  await expect(view.locator('.jp-px-run-output-name')).toHaveText(name);
  await expect(output(page).locator('.px-run-monitor')).toHaveCount(0);
  await expect(page.locator('.jp-Notebook')).not.toContainText(
    'model not found'
  );
  await expect(view).toHaveAttribute('data-state', 'Running');
  await inEachTheme(page, async theme => {
    await view.scrollIntoViewIfNeeded();
    await shot(page, `final-${theme}-05-saved-live-monitor-reopened`);
  });
  await page.contents.uploadContent('', 'text', `${tmpPath}/release`);
  await expect(view).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 180000
  });
  await expect(
    output(page).locator('.jp-px-run-output-metrics .jp-px-plot')
  ).toHaveAttribute('data-state', 'drawn', { timeout: 30000 });
  await inEachTheme(page, async theme => {
    await expect(
      output(page).locator('.jp-px-run-output-metrics .jp-px-plot')
    ).toHaveAttribute('data-state', 'drawn');
    await shot(page, `final-${theme}-06-saved-live-monitor-run-ended`);
  });
});

test(`a failed run's final view names the exception and opens the failing replica's log (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  await setTheme(page, 'light');
  const name = `fails-${Date.now().toString(36)}`;
  const file = `${tmpPath}/fails.ipynb`;
  await page.contents.uploadContent(
    notebook([
      '%load_ext jupyter_px',
      '%%px_topology tiny\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 1',
      `%%px_distributed -t tiny --name ${name}
import os, time
print("replica", os.environ["PX_TASK_TYPE"], flush=True)
if os.environ["PX_TASK_TYPE"] == "worker":
  time.sleep(2)
  raise ValueError("bad shard 7")
time.sleep(30)
`
    ]),
    'text',
    file
  );
  await openNotebook(page, file);
  await page.notebook.run();

  const host = output(page);
  const view = host.locator('.jp-px-run-output');
  await expect(view).toHaveAttribute('data-state', 'Failed', {
    timeout: 180000
  });
  await expect(view.locator('.jp-px-run-failure > span')).toHaveText(
    'worker-0: ValueError: bad shard 7',
    { timeout: 30000 }
  );
  // the cell's code raised: the failure offers the cell it came from
  await expect(view.locator('.jp-px-go-to-cell')).toBeVisible();
  // The error once (no second header or saved tables under the card), and the Logs tab open
  // on the failing replica's log.
  await expect(host.locator('.px-run-final')).toHaveCount(0);
  const logs = host.locator('.jp-px-run-output-logs');
  await expectFailingReplicaLog(logs, 'worker-0', 'ValueError: bad shard 7');
  await inEachTheme(page, async theme => {
    await view.scrollIntoViewIfNeeded();
    await shot(page, `final-${theme}-07-failed-run`);
  });

  // Logs from the output: the sidebar's panel, on the failing replica.
  await view.locator('.jp-px-output-logs').click();
  const panel = page.locator('.jp-px-panel-logs').last();
  await expectFailingReplicaLog(panel, 'worker-0', 'ValueError: bad shard 7');
  await inEachTheme(page, async theme => {
    await shot(page, `final-${theme}-08-failed-run-logs`);
  });
});
