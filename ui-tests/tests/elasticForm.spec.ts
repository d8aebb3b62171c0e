/**
 * Elastic workers from the sidebar's form (docs/failures.md): the fewest workers beside the
 * Workers count, the server's problem under Workers while the range is wrong, and the topology
 * exported as torchrun writes it (`n_workers: '2:3'`). The valid form shown in Light, then Dark.
 * Screenshots: ui-tests/screenshots/elastic-form-*.png.
 */
import { expect, test } from './fixtures';

import {
  inEachTheme,
  notebook,
  openSidebar,
  shot,
  sidebar,
  openNotebook
} from './helpers';

test('elastic workers: the fewest workers in the form, the range in the YAML (Light, then Dark)', async ({
  page,
  tmpPath
}) => {
  await page.contents.uploadContent(
    notebook(['print("elastic")']),
    'text',
    `${tmpPath}/elastic.ipynb`
  );
  await openNotebook(page, `${tmpPath}/elastic.ipynb`);
  await openSidebar(page);
  await sidebar(page).locator('#root_framework').selectOption('pytorch');
  await sidebar(page).locator('#root_environment_replicas_n_workers').fill('3');
  await sidebar(page).locator('.jp-px-more-settings > summary').click();
  const fewest = sidebar(page).locator(
    '#root_environment_replicas_min_workers'
  );
  await expect(fewest).toBeVisible();
  await expect(sidebar(page).locator('.jp-px-more-settings')).toContainText(
    'Fewest workers (elastic, PyTorch)'
  );

  // More than the most: the server's problem, under Workers (the field it names).
  await fewest.fill('4');
  const workersError = sidebar(page).locator(
    '#root_environment_replicas_n_workers__error'
  );
  await expect(workersError).toHaveText(
    "'4:3': the minimum must be at least 1 and at most the maximum"
  );
  await expect(sidebar(page).locator('.jp-px-submit-button')).toBeDisabled();

  // Two to three workers: valid.
  await fewest.fill('2');
  await expect(workersError).toHaveCount(0);
  await expect(sidebar(page).locator('.jp-px-submit-button')).toBeEnabled();
  await inEachTheme(page, async theme => {
    await expect(fewest).toHaveValue('2');
    await fewest.scrollIntoViewIfNeeded();
    await shot(page, `elastic-form-${theme}-01-valid`);
  });

  // Exported as it is read: `n_workers: '2:3'`.
  await sidebar(page).locator('.jp-px-export').click();
  const yaml = page.locator('.jp-Dialog textarea.jp-px-yaml');
  await expect(yaml).toHaveValue(/n_workers: '2:3'/);
  await expect(yaml).not.toHaveValue(/min_workers/);
  await page.locator('.jp-Dialog .jp-mod-reject').click();
});
