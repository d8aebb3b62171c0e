/**
 * The topology form's problems as drawn at 1400x950, once, each step shown in Light and then Dark
 * (the theme switched live, the layout checked in each): the verdict with a long problem list is
 * whole in the sidebar, in no scroll of its own or of the form; a problem under a card field
 * (Workers "abc") or a field of the opened overrides section is shown once; another notebook made
 * active shows its own verdict at once, no field error of the previous form.
 * Screenshots: ui-tests/screenshots/form-problems-*.png.
 */
import { expect, test } from './fixtures';

import {
  inEachTheme,
  notebook,
  openPath,
  openSidebar,
  setTheme,
  shot,
  sidebar,
  openNotebook
} from './helpers';

test(`the form's problems: whole, once, never stale (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  await page.setViewportSize({ width: 1400, height: 950 });
  await page.reload();
  await setTheme(page, 'light');
  await page.contents.uploadContent(
    notebook(['print("a")']),
    'text',
    `${tmpPath}/a.ipynb`
  );
  await page.contents.uploadContent(
    notebook([
      '%%px_topology\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 2\n',
      'print("b")'
    ]),
    'text',
    `${tmpPath}/b.ipynb`
  );
  await openNotebook(page, `${tmpPath}/a.ipynb`);
  await openSidebar(page);
  const workers = sidebar(page).locator('#root_environment_replicas_n_workers');
  await workers.fill('1');
  // Four overrides, each for a worker that does not exist: four problems no card field shows.
  await sidebar(page).locator('.jp-px-more-settings > summary').click();
  for (let i = 0; i < 4; i++) {
    await sidebar(page).locator("button[title='Add item']").first().click();
    await sidebar(page)
      .locator(`#root_environment_replicas_worker_${i}_index`)
      .fill(String(90 + i));
  }
  const verdict = sidebar(page).locator('.jp-px-verdict');
  // The open section prints each under its index field: the verdict only counts them.
  await expect(verdict).toHaveText('4 problems, under their fields');
  const indexError = sidebar(page).locator(
    '#root_environment_replicas_worker_0_index__error'
  );
  await expect(indexError).toBeVisible();
  const overrideSaid = (await indexError.textContent())!;
  expect(overrideSaid.length).toBeGreaterThan(0);
  expect((await sidebar(page).innerText()).split(overrideSaid).length - 1).toBe(
    1
  );
  // Closed, the section hides them: the verdict lists them.
  await sidebar(page).locator('.jp-px-more-settings > summary').click();
  await expect(verdict).toContainText('4 problems:');
  await expect(verdict.locator('li')).toHaveCount(4);

  // The verdict whole in the sidebar's box, in no scrolling element, in each theme.
  await inEachTheme(page, async theme => {
    const pane = (await sidebar(page).boundingBox())!;
    const box = (await verdict.boundingBox())!;
    expect(box.y).toBeGreaterThanOrEqual(pane.y - 1);
    expect(box.y + box.height).toBeLessThanOrEqual(pane.y + pane.height + 1);
    const scrolls = await verdict.evaluate(node => {
      const found: string[] = [];
      for (
        let up = node.parentElement;
        up && up.id !== 'jupyter-px-sidebar';
        up = up.parentElement
      ) {
        const style = getComputedStyle(up);
        if (
          /(auto|scroll|hidden)/.test(style.overflowY) &&
          up.scrollHeight > up.clientHeight + 1
        ) {
          found.push(up.className);
        }
      }
      return found;
    });
    expect(scrolls).toEqual([]);
    for (const item of await verdict.locator('li').all()) {
      await expect(item).toBeInViewport({ ratio: 1 });
    }
    await shot(page, `form-problems-${theme}-01-whole`);
  });

  // Workers' problem (the server stops at it): under its field, only counted in the verdict.
  await workers.fill('abc');
  await expect(verdict).toHaveText('1 problem, under its field');
  const fieldError = sidebar(page).locator(
    '#root_environment_replicas_n_workers__error'
  );
  await expect(fieldError).toBeVisible();
  const said = (await fieldError.textContent())!;
  expect(said.length).toBeGreaterThan(0);
  await inEachTheme(page, async theme => {
    await expect(fieldError).toBeVisible();
    expect((await sidebar(page).innerText()).split(said).length - 1).toBe(1);
    await shot(page, `form-problems-${theme}-02-once`);
  });

  // Another notebook: its own topology and verdict at once, nothing of a.ipynb's form.
  await openPath(page, `${tmpPath}/b.ipynb`);
  await expect(sidebar(page).locator('.jp-px-loaded-from')).toContainText(
    'b.ipynb'
  );
  await expect(workers).toHaveValue('2');
  await expect(verdict).toContainText('✓');
  await expect(sidebar(page).locator('.jp-px-field-error')).toHaveCount(0);
  await expect(
    sidebar(page).locator('.jp-px-topology-summary .jp-px-valid')
  ).toBeVisible();
  await inEachTheme(page, async theme => {
    await expect(sidebar(page).locator('.jp-px-field-error')).toHaveCount(0);
    await shot(page, `form-problems-${theme}-03-other-notebook`);
  });
});
