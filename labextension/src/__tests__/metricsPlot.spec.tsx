import * as React from 'react';

import * as api from '../api';
import { MetricsModel } from '../panels/metricsModel';
import { MetricsPlot } from '../panels/metricsPlot';
import { mount } from './render';

// The server's answer is the boundary: one page of two replicas' loss.
jest.mock('../api');
const readMetrics = api.readMetrics as jest.MockedFunction<
  typeof api.readMetrics
>;

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
          loss: { steps: [0, 10, 20], values: [1, 0.1, 0.01], times: [0, 0, 0] }
        },
        'worker-1': {
          loss: { steps: [0, 10, 20], values: [2, 0.2, 0], times: [0, 0, 0] }
        }
      }
    });
  });

  it('has a grid, a log-scale toggle and a read-out under the pointer', async () => {
    const model = new MetricsModel('run-1', 60, () => true);
    await React.act(() => model.fetch());
    const widget = mount(<MetricsPlot model={model} />);
    const svg = widget.node.querySelector('svg.jp-px-plot')!;
    expect(svg.getAttribute('width')).toBe('100%');
    expect(svg.querySelectorAll('.jp-px-xtick .jp-px-grid-line').length).toBe(
      5
    );
    expect(
      Array.from(svg.querySelectorAll('.jp-px-xtick text')).map(
        t => t.textContent
      )
    ).toEqual(['0', '5', '10', '15', '20']);
    expect(svg.querySelectorAll('.jp-px-ytick .jp-px-grid-line').length).toBe(
      5
    );

    const toggle = widget.node.querySelector(
      '.jp-px-log-scale input'
    ) as HTMLInputElement;
    React.act(() => toggle.click());
    expect(svg.getAttribute('aria-label')).toBe('loss by step (log scale)');
    expect(
      Array.from(svg.querySelectorAll('.jp-px-ytick text')).map(
        t => t.textContent
      )
    ).toEqual(['0.01', '0.1', '1']);
    expect(widget.node.querySelector('.jp-px-log-hidden')!.textContent).toBe(
      '1 point ≤ 0 not shown on a log scale'
    );

    // jsdom lays nothing out: the svg's box is 0 wide, so the pointer's x is in plot units.
    expect(widget.node.querySelector('.jp-px-hover')).toBeNull();
    React.act(() => {
      svg.dispatchEvent(
        new MouseEvent('mousemove', { bubbles: true, clientX: 64 + 250 })
      );
    });
    expect(widget.node.querySelector('.jp-px-hover')!.textContent).toBe(
      'step 10 worker-0: 0.1 worker-1: 0.2'
    );
    expect(widget.node.querySelector('.jp-px-hover-line')).not.toBeNull();
    React.act(() => {
      svg.dispatchEvent(new MouseEvent('mouseout', { bubbles: true }));
    });
    React.act(() => widget.dispose());
    model.dispose();
  });
});
