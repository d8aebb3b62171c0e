/**
 * A Slurm run in the sidebar: the run waits in a real Slurm queue (a cluster started on this
 * machine by slurm_runs.py, behind a run that takes every CPU), and its row says why in Slurm's
 * words (PENDING, reason Resources, its place in the partition's queue) with its replicas, while
 * the run ahead of it shows its replicas running. Screenshot: ui-tests/screenshots/slurm-pending.png.
 *
 * Skipped, with the reason, where Slurm cannot be started (slurm_runs.py says why); CI installs it.
 */
import { expect, galata, test } from './fixtures';
import { ChildProcessWithoutNullStreams, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

const SHOTS = path.join(__dirname, '..', 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

interface IStarted {
  blocker?: string;
  waiting?: string;
  message?: string;
  skip?: string;
}

/** Start slurm_runs.py; its first line of output once the second run waits (or why not). */
function startSlurmRuns(
  prefix: string
): Promise<{ child: ChildProcessWithoutNullStreams; started: IStarted }> {
  const child = spawn(
    process.env.PX_PYTHON || 'python',
    [path.join(__dirname, '..', 'slurm_runs.py'), prefix],
    {
      env: {
        ...process.env,
        PX_HOME: path.join(__dirname, '..', '.px_home')
      }
    }
  );
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr.on('data', data => (err += data.toString()));
    child.stdout.on('data', data => {
      out += data.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n')) {
        resolve({ child, started: JSON.parse(line) as IStarted });
      }
    });
    child.on('exit', code =>
      reject(new Error(`slurm_runs.py exited (${code}): ${err}`))
    );
  });
}

test('a Slurm run waiting in the queue shows its reason and replicas', async ({
  page
}) => {
  test.setTimeout(300 * 1000);
  const prefix = `slurm-${Date.now().toString(36)}`;
  const { child, started } = await startSlurmRuns(prefix);
  try {
    test.skip(!!started.skip, started.skip);
    await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
    const sidebar = page.locator('#jupyter-px-sidebar');
    await sidebar.locator('.jp-px-filter-text').fill(prefix);
    const waiting = sidebar.locator(
      `li.jp-px-run[data-run-id="${started.waiting}"]`
    );
    const blocker = sidebar.locator(
      `li.jp-px-run[data-run-id="${started.blocker}"]`
    );
    await expect(waiting).toBeVisible({ timeout: 60000 });
    await expect(waiting).toHaveAttribute('data-state', 'Pending');
    await expect(waiting.locator('.jp-px-run-message')).toHaveText(
      /^Slurm job \d+ is PENDING in partition debug's queue: 1st of 1 \(Resources\)$/
    );
    await expect(waiting.locator('.jp-px-replicas')).toHaveText('0/2 running');
    await expect(blocker).toHaveAttribute('data-state', 'Running', {
      timeout: 60000
    });
    await expect(blocker.locator('.jp-px-replicas')).toHaveText('3/3 running');
    await expect(blocker.locator('.jp-px-run-message')).toHaveText(
      /^Slurm job \d+ RUNNING on /
    );
    await sidebar.screenshot({ path: path.join(SHOTS, 'slurm-pending.png') });
  } finally {
    child.stdin.end(); // slurm_runs.py stops both runs and the cluster
    await new Promise(resolve => child.on('close', resolve));
  }
});
