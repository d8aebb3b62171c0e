/**
 * A real hang, seen from the run's view in the notebook (docs/hangs.md), one run shown in Light
 * and then Dark (the theme switched live at each look): a 3-replica PyTorch job on gloo where
 * rank 2 (worker-1) sleeps before its next all_reduce while the two others wait in theirs (the
 * job of tests/test_stacks.py; the stall floor lowered to 5 s through PX_STALL_AFTER_S in the
 * environment that submits it):
 *  - the replicas are badged Stalled in the Replicas tab (still Running), the badge's tooltip says
 *    since when and the limit, and the card says so;
 *  - each replica's CPU and memory are drawn in the strip;
 *  - "Stacks" shows the replicas grouped by stack: the two in all_reduce together, rank 2 apart
 *    at its sleep, each group's frames under a fold;
 *  - stopped, the run's "Stacks" shows the newest snapshot it kept.
 * Screenshots: ui-tests/screenshots/hang-{light,dark}-{01-stalled,02-stacks,03-kept}.png.
 */
import { expect, IJupyterLabPageFixture, test } from './fixtures';

import { inEachTheme, notebook, setTheme, shot, openNotebook } from './helpers';

const hang = (name: string) => `%%px_distributed -t three --name ${name}
import time
import torch
import torch.distributed as dist
from jupyter_px import tracking
dist.init_process_group("gloo")
rank = dist.get_rank()
def step(value):
    dist.all_reduce(value)
    return value
for i in range(30):
    tracking.log_metrics(step=i, loss=float(step(torch.ones(1))[0]))
    time.sleep(0.05)
if rank == 2:
    time.sleep(900)
step(torch.ones(1))
`;

const cells = (name: string) => [
  // Whoever submits the run sets the stall floor (the local supervisor reads it).
  'import os\nos.environ["PX_STALL_AFTER_S"] = "5"\n%load_ext jupyter_px',
  '%%px_topology three\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2',
  hang(name)
];

const card = (page: IJupyterLabPageFixture) =>
  page.locator('.jp-Notebook .jp-Cell').nth(2).locator('.jp-px-run-output');
const host = (page: IJupyterLabPageFixture) =>
  page
    .locator('.jp-Notebook .jp-Cell')
    .nth(2)
    .locator('.jp-px-run-output-host');

const KEYS = ['master-0', 'worker-0', 'worker-1'];

test(`a hung rank is badged Stalled, its stack stands apart, every rank's CPU is drawn (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  await setTheme(page, 'light');
  const name = `hang-${Date.now().toString(36)}`;
  const file = `${tmpPath}/hang.ipynb`;
  await page.contents.uploadContent(notebook(cells(name)), 'text', file);
  await openNotebook(page, file);
  await page.notebook.run();

  const view = card(page);
  await expect(view).toHaveAttribute('data-state', 'Running', {
    timeout: 300000 // a run's start takes minutes on a slow machine beside the pytest workers
  });

  // Stalled: a badge on each row (beside Running), and the card's notice.
  await view.locator('.jp-px-output-tab-replicas').click();
  const table = host(page).locator('.jp-px-replica-table');
  for (const key of KEYS) {
    await expect(
      table.locator(`tr[data-replica="${key}"] .jp-px-badge-stalled`)
    ).toHaveText('Stalled', { timeout: 180000 });
    await expect(
      table.locator(`tr[data-replica="${key}"] .jp-px-phase-word`)
    ).toHaveText('Running');
  }
  const badge = table.locator(
    'tr[data-replica="worker-1"] .jp-px-badge-stalled'
  );
  await expect(badge).toHaveAttribute(
    'title',
    /^no step logged since .+ \(\d+ s ago\); stalled after 5 s without one/
  );
  await expect(view.locator('.jp-px-stalled')).toContainText(
    'Stalled: master-0 (no step for'
  );

  // The strip: each replica's CPU and memory, drawn.
  const strip = host(page).locator('.jp-px-system-strip');
  for (const key of KEYS) {
    const cell = strip.locator(`.jp-px-system-cell[data-replica="${key}"]`);
    await expect(cell.locator('.jp-px-system-cpu')).toHaveText(/^\d+%$/, {
      timeout: 60000
    });
    await expect(cell.locator('.jp-px-system-mem')).toHaveText(
      /^\d+(\.\d)? (MiB|GiB)$/
    );
    const bar = await cell.locator('.jp-px-system-bar').boundingBox();
    expect(bar?.width ?? 0).toBeGreaterThan(0);
  }
  // (Rank 2 sleeps for 15 minutes: the run is stalled until the test stops it.)
  await inEachTheme(page, async theme => {
    await expect(view.locator('.jp-px-stalled')).toContainText(
      'Stalled: master-0 (no step for'
    );
    await view.scrollIntoViewIfNeeded();
    await shot(page, `hang-${theme}-01-stalled`);
  });

  // Stacks, taken now: rank 2 apart from the two in all_reduce.
  await view.locator('.jp-px-output-stacks').click();
  const stacks = view.locator('.jp-px-stacks');
  await expect(stacks.locator('.jp-px-stacks-head')).toContainText(
    '(on request)',
    { timeout: 60000 }
  );
  const together = stacks.locator(
    '.jp-px-stacks-group[data-replicas="master-0 worker-0"]'
  );
  const apart = stacks.locator('.jp-px-stacks-group[data-replicas="worker-1"]');
  await expect(together.locator(':scope > summary')).toHaveText(
    /^2 replicas \(master-0, worker-0\): all_reduce <- step, cell \[\d+\] line 9$/
  );
  await expect(apart.locator(':scope > summary')).toHaveText(
    /^worker-1: <module>, cell \[\d+\] line 15: time\.sleep\(900\)$/
  );
  await expect(stacks.locator('.jp-px-stacks-group')).toHaveCount(2);
  // A group's frames, folded until opened: innermost first, the user's own in bold.
  const frames = together.locator(':scope > .jp-px-stack-frames > li');
  await expect(frames.first()).toBeHidden();
  await together.locator(':scope > summary').click();
  await expect(frames.first()).toContainText('all_reduce');
  await expect(
    together.locator('.jp-px-stack-frame-user').first()
  ).toContainText(/step, cell \[\d+\] line 9: dist\.all_reduce\(value\)/);
  await inEachTheme(page, async theme => {
    await expect(frames.first()).toContainText('all_reduce'); // still open
    await view.scrollIntoViewIfNeeded();
    await shot(page, `hang-${theme}-02-stacks`);
  });

  // Stopped: nobody left to ask, the newest snapshot kept is what Stacks shows.
  await view.locator('.jp-px-output-stop').click();
  await page.locator('.jp-Dialog .jp-mod-warn').click();
  await expect(view).toHaveAttribute('data-state', 'Stopped', {
    timeout: 120000
  });
  const button = view.locator('.jp-px-output-stacks');
  await expect(button).toHaveAttribute('title', /^Show the newest stacks kept/);
  await button.click();
  await expect(button).toBeEnabled(); // answered
  await expect(view.locator('.jp-px-stacks-error')).toHaveCount(0);
  await expect(stacks.locator('.jp-px-stacks-head')).toContainText(
    '(on request)'
  );
  await expect(
    stacks.locator('.jp-px-stacks-group[data-replicas="worker-1"]')
  ).toContainText('time.sleep(900)');
  await inEachTheme(page, async theme => {
    await view.scrollIntoViewIfNeeded();
    await shot(page, `hang-${theme}-03-kept`);
  });
});
