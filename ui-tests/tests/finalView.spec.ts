/**
 * The run in the notebook, Light and Dark: a `%%px_distributed` cell shows the live monitor (the
 * widget, while the kernel holds it), and once the run has ended its final view: the run's
 * state, the TensorBoard the monitor had open, an interactive metrics plot (a read-out under
 * the pointer, the log scale) and a TensorBoard button that opens the run's TensorBoard as the sidebar does. Saved, closed and
 * opened again, the output still shows the run, read from the server. Screenshots: ui-tests/screenshots/final-*.png.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';

import { notebook, openPath, setTheme, shot } from './helpers';

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

for (const theme of ['light', 'dark'] as const) {
  test(`the notebook's final view keeps TensorBoard and the plot (${theme})`, async ({
    page,
    tmpPath
  }) => {
    await setTheme(page, theme);
    const name = `final-${theme}-${Date.now().toString(36)}`;
    const file = `${tmpPath}/final.ipynb`;
    await page.contents.uploadContent(notebook(cells(name)), 'text', file);
    await page.notebook.openByPath(file);
    await page.notebook.run();

    // While the run runs, the output is the live widget (the run's renderer hands it over).
    const host = output(page);
    await expect(host.locator('.px-run-monitor')).toBeVisible({
      timeout: 60000
    });
    await shot(page, `final-${theme}-01-live-monitor`);
    // The monitor's TensorBoard, opened while the run runs: the final view keeps it.
    await host
      .locator('.px-run-monitor button', { hasText: 'TensorBoard' })
      .click();

    // The run ended: its final view, read from the server.
    const view = host.locator('.jp-px-run-output');
    await expect(view).toHaveAttribute('data-state', 'Succeeded', {
      timeout: 180000
    });
    await expect(host.locator('.px-run-monitor')).toHaveCount(0);
    await expect(view.locator('.jp-px-run-output-name')).toHaveText(name);
    await expect(
      host.locator('.jp-px-run-output-tensorboard iframe')
    ).toHaveAttribute('src', /\/px\/tensorboard\/\d+\/$/, {
      timeout: 150000
    });
    // Under the card, the final view's static HTML (the replicas, the logs), its static plot
    // hidden: the card's plot is the interactive one.
    const kept = host.locator(
      '.jp-px-run-output-static .px-run-final[data-state="Succeeded"]'
    );
    await expect(kept).toBeVisible();
    await expect(kept.locator('svg.px-final-plot').first()).toBeHidden();
    const runId = (await view.getAttribute('data-run-id'))!;
    expect(runId).toMatch(new RegExp(`^${name}`));

    // The plot is the sidebar's, interactive: a read-out of each replica under the pointer.
    const plot = view.locator('svg.jp-px-plot');
    await expect(plot).toBeVisible({ timeout: 30000 });
    await expect(view.locator('.jp-px-metric-select')).toHaveValue('loss');
    await expect(view.locator('.jp-px-legend li')).toHaveCount(2);
    await plot.scrollIntoViewIfNeeded();
    const box = (await plot.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await expect(view.locator('.jp-px-hover')).toContainText('step');
    await expect(view.locator('.jp-px-hover-value')).toHaveCount(2);
    await shot(page, `final-${theme}-02-final-view-plot-hover`);
    await view.locator('.jp-px-log-scale input').check();
    await expect(plot).toHaveAttribute(
      'aria-label',
      'loss by step (log scale)'
    );

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
    await expect(again.locator('svg.jp-px-plot')).toBeVisible({
      timeout: 30000
    });
    await expect(page.locator('.jp-Notebook')).not.toContainText(
      'model not found'
    );
    await again.scrollIntoViewIfNeeded();
    await shot(page, `final-${theme}-04-reopened`);
  });
}

for (const theme of ['light', 'dark'] as const) {
  test(`a saved live monitor, reopened after its kernel is gone, shows the run as it is now (${theme})`, async ({
    page,
    tmpPath
  }) => {
    await setTheme(page, theme);
    const name = `outlives-${theme}-${Date.now().toString(36)}`;
    const file = `${tmpPath}/outlives.ipynb`;
    const source = cells(name);
    source[2] = source[2].replace('time.sleep(0.15)', 'time.sleep(0.4)');
    await page.contents.uploadContent(notebook(source), 'text', file);
    await page.notebook.openByPath(file);
    await page.notebook.run();
    await expect(output(page).locator('.px-run-monitor')).toBeVisible({
      timeout: 60000
    });

    // Saved while the run runs (the live monitor's output), then its kernel goes away: the
    // run goes on, and nothing will ever replace that output in the file.
    await page.evaluate(async () => {
      const app = (window as any).jupyterapp;
      for (const widget of Array.from(app.shell.widgets('main')) as any[]) {
        if (widget.context?.path?.endsWith('outlives.ipynb')) {
          await widget.context.save();
          await widget.sessionContext.session?.shutdown();
          widget.close();
        }
      }
    });
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
    await view.scrollIntoViewIfNeeded();
    await shot(page, `final-${theme}-05-saved-live-monitor-reopened`);
    await expect(view).toHaveAttribute('data-state', 'Succeeded', {
      timeout: 180000
    });
    await expect(view.locator('svg.jp-px-plot')).toBeVisible({
      timeout: 30000
    });
    await shot(page, `final-${theme}-06-saved-live-monitor-run-ended`);
  });
}

for (const theme of ['light', 'dark'] as const) {
  test(`a failed run's final view names the exception and opens the failing replica's log (${theme})`, async ({
    page,
    tmpPath
  }) => {
    await setTheme(page, theme);
    const name = `fails-${theme}-${Date.now().toString(36)}`;
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
    await page.notebook.openByPath(file);
    await page.notebook.run();

    const host = output(page);
    const view = host.locator('.jp-px-run-output');
    await expect(view).toHaveAttribute('data-state', 'Failed', {
      timeout: 180000
    });
    await expect(view.locator('.jp-px-run-failure')).toHaveText(
      'worker 0: ValueError: bad shard 7',
      { timeout: 30000 }
    );
    // The static view under the card: the failing replica's log, open.
    const failing = host.locator(
      '.jp-px-run-output-static details.px-final-log[open]'
    );
    await expect(failing).toHaveAttribute('data-replica', 'worker-0');
    await expect(failing).toContainText('ValueError: bad shard 7');
    await view.scrollIntoViewIfNeeded();
    await shot(page, `final-${theme}-07-failed-run`);

    // Logs from the output: the sidebar's panel, on the failing replica.
    await view.locator('.jp-px-output-logs').click();
    const logs = page.locator('.jp-px-panel-logs').last();
    await expect(logs.locator('.lm-TabBar-tab.lm-mod-current')).toHaveText(
      'worker 0 · Failed'
    );
    await expect(
      logs.locator('.jp-px-log[data-replica="worker-0"] pre')
    ).toContainText('ValueError: bad shard 7');
    await shot(page, `final-${theme}-08-failed-run-logs`);
  });
}
