/**
 * The file browser's "Run distributed" on a .py, once, each step shown in Light and then Dark (the
 * theme switched live): a dialog asks first (the run's name defaulting to the file's stem, the
 * topology it runs with), and Cancel submits nothing; Run submits under that name. The sidebar's
 * run-name field stays inside the pane (in each theme). Screenshots go to
 * ui-tests/screenshots/runfile-{light,dark}-*.png.
 */
import { expect, galata, IJupyterLabPageFixture, test } from './fixtures';
import * as fs from 'fs';
import * as path from 'path';

import { inEachTheme, setTheme, Theme } from './helpers';

const SHOTS = path.join(__dirname, '..', 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

const SCRIPT =
  'print("hello from", __import__("os").environ["PX_TASK_TYPE"])\n';

const sidebar = (page: IJupyterLabPageFixture) =>
  page.locator('#jupyter-px-sidebar');

test(`Run distributed on a .py asks first (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  const shot = (theme: Theme, name: string) =>
    page.screenshot({
      path: path.join(SHOTS, `runfile-${theme}-${name}.png`)
    });
  await setTheme(page, 'light');
  const stem = `mnist_${Date.now().toString(36)}`;
  await page.contents.uploadContent(SCRIPT, 'text', `${tmpPath}/${stem}.py`);

  // The sidebar's run-name field fits its pane.
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  const input = sidebar(page).locator('.jp-px-run-name-input');
  await expect(input).toBeVisible();
  await inEachTheme(page, async theme => {
    const pane = (await sidebar(page).locator('.jp-px-run-bar').boundingBox())!;
    const box = (await input.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(pane.x + pane.width);
    await shot(theme, '01-sidebar-run-name-fits');
  });

  // The test's folder, by the file browser's own command: galata's `filebrowser.openDirectory`
  // clicks the home crumb and then waits, with no deadline, to see it taken; on a loaded CI
  // machine that wait once took the test's whole 10 minutes.
  await page.sidebar.openTab('filebrowser');
  await page.evaluate(async (folder: string) => {
    await (window as any).jupyterapp.commands.execute(
      'filebrowser:go-to-path',
      {
        path: folder
      }
    );
  }, tmpPath);
  const item = page.locator('.jp-DirListing-item', {
    hasText: `${stem}.py`
  });
  await expect(item).toBeVisible({ timeout: 60000 });
  const runFile = async () => {
    await item.click({ button: 'right' });
    await page.locator('.lm-Menu-item', { hasText: 'Run distributed' }).click();
    await expect(page.locator('.jp-Dialog .jp-px-run-file')).toBeVisible();
  };

  // Cancel: nothing is submitted.
  await runFile();
  await expect(page.locator('.jp-px-run-file-name')).toHaveValue(stem);
  await expect(page.locator('.jp-px-run-file-summary')).toContainText(
    'pytorch'
  );
  await inEachTheme(page, async theme => {
    await expect(page.locator('.jp-Dialog .jp-px-run-file')).toBeVisible();
    await expect(page.locator('.jp-px-run-file-name')).toHaveValue(stem);
    await shot(theme, '02-run-file-dialog');
  });
  await page.locator('.jp-Dialog .jp-mod-reject').click();
  await expect(page.locator('.jp-Dialog')).toHaveCount(0);

  // Run: submitted under the file's stem.
  await runFile();
  await page.locator('.jp-Dialog .jp-mod-accept').click();
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  const row = sidebar(page).locator('li.jp-px-run', {
    has: page.locator('.jp-px-run-name', { hasText: stem })
  });
  await expect(row).toHaveCount(1, { timeout: 60000 });
  await expect(row).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 150000
  });
  await inEachTheme(page, async theme => {
    await shot(theme, '03-submitted-under-the-stem');
  });
});
