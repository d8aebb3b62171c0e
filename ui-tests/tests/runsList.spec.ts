/**
 * The runs list's housekeeping in the browser, done once and shown in Light and then Dark at each
 * step (the theme switched live): each row's actions in a "⋯" menu, several runs checked and
 * opened in one TensorBoard (in the theme's mode), one run deleted from its menu, and "Clear
 * finished" removing the finished runs after a confirmation. Screenshots go to
 * ui-tests/screenshots/runs-{light,dark}-*.png.
 *
 * The runs are written into the server's store by make_runs.py (finished, as a backend leaves
 * them); each test uses a prefix of its own.
 */
import { expect, galata, IJupyterLabPageFixture, test } from './fixtures';
import * as fs from 'fs';
import * as path from 'path';

import {
  expectFrameLoaded,
  inEachTheme,
  makeRuns,
  setTheme,
  Theme
} from './helpers';

const SHOTS = path.join(__dirname, '..', 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

const sidebar = (page: IJupyterLabPageFixture) =>
  page.locator('#jupyter-px-sidebar');

test(`runs list: menu, multi-select TensorBoard, delete, clear finished (Light, then Dark)`, async ({
  page
}) => {
  const shot = (theme: Theme, name: string) =>
    page.screenshot({
      path: path.join(SHOTS, `runs-${theme}-${name}.png`)
    });
  await setTheme(page, 'light');
  const prefix = `house-${Date.now().toString(36)}`;
  makeRuns(3, prefix);
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  const row = (n: number) =>
    sidebar(page).locator(`li.jp-px-run[data-run-id="${prefix}-000${n}"]`);
  await expect(row(0)).toBeVisible({ timeout: 60000 });
  await sidebar(page).locator('.jp-px-filter-text').fill(prefix);
  await expect(sidebar(page).locator('li.jp-px-run')).toHaveCount(3);

  // One line of actions: Logs, Metrics, TensorBoard and the menu (this build's, not another's).
  await expect(row(0).locator('.jp-px-run-actions > *')).toHaveCount(4);
  await row(0).locator('.jp-px-row-menu').click();
  await inEachTheme(page, async theme => {
    await expect(row(0).locator('.jp-px-menu .jp-px-menu-item')).toHaveText([
      'Copy id',
      'Delete…'
    ]);
    await shot(theme, '01-row-menu');
  });
  await page.keyboard.press('Escape');
  await expect(row(0).locator('.jp-px-menu')).toHaveCount(0);

  // Two runs checked: one TensorBoard for both.
  await row(0).locator('.jp-px-run-select').check();
  await row(1).locator('.jp-px-run-select').check();
  const bar = sidebar(page).locator('.jp-px-selection');
  await inEachTheme(page, async theme => {
    await expect(bar.locator('.jp-px-selection-count')).toHaveText(
      '2 selected'
    );
    await shot(theme, '02-two-selected');
  });
  await bar.locator('.jp-px-selection-tensorboard').click();
  const panel = page.locator('.jp-px-panel-tensorboard').last();
  // One panel for the two runs (newest first, as listed).
  await expect(
    page.locator('.lm-TabBar-tab.lm-mod-current', {
      hasText: `TensorBoard: ${prefix}-0001, ${prefix}-0000`
    })
  ).toBeVisible();
  const frame = panel.locator('iframe');
  await expect(frame).toHaveAttribute(
    'src',
    /\/px\/tensorboard\/\d+\/(\?darkMode=true)?$/,
    {
      timeout: 150000
    }
  );
  await inEachTheme(page, async theme => {
    // In the theme's mode (the page again when the theme is switched).
    await expect(frame).toHaveAttribute(
      'src',
      theme === 'dark'
        ? /\/px\/tensorboard\/\d+\/\?darkMode=true$/
        : /\/px\/tensorboard\/\d+\/$/
    );
    await expectFrameLoaded(frame);
    const url = (await frame.getAttribute('src'))!;
    // TensorBoard itself was given both runs' directories.
    await expect(
      page
        .frameLocator('.jp-px-panel-tensorboard iframe')
        .last()
        .locator('body')
    ).toContainText(`${prefix}-0000/tensorboard`, { timeout: 60000 });
    await expect(
      page
        .frameLocator('.jp-px-panel-tensorboard iframe')
        .last()
        .locator('body')
    ).toContainText(`${prefix}-0001/tensorboard`);
    expect((await page.request.get(url)).status()).toBe(200);
    await shot(theme, '03-one-tensorboard-two-runs');
  });
  await bar.locator('.jp-px-selection-clear').click();
  await expect(bar).toHaveCount(0);

  // Delete one run from its menu, after the confirmation.
  await row(2).locator('.jp-px-row-menu').click();
  await row(2).locator('.jp-px-menu .jp-px-action-delete').click();
  await inEachTheme(page, async theme => {
    await expect(page.locator('.jp-Dialog')).toContainText(
      `Delete ${prefix} 2?`
    );
    await shot(theme, '04-delete-confirm');
  });
  await page.locator('.jp-Dialog .jp-mod-warn').click();
  await expect(row(2)).toHaveCount(0, { timeout: 30000 });
  await expect(sidebar(page).locator('li.jp-px-run')).toHaveCount(2);

  // Clear finished: every finished run in the store (listed or not), after the confirmation.
  await sidebar(page).locator('.jp-px-clear-finished').click();
  await inEachTheme(page, async theme => {
    await expect(page.locator('.jp-Dialog')).toContainText('finished run');
    await shot(theme, '05-clear-finished-confirm');
  });
  await page.locator('.jp-Dialog .jp-mod-warn').click();
  await expect(sidebar(page).locator('li.jp-px-run')).toHaveCount(0, {
    timeout: 60000
  });
  await inEachTheme(page, async theme => {
    await expect(sidebar(page).locator('li.jp-px-run')).toHaveCount(0);
    await shot(theme, '06-cleared');
  });
  const store = path.join(__dirname, '..', '.px_home', 'runs');
  expect(fs.readdirSync(store).filter(d => d.startsWith(prefix))).toEqual([]);
});
