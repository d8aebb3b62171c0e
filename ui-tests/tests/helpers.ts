/**
 * What the browser tests about notebooks and the sidebar share: the sidebar and its rows, a
 * notebook written from cell sources, screenshots, and the theme (each theme in turn, switched
 * live).
 */
import {
  expect,
  galata,
  IJupyterLabPageFixture,
  Locator
} from '@jupyterlab/galata';
import { execFileSync } from 'child_process';
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

export const THEMES = ['light', 'dark'] as const;
export type Theme = (typeof THEMES)[number];

export async function setTheme(
  page: IJupyterLabPageFixture,
  theme: Theme
): Promise<void> {
  if (theme === 'dark') {
    await page.theme.setDarkTheme();
  } else {
    await page.theme.setLightTheme();
  }
}

/**
 * The plots on the page not yet drawn in the current theme (their labels): a plot's text is in
 * the theme's `--jp-ui-font-color1` once it has redrawn for it.
 */
function plotsBehindTheTheme(page: IJupyterLabPageFixture): Promise<string[]> {
  return page.evaluate(() => {
    const text = getComputedStyle(document.body)
      .getPropertyValue('--jp-ui-font-color1')
      .trim();
    return Array.from(document.querySelectorAll('.jp-px-plotly-target'))
      .filter(
        (gd: any) => gd._fullLayout && gd._fullLayout.font?.color !== text
      )
      .map(gd => gd.parentElement?.getAttribute('aria-label') ?? '(a plot)');
  });
}

/**
 * The page as it is, in each theme in turn (Light, then Dark), switched live as a user does from
 * the Settings menu (no reload): `check` asserts what the theme changes and takes that theme's
 * screenshots. Before `check` runs, the body is marked with the theme and every plot on the page
 * has redrawn in it (the views follow a live switch). Ends in Light.
 */
export async function inEachTheme(
  page: IJupyterLabPageFixture,
  check: (theme: Theme) => Promise<void>
): Promise<void> {
  for (const theme of THEMES) {
    await setTheme(page, theme);
    await expect(page.locator('body')).toHaveAttribute(
      'data-jp-theme-light',
      String(theme === 'light')
    );
    await expect
      .poll(() => plotsBehindTheTheme(page), {
        message: `every plot redrawn in ${theme}`,
        timeout: 30000
      })
      .toEqual([]);
    // A frame for plotly to paint what it laid out.
    await page.evaluate(
      () =>
        new Promise(resolve =>
          requestAnimationFrame(() => requestAnimationFrame(resolve))
        )
    );
    await check(theme);
  }
  await setTheme(page, 'light');
}

/**
 * An iframe's page loaded from its `src` as it is now (a theme switch gives TensorBoard's frame a
 * new one: until that page is in, the frame still shows the previous one).
 */
export async function expectFrameLoaded(frame: Locator): Promise<void> {
  await expect
    .poll(
      () =>
        frame.evaluate((node: HTMLIFrameElement) => {
          const doc = node.contentDocument;
          const href = node.contentWindow?.location.href ?? '';
          return (
            doc !== null &&
            doc.readyState === 'complete' &&
            href.split('#')[0] === node.src.split('#')[0]
          );
        }),
      { message: 'the frame shows its page', timeout: 60000 }
    )
    .toBe(true);
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

/**
 * Open a notebook through the document manager and wait until its tab is the active one.
 * Galata's `notebook.openByPath` walks the file browser, which lists a file uploaded through the
 * REST API only at its next refresh: on a loaded machine later than Galata's 15 s.
 */
export async function openNotebook(
  page: IJupyterLabPageFixture,
  filePath: string
): Promise<void> {
  await openPath(page, filePath);
  await expect
    .poll(() => page.notebook.isActive(path.basename(filePath)), {
      timeout: 60000
    })
    .toBe(true);
}

/**
 * `count` finished runs written into the test server's store by make_runs.py (`flags`: `output`
 * for logs and metrics, `recent` to lead the runs list); how many runs the store holds then.
 */
export function makeRuns(
  count: number,
  prefix: string,
  ...flags: ('output' | 'recent')[]
): number {
  const output = execFileSync(
    process.env.PX_PYTHON || 'python',
    [
      path.join(__dirname, '..', 'make_runs.py'),
      String(count),
      prefix,
      ...flags
    ],
    { env: { ...process.env, PX_HOME: path.join(__dirname, '..', '.px_home') } }
  );
  return Number(output.toString().trim());
}

/** A logs view (the sidebar's panel or the run view's tab) opened on the failing replica. */
export async function expectFailingReplicaLog(
  logs: Locator,
  replica: string,
  says: string
): Promise<void> {
  await expect(logs.locator('.lm-TabBar-tab.lm-mod-current')).toHaveText(
    `${replica} · Failed`
  );
  await expect(
    logs.locator(`.jp-px-log[data-replica="${replica}"] pre`)
  ).toContainText(says);
}
