/**
 * Chaos on purpose from the run's view in the notebook (docs/failures.md, "See recovery work"): a
 * 2-replica run with `termination: {maxRetries: 1}` logs steps; in its Replicas tab, a running
 * replica's "Kill…" asks which signal, SIGKILL ends worker-0 as a crash would, the row says what
 * was signalled, and the run starts its gang again as attempt 2, which finishes: the card says
 * "attempt 2 of 2" and names how attempt 1 ended. A finished run's rows offer no Kill.
 * Screenshots: ui-tests/screenshots/kill-{01-asked,02-restarted}.png.
 */
import { expect, test } from './fixtures';

import { notebook, shot, openNotebook } from './helpers';

const cells = (name: string) => [
  '%load_ext jupyter_px',
  '%%px_topology two\nframework: pytorch\ntermination: {maxRetries: 1}\nenvironment:\n  replicas:\n    n_workers: 1',
  `%%px_distributed -t two --name ${name}
import time
from jupyter_px import tracking
steps = 900 if tracking.get_attempt() == 1 else 3
for i in range(steps):
    tracking.log_metrics(step=i, loss=1.0 / (i + 1))
    time.sleep(0.1)
`
];

test('a replica killed from its row restarts the run as attempt 2', async ({
  page,
  tmpPath
}) => {
  const name = `kill-${Date.now().toString(36)}`;
  const file = `${tmpPath}/kill.ipynb`;
  await page.contents.uploadContent(notebook(cells(name)), 'text', file);
  await openNotebook(page, file);
  await page.notebook.run();

  const cell = page.locator('.jp-Notebook .jp-Cell').nth(2);
  const view = cell.locator('.jp-px-run-output');
  await expect(view).toHaveAttribute('data-state', 'Running', {
    timeout: 300000 // a run's start takes minutes on a slow machine beside the pytest workers
  });
  await view.locator('.jp-px-output-tab-replicas').click();
  const table = cell.locator('.jp-px-run-output-host .jp-px-replica-table');
  const row = table.locator('tr[data-replica="worker-0"]');
  await expect(row.locator('.jp-px-phase-word')).toHaveText('Running', {
    timeout: 60000
  });

  // Asked first: which signal, and what the run will do.
  await row.locator('.jp-px-replica-kill').click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog.locator('.jp-Dialog-header')).toHaveText(
    'Kill worker-0?'
  );
  await expect(dialog.locator('.jp-Dialog-body')).toContainText(
    'with retries left, every replica starts again from its checkpoints'
  );
  await shot(page, 'kill-01-asked');
  await dialog.locator('button', { hasText: 'SIGKILL' }).click();
  await expect(row.locator('.jp-px-replica-kill-said')).toHaveText(
    /^sent SIGKILL to worker-0 of run .+ \(pid \d+\)$/
  );

  // The gang starts again as attempt 2, which finishes.
  await expect(view).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 180000
  });
  const attempts = view.locator('.jp-px-attempts');
  await expect(attempts.locator('.jp-px-attempt-now')).toContainText(
    'attempt 2 of 2'
  );
  await expect(
    attempts.locator('.jp-px-attempt-ended[data-attempt="1"]')
  ).toContainText('worker-0 killed by SIGKILL');
  await expect(table.locator('.jp-px-replica-kill')).toHaveCount(0); // nothing left to kill
  await view.scrollIntoViewIfNeeded();
  await shot(page, 'kill-02-restarted');
});
