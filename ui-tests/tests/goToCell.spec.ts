/**
 * "Go to cell", one run shown in Light and then Dark (the theme switched live at each look): a
 * cell's code raises on one replica; the run's view in a later cell (`%px_attach`, far below it)
 * says where and offers "Go to cell", which makes the failing cell active, scrolls the notebook to
 * it and puts the cursor on the failing line (line 4 of the cell, counted with its magic line, as
 * the traceback's "cell [n], line 4" does).
 * Screenshots: ui-tests/screenshots/gotocell-{light,dark}-{01-failure,02-at-the-line}.png.
 */
import { expect, test } from './fixtures';

import { inEachTheme, notebook, setTheme, shot, openNotebook } from './helpers';

/** A failing cell: line 4 raises on master-0, then many lines so the cell is tall. */
const failing = (name: string) =>
  [
    `%%px_distributed -t pair --name ${name}`,
    'import os',
    'if os.environ["PX_TASK_TYPE"] == "master":',
    '    raise ValueError("the learning rate is negative")',
    ...Array.from({ length: 40 }, (_, i) => `x${i} = ${i}  # filler`)
  ].join('\n');

/** Tall cells between the failing cell and the view that points back at it. */
const filler = Array.from({ length: 4 }, (_, n) =>
  Array.from({ length: 30 }, (_, i) => `y${n}_${i} = ${i}`).join('\n')
);

test(`"Go to cell" opens the failing cell at its line (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  const name = `gotocell-${Date.now().toString(36)}`;
  const file = `${tmpPath}/gotocell.ipynb`;
  const sources = [
    '%load_ext jupyter_px',
    '%%px_topology pair\nframework: pytorch\nenvironment:\n  replicas:\n    n_workers: 1',
    failing(name),
    ...filler,
    `%px_attach ${name}`
  ];
  await page.contents.uploadContent(notebook(sources), 'text', file);
  await openNotebook(page, file);
  await setTheme(page, 'light');
  await page.notebook.run();

  const last = page.locator('.jp-Notebook .jp-Cell').nth(sources.length - 1);
  const view = last.locator('.jp-px-run-output');
  await view.scrollIntoViewIfNeeded();
  await expect(view).toHaveAttribute('data-state', 'Failed', {
    timeout: 120000
  });
  const failure = view.locator('.jp-px-run-failure');
  await expect(failure).toContainText(
    'ValueError: the learning rate is negative'
  );
  const button = failure.locator('.jp-px-go-to-cell');
  const target = page.locator('.jp-Notebook .jp-Cell').nth(2);
  await inEachTheme(page, async theme => {
    await expect(page.locator('body')).toHaveAttribute(
      'data-jp-theme-light',
      theme === 'light' ? 'true' : 'false'
    );
    await expect(button).toBeVisible();
    await view.scrollIntoViewIfNeeded();
    await expect(target).not.toBeInViewport(); // far above the view that points at it
    await shot(page, `gotocell-${theme}-01-failure`);
  });

  await button.click();
  const line = target.locator('.cm-line', {
    hasText: 'raise ValueError("the learning rate is negative")'
  });
  await inEachTheme(page, async theme => {
    await expect(page.locator('body')).toHaveAttribute(
      'data-jp-theme-light',
      theme === 'light' ? 'true' : 'false'
    );
    await expect(target).toHaveClass(/jp-mod-active/);
    await expect(line).toBeInViewport();
    const cursor = await page.evaluate(() => {
      const panel = (window as any).jupyterapp.shell.currentWidget;
      const editor = panel.content.activeCell.editor;
      return editor.getCursorPosition().line + 1;
    });
    expect(cursor).toBe(4);
    await shot(page, `gotocell-${theme}-02-at-the-line`);
  });
});
