/**
 * A sweep in the sidebar's runs list, once, each step shown in Light and then Dark (the theme
 * switched live): a finished sweep of four trials (written into the server's store by
 * make_sweep.py, through the sweep store's own code) is one group row with its state, trials done
 * and best value; its trials are not listed on their own; expanded, it shows each trial's run with
 * its values; its menu compares the trials. Screenshots go to
 * ui-tests/screenshots/sweeps-{light,dark}-*.png.
 */
import { expect, galata, IJupyterLabPageFixture, test } from './fixtures';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

import { inEachTheme, setTheme, Theme } from './helpers';

const SHOTS = path.join(__dirname, '..', 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

const sidebar = (page: IJupyterLabPageFixture) =>
  page.locator('#jupyter-px-sidebar');

/** A finished sweep of `trials` trials named `name`; its id. */
function makeSweep(name: string, trials: number): string {
  return execFileSync(
    process.env.PX_PYTHON || 'python',
    [path.join(__dirname, '..', 'make_sweep.py'), name, String(trials)],
    { env: { ...process.env, PX_HOME: path.join(__dirname, '..', '.px_home') } }
  )
    .toString()
    .trim();
}

test(`runs list: a sweep as an expandable group of its trials (Light, then Dark)`, async ({
  page
}) => {
  const shot = (theme: Theme, name: string) =>
    sidebar(page).screenshot({
      path: path.join(SHOTS, `sweeps-${theme}-${name}.png`)
    });
  await setTheme(page, 'light');
  const sweepId = makeSweep(`sw-${Date.now().toString(36)}`, 4);
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  const group = sidebar(page).locator(
    `li.jp-px-sweep[data-sweep-id="${sweepId}"]`
  );
  await expect(group).toBeVisible({ timeout: 60000 });
  await expect(group.locator('.jp-px-badge')).toHaveText('Succeeded');
  await expect(group.locator('.jp-px-sweep-trials')).toHaveText('4/4 done');
  await expect(group.locator('.jp-px-sweep-best')).toHaveText(
    'best loss 0.25 (trial 3)'
  );
  // Collapsed, and no trial listed on its own.
  const trialRows = sidebar(page).locator(
    `li.jp-px-run[data-run-id^="${sweepId}-t"]`
  );
  const toggle = group.locator('.jp-px-sweep-toggle');
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await expect(trialRows).toHaveCount(0);
  await inEachTheme(page, async theme => {
    await expect(group.locator('.jp-px-badge')).toHaveText('Succeeded');
    await group.scrollIntoViewIfNeeded();
    await shot(theme, 'collapsed');
  });

  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-expanded', 'true');
  await expect(group.locator('li.jp-px-run')).toHaveCount(4);
  await expect(trialRows).toHaveCount(4);
  await expect(group.locator('.jp-px-run-detail')).toHaveText([
    'trial 0: lr=0.1, momentum=0 · loss 1',
    'trial 1: lr=0.05, momentum=0.9 · loss 0.5',
    'trial 2: lr=0.0333, momentum=0 · loss 0.3333',
    'trial 3: lr=0.025, momentum=0.9 · loss 0.25'
  ]);
  await inEachTheme(page, async theme => {
    await expect(group.locator('li.jp-px-run')).toHaveCount(4);
    await group.scrollIntoViewIfNeeded();
    await shot(theme, 'expanded');
  });

  // A finished sweep: Compare trials and its tuning views, no Stop; comparing opens the comparison of the four.
  const menu = group.locator(':scope > .jp-px-run-head .jp-px-row-menu');
  await menu.click();
  await expect(
    group.locator(':scope > .jp-px-run-head .jp-px-menu-item')
  ).toHaveText(['Compare trials', 'Tuning views']);
  await inEachTheme(page, async theme => {
    await expect(
      group.locator(':scope > .jp-px-run-head .jp-px-menu-item')
    ).toHaveText(['Compare trials', 'Tuning views']);
    await shot(theme, 'menu');
  });
  await group.locator('.jp-px-action-compare-trials').click();
  await expect(page.locator('.jp-px-compare').last()).toBeVisible({
    timeout: 60000
  });

  await toggle.click();
  await expect(trialRows).toHaveCount(0);
});
