/**
 * A run row's "⋯" menu stays inside the window, opened once and checked in Light and then Dark
 * (the theme switched live): opened from a row of the sidebar at its default width, every entry
 * is whole (it was cut at the sidebar's edge: "Cop", "Del"); nothing in the sidebar is cut without
 * a tooltip. Screenshots: ui-tests/screenshots/rowmenu-{light,dark}.png.
 */
import { expect, galata, test } from './fixtures';

import { inEachTheme, makeRuns, setTheme, shot, sidebar } from './helpers';

test(`a row's menu opens whole inside the window (Light, then Dark)`, async ({
  page
}) => {
  await setTheme(page, 'light');
  const prefix = `menu-${Date.now().toString(36)}`;
  makeRuns(3, prefix, 'recent');
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  const row = sidebar(page).locator(`li.jp-px-run[data-run-id^="${prefix}"]`);
  await expect(row).toHaveCount(3, { timeout: 60000 });
  await row.first().locator('.jp-px-row-menu').click();
  const menu = sidebar(page).locator('.jp-px-menu');
  await expect(menu).toBeVisible();
  await inEachTheme(page, async theme => {
    await expect(menu).toBeVisible();
    const pane = (await sidebar(page).boundingBox())!;
    const box = (await menu.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(pane.x);
    expect(box.x + box.width).toBeLessThanOrEqual(pane.x + pane.width + 1);
    const items = menu.locator('.jp-px-menu-item');
    expect(await items.count()).toBeGreaterThan(1);
    for (const item of await items.all()) {
      // whole, and not under anything: the topmost element at its middle is the item itself
      const whole = await item.evaluate(node => {
        const rect = node.getBoundingClientRect();
        const top = document.elementFromPoint(
          rect.left + rect.width - 3,
          rect.top + rect.height / 2
        );
        return (
          node.scrollWidth <= node.clientWidth + 1 &&
          rect.right <= window.innerWidth &&
          (top === node || node.contains(top))
        );
      });
      const detail = await item.evaluate(node => {
        const rect = node.getBoundingClientRect();
        const top = document.elementFromPoint(
          rect.left + rect.width - 3,
          rect.top + rect.height / 2
        );
        return `${node.textContent} ${node.scrollWidth}/${node.clientWidth} ${JSON.stringify(rect)} top=${top?.className} w=${window.innerWidth}`;
      });
      expect(whole, detail).toBe(true);
    }
    await shot(page, `rowmenu-${theme}`);
    // Nothing in the sidebar is cut without a tooltip that says it whole.
    const cut = await sidebar(page).evaluate(root =>
      Array.from(root.querySelectorAll<HTMLElement>('*'))
        .filter(node => {
          const style = getComputedStyle(node);
          const clipped =
            node.scrollWidth > node.clientWidth + 1 &&
            (style.textOverflow === 'ellipsis' ||
              node instanceof HTMLInputElement);
          return (
            clipped &&
            node.offsetParent !== null &&
            !node.closest('[title]:not([title=""])')
          );
        })
        .map(node => `${node.tagName}.${node.className}`)
    );
    expect(cut).toEqual([]);
  });
  await page.keyboard.press('Escape');
  await expect(menu).toHaveCount(0);
});
