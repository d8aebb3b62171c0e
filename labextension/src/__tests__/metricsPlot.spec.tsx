import * as React from 'react';

import * as api from '../api';
import { MetricsModel } from '../panels/metricsModel';
import { MetricsPlot, noMetricsText, QUIET_S } from '../panels/metricsPlot';
import { mount } from './render';

// The server's answer is the boundary: one page of two replicas' loss.
jest.mock('../api');
const readMetrics = api.readMetrics as jest.MockedFunction<
  typeof api.readMetrics
>;

/** What the plot handed to plotly.js (jest's stand-in keeps it on the element). */
function figure(node: HTMLElement): any {
  return (node.querySelector('.jp-px-plotly-target') as any)?.__figure;
}

async function settle(until: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !until(); i++) {
    await React.act(
      () => new Promise<void>(resolve => setTimeout(resolve, 10))
    );
  }
  expect(until()).toBe(true);
}

describe('MetricsPlot', () => {
  beforeEach(() => {
    readMetrics.mockReset();
    readMetrics.mockResolvedValue({
      run_id: 'run-1',
      finished: true,
      cursor: 'c1',
      progress: {},
      history_pending: false,
      series: {
        'worker-0': {
          loss: {
            steps: [0, 1, 2, 3],
            values: [10, 1, 0.1, 0.01],
            times: [5, 6, 7, 9]
          }
        },
        'worker-1': {
          loss: {
            steps: [0, 1, 2, 3],
            values: [20, 2, null, 0.02],
            times: [5, 6, 7, 8]
          }
        }
      }
    });
  });

  it('draws a line per replica with plotly, on a log scale where the loss spans decades', async () => {
    const model = new MetricsModel('run-1', 60, () => true); // its poll reads once at once
    const widget = mount(<MetricsPlot model={model} />);
    await settle(() => figure(widget.node) !== undefined);
    const drawn = figure(widget.node);
    expect(drawn.data.map((trace: any) => trace.name)).toEqual([
      'worker-0',
      'worker-1'
    ]);
    expect(drawn.data[1].y).toEqual([20, 2, null, 0.02]); // a gap, never bridged
    // Nothing sends the figure off this machine: plotly.js 4's "Share chart..." (on by default)
    // is off, its button removed, plotly's server URL empty.
    expect(drawn.config).toMatchObject({
      displaylogo: false,
      showSendToCloud: false,
      plotlyServerURL: ''
    });
    expect(drawn.config.modeBarButtonsToRemove).toContain('sendChartToCloud');
    // Integer steps over a short range: ticks at integers (plotly's own would be 0, 0.5, ...).
    expect(drawn.layout.xaxis.dtick).toBe(1);
    // Four decades of loss: a log scale by default, which the toggle turns off.
    expect(drawn.layout.yaxis.type).toBe('log');
    const toggle = widget.node.querySelector(
      '.jp-px-log-scale input'
    ) as HTMLInputElement;
    expect(toggle.checked).toBe(true);
    React.act(() => toggle.click());
    await settle(() => figure(widget.node).layout.yaxis.type === 'linear');
    // The legend under the plot, the plot as wide as its panel; "live" / "run finished" a chip.
    expect(drawn.layout.legend.orientation).toBe('h');
    expect(widget.node.querySelector('.jp-px-plot-status')!.textContent).toBe(
      'run finished'
    );
    expect(
      widget.node.querySelector('.jp-px-plotly')!.getAttribute('data-state')
    ).toBe('drawn');

    // x as the time since the run started.
    const x = widget.node.querySelector('.jp-px-x-select') as HTMLSelectElement;
    React.act(() => {
      x.value = 'relative';
      x.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await settle(
      () =>
        figure(widget.node).layout.xaxis.type === 'linear' &&
        figure(widget.node).data[0].x[3] === 4
    );
    expect(figure(widget.node).layout.xaxis.title.text).toBe(
      'time since the run started (s)'
    );
    React.act(() => widget.dispose());
    model.dispose();
  });
});

describe('before the first metric', () => {
  it('a live run waits for it, and only asks about the code after a quiet minute', async () => {
    readMetrics.mockReset();
    readMetrics.mockResolvedValue({
      run_id: 'run-2',
      finished: false,
      cursor: 'c0',
      progress: {},
      history_pending: false,
      series: {}
    });
    const model = new MetricsModel('run-2', 60, () => true);
    const widget = mount(<MetricsPlot model={model} />);
    await settle(() => readMetrics.mock.calls.length > 0);
    const note = () =>
      widget.node.querySelector('.jp-px-no-metrics')?.textContent ?? '';
    await settle(() => note().length > 0);
    expect(note()).toBe('Waiting for the first metric…'); // its code may still be importing
    expect(note()).not.toContain('log_metrics');
    expect(noMetricsText(false, QUIET_S + 5)).toBe(
      'Waiting for the first metric: none in 65 s. Does the training code call jupyter_px.tracking.log_metrics(step=..., loss=...)?'
    );
    expect(noMetricsText(true, 5)).toContain('This run logged no metrics');
    model.dispose();
    widget.dispose();
  });
});

describe('the system samples that come before the code logs', () => {
  const page = (series: { [metric: string]: number[] }) => ({
    run_id: 'run-3',
    finished: false,
    cursor: 'c',
    progress: {},
    history_pending: false,
    series: {
      'worker-0': Object.fromEntries(
        Object.entries(series).map(([name, values]) => [
          name,
          {
            steps: values.map(() => null),
            values,
            times: values.map((_, i) => 5 + i)
          }
        ])
      )
    }
  });

  it('are never the metric chosen for the user; the code metric is, once it comes', async () => {
    readMetrics.mockReset();
    readMetrics.mockResolvedValueOnce(
      page({ 'system/cpu_percent': [99], 'system/rss_mib': [300] })
    );
    const model = new MetricsModel('run-3', 60, () => true);
    const widget = mount(<MetricsPlot model={model} />);
    const select = () =>
      widget.node.querySelector('.jp-px-metric-select') as HTMLSelectElement;
    const note = () =>
      widget.node.querySelector('.jp-px-no-metrics')?.textContent ?? '';
    await settle(() => note().length > 0);
    // Only the owner's samples so far: the plot still waits for the code's first metric.
    expect(note()).toBe('Waiting for the first metric…');
    expect(figure(widget.node)).toBeUndefined();

    readMetrics.mockResolvedValueOnce(
      page({ accuracy: [0.5], loss: [2.5], 'system/rss_mib': [310] })
    );
    await React.act(() => model.fetch());
    await settle(() => figure(widget.node) !== undefined);
    expect(select().value).toBe('loss');
    expect([...select().options].map(option => option.value)).toEqual([
      'accuracy',
      'loss',
      'system/cpu_percent',
      'system/rss_mib'
    ]);
    expect(figure(widget.node).data[0].y).toEqual([2.5]);

    // A system series the user picks stays picked when more points come.
    React.act(() => {
      select().value = 'system/rss_mib';
      select().dispatchEvent(new Event('change', { bubbles: true }));
    });
    readMetrics.mockResolvedValueOnce(page({ loss: [2.1] }));
    await React.act(() => model.fetch());
    await settle(() => figure(widget.node).data[0].y.length === 2);
    expect(select().value).toBe('system/rss_mib');
    expect(figure(widget.node).data[0].y).toEqual([300, 310]);
    React.act(() => widget.dispose());
    model.dispose();
  });
});
