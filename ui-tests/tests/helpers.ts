/**
 * What the browser tests about notebooks and the sidebar share: the sidebar and its rows, a
 * notebook written from cell sources, screenshots, and the theme.
 */
import { expect, galata, IJupyterLabPageFixture } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

export const SHOTS = path.join(__dirname, '..', 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

/** A screenshot of the page as `ui-tests/screenshots/<name>.png`. */
export async function shot(
  page: IJupyterLabPageFixture,
  name: string
): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

export async function setTheme(
  page: IJupyterLabPageFixture,
  theme: 'light' | 'dark'
): Promise<void> {
  if (theme === 'dark') {
    await page.theme.setDarkTheme();
  } else {
    await page.theme.setLightTheme();
  }
}

/** A notebook of code cells (nbformat 4.5, the python3 kernel), as its file's text. */
export function notebook(sources: string[]): string {
  return JSON.stringify({
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: {
        name: 'python3',
        display_name: 'Python 3 (ipykernel)',
        language: 'python'
      }
    },
    cells: sources.map((source, i) => ({
      id: `cell-${i}`,
      cell_type: 'code',
      source,
      metadata: {},
      outputs: [],
      execution_count: null
    }))
  });
}

export const sidebar = (page: IJupyterLabPageFixture) =>
  page.locator('#jupyter-px-sidebar');

export const runRow = (page: IJupyterLabPageFixture, name: string) =>
  page.locator('li.jp-px-run', {
    has: page.locator('.jp-px-run-name', { hasText: name })
  });

/** Open the sidebar and its topology form (the one-line summary under the Run button opens it). */
export async function openSidebar(page: IJupyterLabPageFixture): Promise<void> {
  await page.sidebar.openTab('jupyter-px-sidebar' as galata.SidebarTabId);
  const summary = sidebar(page).locator('.jp-px-topology-summary');
  await expect(summary).toBeVisible();
  if ((await summary.getAttribute('aria-expanded')) !== 'true') {
    await summary.click();
  }
  await expect(
    sidebar(page).locator('#root_environment_replicas_n_workers')
  ).toBeVisible();
}

/** Open a file through the document manager (the file browser's double click). */
export async function openPath(
  page: IJupyterLabPageFixture,
  filePath: string
): Promise<void> {
  await page.evaluate(async path => {
    await (window as any).jupyterapp.commands.execute('docmanager:open', {
      path
    });
  }, filePath);
}
