/**
 * What a tuner looks at, from real sweeps started with `%%px_distributed -t`, run once and shown
 * in Light and then Dark (the theme switched live at each look, every view redrawn in it):
 * a six-trial grid of two params draws the optimization history (each trial and the best so
 * far), the importance bars, the parallel coordinates, the contour and the slices, each read
 * back from plotly's own graph div (`gd.data`, point counts, axis titles); a two-objective
 * sweep of one param draws its Pareto plot with the front marked (checked against the points
 * drawn: no front point dominated, every other point dominated by one), and shows the model's
 * reason where importance and the contour cannot be made. The sidebar's sweep menu opens the
 * same views in a panel. Screenshots: ui-tests/screenshots/sweep-views-{light,dark}-*.png.
 */
import { expect, IJupyterLabPageFixture, Locator, test } from './fixtures';

import {
  inEachTheme,
  notebook,
  setTheme,
  shot,
  sidebar,
  openNotebook
} from './helpers';

const GRID_SWEEP = (name: string) => [
  `%%px_topology views
framework: pytorch
environment:
  replicas:
    n_workers: 0
hptuning:
  concurrency: 3
  metric: {name: loss, optimization: minimize}
  matrix:
    lr: {values: [0.01, 0.03, 0.1]}
    batch: {values: [16, 64]}`,
  `%%px_distributed -t views --name ${name}
from jupyter_px import tracking
for step in range(3):
    tracking.log_metrics(step=step, loss=(lr - 0.03) ** 2 * 1000 + batch / 100 + (2 - step) / 10)
`
];

const PARETO_SWEEP = (name: string) => [
  `%%px_topology two
framework: pytorch
environment:
  replicas:
    n_workers: 0
hptuning:
  concurrency: 3
  metrics:
    - {name: loss, optimization: minimize}
    - {name: throughput, optimization: maximize}
  matrix:
    x: {values: [0, 0.1, 0.4, 0.5, 0.9, 1.0]}`,
  `%%px_distributed -t two --name ${name}
from jupyter_px import tracking
tracking.log_metrics(step=0, loss=(x - 0.3) ** 2, throughput=1 - (x - 0.6) ** 2)
`
];

interface IDrawn {
  traces: {
    type: string;
    name: string;
    points: number;
    dimensions: number[];
    customdata: any[];
    x: number[];
    y: number[];
    rows: number;
  }[];
  titles: { [axis: string]: string };
}

/** What plotly drew in a view: its graph div's data and its axes' titles. */
async function drawn(view: Locator): Promise<IDrawn> {
  const plot = view.locator('.jp-px-plotly[data-state="drawn"]').first();
  await expect(plot).toBeVisible({ timeout: 60000 });
  return plot.locator('.jp-px-plotly-target').evaluate((gd: any) => {
    const titles: { [axis: string]: string } = {};
    for (const [key, value] of Object.entries(gd._fullLayout as object)) {
      if (/^[xy]axis\d*$/.test(key)) {
        titles[key] = (value as any).title?.text ?? '';
      }
    }
    return {
      traces: gd.data.map((t: any) => ({
        type: t.type,
        name: t.name ?? '',
        points: (t.x ?? t.dimensions?.[0]?.values ?? []).length,
        dimensions: (t.dimensions ?? []).map((d: any) => d.values.length),
        customdata: Array.from(t.customdata ?? []),
        x: Array.from(t.x ?? []),
        y: Array.from(t.y ?? []),
        rows: (t.z ?? []).length
      })),
      titles
    };
  });
}

const output = (page: IJupyterLabPageFixture, cell: number) =>
  page
    .locator('.jp-Notebook .jp-Cell')
    .nth(cell)
    .locator('.jp-px-sweep-output');

/** Every view of the six-trial, two-param sweep drawn, with its data. */
async function expectGridViews(root: Locator): Promise<void> {
  await expect(root.locator('.jp-px-sweep-missing')).toHaveCount(0);

  const history = await drawn(root.locator('.jp-px-sweep-history'));
  expect(history.traces.map(t => [t.name, t.points])).toEqual([
    ['loss', 6],
    ['best so far', 6]
  ]);
  const best = history.traces[1].y;
  best.forEach((value, i) =>
    expect(value).toBe(Math.min(...history.traces[0].y.slice(0, i + 1)))
  );
  expect(history.titles.xaxis).toBe('trial');
  expect(history.titles.yaxis).toBe('loss (minimize)');

  const importance = await drawn(root.locator('.jp-px-sweep-importance'));
  expect(importance.traces).toHaveLength(1);
  expect(importance.traces[0].type).toBe('bar');
  expect([...importance.traces[0].y].sort()).toEqual(['batch', 'lr']);
  // the comparison's calculation, labelled as what it is
  expect(importance.titles.xaxis).toBe(
    "share of loss's variance each param alone explains (η²)"
  );

  const parallel = await drawn(root.locator('.jp-px-sweep-parallel'));
  expect(parallel.traces.map(t => t.type)).toEqual(['parcoords']);
  expect(parallel.traces[0].dimensions).toEqual([6, 6, 6]);

  const contour = await drawn(root.locator('.jp-px-sweep-contour'));
  expect(contour.traces.map(t => t.type)).toEqual(['contour', 'scatter']);
  // lr and batch are choices: a row per value of the one on y (3 lrs or 2 batches), nothing
  // interpolated between two values that were never a choice
  expect([2, 3]).toContain(contour.traces[0].rows);
  expect(contour.traces[1].points).toBe(6);
  expect([contour.titles.xaxis, contour.titles.yaxis].sort()).toEqual([
    'batch',
    'lr'
  ]);

  const slices = await drawn(root.locator('.jp-px-sweep-slices'));
  expect(slices.traces.map(t => t.points)).toEqual([6, 6]);
  expect([slices.titles.xaxis, slices.titles.xaxis2].sort()).toEqual([
    'batch',
    'lr'
  ]);
  expect(slices.titles.yaxis).toBe('loss');
  await expect(root.locator('.jp-px-sweep-pareto')).toHaveCount(0);
}

test(`a sweep's tuning views and a Pareto front (Light, then Dark)`, async ({
  page,
  tmpPath
}) => {
  await setTheme(page, 'light');
  const stamp = Date.now().toString(36);
  const file = `${tmpPath}/views.ipynb`;
  await page.contents.uploadContent(
    notebook([
      '%load_ext jupyter_px',
      ...GRID_SWEEP(`views-${stamp}`),
      ...PARETO_SWEEP(`two-${stamp}`)
    ]),
    'text',
    file
  );
  await openNotebook(page, file);
  await page.notebook.run();

  // The grid: six trials of two params, every view drawn once it has succeeded.
  const grid = output(page, 2);
  await expect(grid).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 300000
  });
  await expectGridViews(grid);
  // (Each view's shots in both themes before the next view's: the same place in the notebook.)
  await inEachTheme(page, async theme => {
    await expectGridViews(grid); // redrawn in the theme, every view as it was
    await grid.locator('.jp-px-sweep-views').scrollIntoViewIfNeeded();
    await shot(page, `sweep-views-${theme}-01-grid`);
  });
  await inEachTheme(page, async theme => {
    await grid.locator('.jp-px-sweep-slices').scrollIntoViewIfNeeded();
    await shot(page, `sweep-views-${theme}-02-grid-contour`);
  });

  // Two objectives of one param: the Pareto plot, its front marked; the views that need two
  // params say so, in the model's words.
  const two = output(page, 4);
  await expect(two).toHaveAttribute('data-state', 'Succeeded', {
    timeout: 300000
  });
  const pareto = await drawn(two.locator('.jp-px-sweep-pareto'));
  expect(pareto.traces.map(t => t.name)).toEqual(['trials', 'Pareto front']);
  const [others, front] = pareto.traces;
  expect(others.points + front.points).toBe(6);
  expect(front.points).toBe(2); // x = 0.4 and 0.5
  const at = (t: IDrawn['traces'][0]) => t.x.map((x, i) => [x, t.y[i]]);
  const dominates = (a: number[], b: number[]) =>
    a[0] <= b[0] && a[1] >= b[1] && (a[0] < b[0] || a[1] > b[1]);
  for (const p of at(front)) {
    expect([...at(front), ...at(others)].some(q => dominates(q, p))).toBe(
      false
    );
  }
  for (const p of at(others)) {
    expect(at(front).some(q => dominates(q, p))).toBe(true);
  }
  expect(pareto.titles.xaxis).toBe('loss (min)');
  expect(pareto.titles.yaxis).toBe('throughput (max)');
  await expect(
    two.locator('.jp-px-sweep-pareto .jp-px-sweep-view-title')
  ).toContainText('(2 trials on it)');
  // one param that varies is enough for each param's share of the variance: a plot per objective
  await expect(
    two.locator('.jp-px-sweep-importance .jp-px-sweep-missing')
  ).toHaveCount(0);
  await expect(
    two.locator('.jp-px-sweep-contour .jp-px-sweep-missing')
  ).toContainText(
    'a contour needs three complete trials and two parameters that vary (here 6 and 1)'
  );
  await expect(
    two.locator('.jp-px-sweep-importance .jp-px-plotly')
  ).toHaveCount(2);
  const history = await drawn(two.locator('.jp-px-sweep-history'));
  expect(history.traces.map(t => t.points)).toEqual([6, 6]);
  await inEachTheme(page, async theme => {
    const redrawn = await drawn(two.locator('.jp-px-sweep-pareto'));
    expect(redrawn.traces).toEqual(pareto.traces);
    await two.locator('.jp-px-sweep-pareto').scrollIntoViewIfNeeded();
    await shot(page, `sweep-views-${theme}-03-pareto`);
  });
  await inEachTheme(page, async theme => {
    await two.locator('.jp-px-sweep-contour').scrollIntoViewIfNeeded();
    await shot(page, `sweep-views-${theme}-04-missing`);
  });

  // The sidebar: the grid sweep's menu opens the same views in a panel.
  const sweepId = (await grid.getAttribute('data-sweep-id'))!;
  await page.sidebar.openTab('jupyter-px-sidebar' as any);
  const group = sidebar(page).locator(
    `li.jp-px-sweep[data-sweep-id="${sweepId}"]`
  );
  await group.locator(':scope > .jp-px-run-head .jp-px-row-menu').click();
  await group.locator('.jp-px-action-open-sweep').click();
  const panel = page.locator('.jp-px-panel-sweep');
  await expect(panel).toBeVisible({ timeout: 30000 });
  await expectGridViews(panel);
  await inEachTheme(page, async theme => {
    await expectGridViews(panel);
    await shot(page, `sweep-views-${theme}-05-panel`);
  });
});
