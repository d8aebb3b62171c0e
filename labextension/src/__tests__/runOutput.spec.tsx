import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

import * as api from '../api';
import { RunOutput } from '../output/runOutput';
import { RUN_MIMETYPE, WIDGET_MIMETYPE } from '../output/runMime';
import { ApiError } from '../request';
import type { IRunDetail } from '../types';
import { summary } from './fixtures';
import './render';

// The server's answers are the boundary.
jest.mock('../api');
const getRun = api.getRun as jest.MockedFunction<typeof api.getRun>;
const readMetrics = api.readMetrics as jest.MockedFunction<
  typeof api.readMetrics
>;
const startTensorBoard = api.startTensorBoard as jest.MockedFunction<
  typeof api.startTensorBoard
>;

/** What the run monitor's output holds (jupyter_px/widgets/run_mime.py). */
function payload(overrides: { [key: string]: any } = {}) {
  return {
    version: 1,
    run_id: 'quick-1',
    name: 'quick',
    backend: 'local',
    created_at: 1000,
    state: 'Running',
    finished: false,
    finished_at: null,
    replicas: [
      { key: 'master-0', state: 'Running' },
      { key: 'worker-0', state: 'Running' }
    ],
    final: false,
    tensorboard: false,
    ...overrides
  };
}

function detail(overrides: Partial<IRunDetail> = {}): IRunDetail {
  return {
    ...summary({
      run_id: 'quick-1',
      name: 'quick',
      state: 'Succeeded',
      finished: true,
      finished_at: 1100,
      replicas_total: 2,
      replica_counts: { Succeeded: 2 }
    }),
    replicas: [],
    topology: {},
    code: {
      entrypoint: '',
      language: 'python',
      args: [],
      source: null,
      pushed: []
    },
    workdir: null,
    host: null,
    ...overrides
  };
}

function mimeModel(
  data: { [mime: string]: any },
  trusted = true
): IRenderMime.IMimeModel {
  return { data, metadata: {}, trusted, setData: () => undefined };
}

/** Let the polls answer and React render. */
async function settle(until: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !until(); i++) {
    await React.act(
      () => new Promise<void>(resolve => setTimeout(resolve, 20))
    );
  }
  expect(until()).toBe(true);
}

describe('the run in a notebook output', () => {
  let output: RunOutput;
  let opened: [string, string][];
  let live: Set<string>;
  let widgetRenders: IRenderMime.IMimeModel[];

  beforeEach(() => {
    getRun.mockReset();
    readMetrics.mockReset();
    startTensorBoard.mockReset();
    getRun.mockResolvedValue(detail());
    readMetrics.mockResolvedValue({
      run_id: 'quick-1',
      finished: true,
      cursor: 'c1',
      progress: {},
      history_pending: false,
      series: {
        'master-0': {
          loss: { steps: [0, 1, 2], values: [1, 0.5, 0.2], times: [0, 0, 0] }
        }
      }
    } as any);
    opened = [];
    live = new Set();
    widgetRenders = [];
    output = new RunOutput({
      interval: 60,
      actions: {
        openTensorBoard: runId => opened.push(['tensorboard', runId]),
        openLogs: runId => opened.push(['logs', runId])
      },
      widgetLive: modelId => live.has(modelId),
      createWidgetRenderer: () => {
        const renderer = new Widget() as Widget & IRenderMime.IRenderer;
        renderer.addClass('fake-widget-renderer');
        renderer.renderModel = async model => void widgetRenders.push(model);
        return renderer;
      },
      createHtmlRenderer: () => {
        const renderer = new Widget() as Widget & IRenderMime.IRenderer;
        renderer.renderModel = async model => {
          renderer.node.innerHTML = String(model.data['text/html']);
        };
        return renderer;
      }
    });
    React.act(() => {
      Widget.attach(output, document.body);
      MessageLoop.sendMessage(output, Widget.Msg.UpdateRequest);
    });
  });

  afterEach(() => {
    React.act(() => output.dispose());
  });

  const node = () => output.node;

  it('shows the run as the server knows it now, with TensorBoard, Logs and an interactive plot', async () => {
    // Saved while running; the run has since succeeded.
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: payload() }))
    );
    expect(output.shows).toBe('run');
    await settle(
      () =>
        node()
          .querySelector('.jp-px-run-output')
          ?.getAttribute('data-state') === 'Succeeded' &&
        node().querySelector('svg.jp-px-plot') !== null
    );
    expect(getRun).toHaveBeenCalledWith('quick-1');
    expect(node().querySelector('.jp-px-run-output-name')!.textContent).toBe(
      'quick'
    );
    expect(node().querySelector('.jp-px-badge')!.textContent).toBe('Succeeded');
    expect(node().textContent).toContain('2 replicas');
    // The sidebar's plot: a metric picker, log scale, a read-out under the pointer.
    expect(node().querySelector('.jp-px-metric-select')).not.toBeNull();
    expect(node().querySelector('.jp-px-log-scale input')).not.toBeNull();
    expect(
      node().querySelector('.jp-px-trace[data-replica="master-0"]')
    ).not.toBeNull();
    React.act(() =>
      (node().querySelector('.jp-px-output-tensorboard') as HTMLElement).click()
    );
    React.act(() =>
      (node().querySelector('.jp-px-output-logs') as HTMLElement).click()
    );
    expect(opened).toEqual([
      ['tensorboard', 'quick-1'],
      ['logs', 'quick-1']
    ]);
    expect(startTensorBoard).not.toHaveBeenCalled(); // not open in the monitor: a button only
  });

  it('embeds the TensorBoard the monitor had open', async () => {
    startTensorBoard.mockResolvedValue({
      url: '/px/tensorboard/6006/',
      port: 6006
    } as any);
    await React.act(() =>
      output.renderModel(
        mimeModel({
          [RUN_MIMETYPE]: payload({ final: true, tensorboard: true }),
          'text/html': '<div>static</div>'
        })
      )
    );
    await settle(
      () =>
        node().querySelector('.jp-px-run-output-tensorboard iframe') !== null
    );
    expect(startTensorBoard).toHaveBeenCalledWith('quick-1', {});
    expect(
      (
        node().querySelector(
          '.jp-px-run-output-tensorboard .jp-IFrame'
        ) as HTMLElement
      ).dataset.url
    ).toBe('/px/tensorboard/6006/');
  });

  it('embeds TensorBoard when the final view comes again with it (opened as the run ended)', async () => {
    startTensorBoard.mockResolvedValue({
      url: '/px/tensorboard/6006/',
      port: 6006
    } as any);
    const final = (tensorboard: boolean) =>
      mimeModel({ [RUN_MIMETYPE]: payload({ final: true, tensorboard }) });
    await React.act(() => output.renderModel(final(false)));
    await React.act(() => output.renderModel(final(false)));
    expect(startTensorBoard).not.toHaveBeenCalled();
    await React.act(() => output.renderModel(final(true)));
    await settle(
      () =>
        node().querySelector('.jp-px-run-output-tensorboard iframe') !== null
    );
    expect(node().querySelectorAll('.jp-px-run-output')).toHaveLength(1);
  });

  it("keeps the final view's static HTML under the card, also once the run is deleted", async () => {
    getRun.mockRejectedValue(new ApiError('no run', 404));
    await React.act(() =>
      output.renderModel(
        mimeModel({
          [RUN_MIMETYPE]: payload({ final: true, state: 'Failed' }),
          'text/html':
            "<div class='px-run-final' data-state='Failed'><details class='px-final-log' open>ValueError</details></div>"
        })
      )
    );
    await settle(() => node().querySelector('.jp-px-run-gone') !== null);
    const kept = node().querySelector(
      '.jp-px-run-output-static .px-run-final[data-state="Failed"]'
    );
    expect(kept?.textContent).toBe('ValueError');
    // The card comes first, the static view under it.
    expect(
      node()
        .querySelector('.jp-px-run-output')!
        .compareDocumentPosition(kept!) & Node.DOCUMENT_POSITION_FOLLOWING
    ).toBeTruthy();
  });

  it('says so, instead of an empty plot, when a finished run logged no metrics', async () => {
    readMetrics.mockResolvedValue({
      run_id: 'quick-1',
      finished: true,
      cursor: 'c1',
      progress: {},
      history_pending: false,
      series: {}
    } as any);
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: payload() }))
    );
    await settle(
      () => node().querySelector('.jp-px-run-output-no-metrics') !== null
    );
    expect(node().querySelector('.jp-px-metric-select')).toBeNull();
  });

  it('says when the run no longer exists, with the state it was saved in', async () => {
    getRun.mockRejectedValue(new ApiError('no run', 404));
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: payload() }))
    );
    await settle(() => node().querySelector('.jp-px-run-gone') !== null);
    expect(node().querySelector('.jp-px-run-gone')!.textContent).toBe(
      'Run quick-1 no longer exists: it was deleted, or its directory removed. ' +
        'When this output was saved it was Running.'
    );
    expect(node().querySelector('svg.jp-px-plot')).toBeNull();
    expect(node().querySelector('.jp-px-output-tensorboard')).toBeNull();
  });

  it("shows the live widget while the notebook's kernel holds it, then the run once it ended", async () => {
    const widgetData = { model_id: 'abc', version_major: 2, version_minor: 0 };
    live.add('abc');
    const liveBundle = mimeModel({
      [RUN_MIMETYPE]: payload(),
      [WIDGET_MIMETYPE]: widgetData,
      'text/plain': '<RunMonitor quick-1: live monitor>'
    });
    await React.act(() => output.renderModel(liveBundle));
    expect(output.shows).toBe('widget');
    expect(node().querySelector('.fake-widget-renderer')).not.toBeNull();
    expect(widgetRenders).toEqual([liveBundle]);
    expect(getRun).not.toHaveBeenCalled();

    // The final view replaces the output (same display id): the run, read from the server.
    await React.act(() =>
      output.renderModel(
        mimeModel({
          [RUN_MIMETYPE]: payload({ final: true, state: 'Succeeded' })
        })
      )
    );
    expect(output.shows).toBe('run');
    expect(node().querySelector('.fake-widget-renderer')).toBeNull();
    await settle(() => getRun.mock.calls.length > 0);
  });

  it('never hands an untrusted output to the widget, nor a widget its kernel no longer holds', async () => {
    const widgetData = { model_id: 'abc', version_major: 2, version_minor: 0 };
    live.add('abc');
    await React.act(() =>
      output.renderModel(
        mimeModel(
          { [RUN_MIMETYPE]: payload(), [WIDGET_MIMETYPE]: widgetData },
          false
        )
      )
    );
    expect(output.shows).toBe('run');
    live.clear();
    await React.act(() =>
      output.renderModel(
        mimeModel({ [RUN_MIMETYPE]: payload(), [WIDGET_MIMETYPE]: widgetData })
      )
    );
    expect(output.shows).toBe('run'); // "model not found" is never shown
    expect(widgetRenders).toEqual([]);
  });

  it('names what is wrong with an output it cannot read', async () => {
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: { version: 7 } }))
    );
    expect(output.shows).toBe('problem');
    expect(node().textContent).toBe(
      'this output was written by another version of jupyter-px (format 7)'
    );
  });
});
