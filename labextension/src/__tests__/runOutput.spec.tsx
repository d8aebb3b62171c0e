/**
 * The run in a notebook output (`output/runOutput.tsx`): in JupyterLab the extension owns the
 * run's live view, kernel or not. It follows the server's view-model (never hands the output to
 * the ipywidgets monitor, which a restarted kernel no longer holds), shows the run once (no
 * second header or table under the card while the run exists), ticks its age, says when it is a
 * snapshot that no longer updates, and keeps what the output saved once the run is deleted.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

import * as api from '../api';
import { RunOutput } from '../output/runOutput';
import { RUN_MIMETYPE } from '../output/runMime';
import { ApiError } from '../request';
import type { IRunViewModel } from '../types';
import './render';

// The server's answers are the boundary.
jest.mock('../api');
const getRunView = api.getRunView as jest.MockedFunction<typeof api.getRunView>;
const getRun = api.getRun as jest.MockedFunction<typeof api.getRun>;
const readMetrics = api.readMetrics as jest.MockedFunction<
  typeof api.readMetrics
>;
const startTensorBoard = api.startTensorBoard as jest.MockedFunction<
  typeof api.startTensorBoard
>;

const WIDGET_MIMETYPE = 'application/vnd.jupyter.widget-view+json';

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

/** The server's view-model of the run (jupyter_px/presentation/view_models.py). */
function view(overrides: Partial<IRunViewModel> = {}): IRunViewModel {
  return {
    run_id: 'quick-1',
    name: 'quick',
    backend: 'local',
    state: 'Running',
    finished: false,
    reason: null,
    message: null,
    owner_problem: null,
    created_at: Date.now() / 1000 - 30,
    started_at: Date.now() / 1000 - 30,
    finished_at: null,
    updated_at: 1001,
    replicas: ['master-0', 'worker-0'].map(key => ({
      key,
      label: key,
      state: 'Running',
      phase: 'Running',
      restarts: 0,
      exit_code: '-',
      resources: '-',
      step: '12/40',
      reason: '',
      last_line: 'step 12'
    })),
    replicas_total: 2,
    phases: [{ phase: 'Running', state: 'Running', count: 2 }],
    counts: '2 running of 2',
    progress: 'step 12/40 (slowest: worker-0)',
    progress_fraction: 0.3,
    rates: [],
    straggler: 'worker-0 is 1.8x slower than the median rank',
    stalled:
      'Stalled: worker-0 (no step for 75 s): `jupyter px stacks quick-1` shows where each rank is',
    failure: null,
    changes: null,
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

  beforeEach(() => {
    getRunView.mockReset();
    getRun.mockReset();
    readMetrics.mockReset();
    startTensorBoard.mockReset();
    getRunView.mockResolvedValue(view());
    readMetrics.mockResolvedValue({
      run_id: 'quick-1',
      finished: false,
      cursor: 'c1',
      progress: {},
      history_pending: false,
      series: {
        'master-0': {
          loss: { steps: [0, 1, 2], values: [1, 0.5, 0.2], times: [0, 1, 2] }
        }
      }
    } as any);
    opened = [];
    output = new RunOutput({
      interval: 60,
      actions: {
        openTensorBoard: runId => opened.push(['tensorboard', runId]),
        openLogs: runId => opened.push(['logs', runId]),
        stopRun: async runId => void opened.push(['stop', runId]),
        goToCell: cellId => opened.push(['cell', cellId])
      },
      createHtmlRenderer: () => {
        const renderer = new Widget() as Widget & IRenderMime.IRenderer;
        renderer.addClass('jp-px-saved-html');
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

  it('follows the server, never the kernel: a live widget in the output is not what it shows', async () => {
    // The live bundle: the ipywidgets monitor (which a restarted kernel no longer holds) and the run.
    await React.act(() =>
      output.renderModel(
        mimeModel({
          [WIDGET_MIMETYPE]: { model_id: 'abc' },
          [RUN_MIMETYPE]: payload()
        })
      )
    );
    expect(output.shows).toBe('run');
    await settle(() => node().querySelector('.jp-px-phase-bar') !== null);
    expect(getRunView).toHaveBeenCalledWith('quick-1');
    expect(node().querySelector('.jp-px-phase-text')!.textContent).toBe(
      '2 running of 2'
    );
    expect(
      node().querySelector('.jp-px-training .jp-px-phase-text')!.textContent
    ).toBe('step 12/40 (slowest: worker-0)');
    expect(node().querySelector('.jp-px-straggler')!.textContent).toBe(
      'worker-0 is 1.8x slower than the median rank'
    );
    expect(node().querySelector('.jp-px-stalled')!.textContent).toBe(
      'Stalled: worker-0 (no step for 75 s): `jupyter px stacks quick-1` shows where each rank is'
    );
    // A Stop that works without the kernel (through the server), asking first.
    expect(node().querySelector('.jp-px-output-stop')).not.toBeNull();
  });

  it('names an unnamed run by its id once, a named one by name and id, and says how it started', async () => {
    getRunView.mockResolvedValue(
      view({ name: null, launch: 'cold: no warm template for torch yet' })
    );
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: payload({ name: null }) }))
    );
    await React.act(
      () => new Promise<void>(resolve => setTimeout(resolve, 20))
    );
    const head = () => node().querySelector('.jp-px-run-output-head')!;
    expect(head().querySelector('.jp-px-run-output-name')!.textContent).toBe(
      'quick-1'
    );
    expect(head().querySelector('.jp-px-run-output-id')).toBeNull();
    expect(head().textContent!.split('quick-1').length - 1).toBe(1);
    expect(head().querySelector('.jp-px-launch')!.textContent).toContain(
      'cold: no warm template for torch yet'
    );
  });

  it('says which attempt runs and how each earlier one ended, and marks where each began on the plot', async () => {
    getRunView.mockResolvedValue(
      view({
        attempt: 'attempt 2 of 3, from step 1',
        attempts: [
          {
            attempt: 1,
            started_at: 100,
            resumed_from: null,
            ended: 'worker-0 killed by SIGKILL at step 2'
          },
          { attempt: 2, started_at: 101.5, resumed_from: 1, ended: '' }
        ]
      })
    );
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: payload() }))
    );
    await settle(() => node().querySelector('.jp-px-attempts') !== null);
    const attempts = node().querySelector('.jp-px-attempts')!;
    expect(attempts.querySelector('.jp-px-attempt-now')!.textContent).toBe(
      'attempt 2 of 3, from step 1'
    );
    expect(
      [...attempts.querySelectorAll('.jp-px-attempt-ended')].map(
        line => line.textContent
      )
    ).toEqual(['attempt 1: worker-0 killed by SIGKILL at step 2']);
    // The plot: a dashed line where attempt 2 resumed (step 1), labelled.
    const figure = () =>
      (node().querySelector('.jp-px-plotly-target') as any)?.__figure;
    await React.act(() => output['_metrics']!.fetch());
    await settle(() => (figure()?.layout.shapes ?? []).length === 1);
    expect(figure().layout.shapes[0]).toMatchObject({
      x0: 1,
      x1: 1,
      line: { dash: 'dash' }
    });
    expect(figure().layout.annotations[0].text).toBe('attempt 2');
  });

  it('ticks the age between reads', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
    try {
      getRunView.mockResolvedValue(view({ created_at: Date.now() / 1000 - 5 }));
      await React.act(() =>
        output.renderModel(mimeModel({ [RUN_MIMETYPE]: payload() }))
      );
      await React.act(async () => {
        await jest.advanceTimersByTimeAsync(100);
      });
      const meta = () =>
        node().querySelector('.jp-px-run-output-meta')!.textContent;
      expect(meta()).toContain('started 5s ago');
      await React.act(async () => {
        await jest.advanceTimersByTimeAsync(10_000);
      });
      expect(meta()).toContain('started 15s ago');
    } finally {
      jest.useRealTimers();
    }
  });

  it('shows a finished run once: no saved header, tables or logs under the card', async () => {
    getRunView.mockResolvedValue(
      view({ state: 'Failed', finished: true, finished_at: 1100 })
    );
    await React.act(() =>
      output.renderModel(
        mimeModel({
          [RUN_MIMETYPE]: payload({ final: true, state: 'Failed' }),
          'text/html':
            "<div class='px-run-final'><b>quick-1</b><table></table>ValueError</div>"
        })
      )
    );
    await settle(() => node().querySelector('.jp-px-phase-bar') !== null);
    expect(node().querySelectorAll('.jp-px-run-output-head')).toHaveLength(1);
    expect(node().querySelector('.jp-px-saved-html')).toBeNull();
    expect(node().querySelector('.jp-px-output-stop')).toBeNull(); // nothing to stop
  });

  it('opens the logs on a failure and offers the failing cell where the run recorded it', async () => {
    getRunView.mockResolvedValue(
      view({
        state: 'Failed',
        finished: true,
        failure: {
          replica: 'worker-0',
          line: 'ValueError: bad lr',
          cell_id: 'cell-7',
          cell_line: 3
        }
      })
    );
    getRun.mockRejectedValue(new Error('not needed here'));
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: payload() }))
    );
    await settle(() => node().querySelector('.jp-px-run-failure') !== null);
    expect(node().querySelector('.jp-px-run-failure')!.textContent).toContain(
      'worker-0: ValueError: bad lr'
    );
    expect(output.tab).toBe('logs');
    React.act(() =>
      (node().querySelector('.jp-px-go-to-cell') as HTMLButtonElement).click()
    );
    expect(opened).toContainEqual(['cell', 'cell-7']);
  });

  it('says plainly that it is a snapshot when the server cannot be reached', async () => {
    getRunView.mockRejectedValue(new ApiError('server unreachable', 503));
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: payload() }))
    );
    await settle(
      () => node().querySelector('.jp-px-run-output-stale') !== null
    );
    expect(
      node().querySelector('.jp-px-run-output-stale')!.textContent
    ).toContain('when the output was saved (Running), not updating');
  });

  it('keeps the same view when the monitor sends its final output, and embeds the TensorBoard it had open', async () => {
    startTensorBoard.mockResolvedValue({
      url: '/px/tensorboard/6006/',
      port: 6006
    } as any);
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: payload() }))
    );
    await settle(() => node().querySelector('.jp-px-phase-bar') !== null);
    const card = node().querySelector('.jp-px-run-output');
    await React.act(() =>
      output.renderModel(
        mimeModel({
          [RUN_MIMETYPE]: payload({ final: true, tensorboard: true })
        })
      )
    );
    expect(node().querySelector('.jp-px-run-output')).toBe(card);
    await settle(
      () =>
        node().querySelector('.jp-px-run-output-tensorboard iframe') !== null
    );
    expect(startTensorBoard).toHaveBeenCalledWith('quick-1', {});
  });

  it('shows what the output saved once the run is deleted, with the state it was saved in', async () => {
    getRunView.mockRejectedValue(new ApiError('no run', 404));
    await React.act(() =>
      output.renderModel(
        mimeModel({
          [RUN_MIMETYPE]: payload({ final: true, state: 'Failed' }),
          'text/html':
            "<div class='px-run-final' data-state='Failed'>ValueError</div>"
        })
      )
    );
    await settle(() => node().querySelector('.jp-px-run-gone') !== null);
    expect(node().querySelector('.jp-px-run-gone')!.textContent).toContain(
      'When this output was saved it was Failed.'
    );
    expect(
      node().querySelector('.jp-px-run-output-saved .px-run-final')!.textContent
    ).toBe('ValueError');
    expect(node().querySelector('.jp-px-output-tensorboard')).toBeNull();
  });

  it('names what is wrong with an output it cannot read', async () => {
    await React.act(() =>
      output.renderModel(mimeModel({ [RUN_MIMETYPE]: { version: 9 } }))
    );
    expect(output.shows).toBe('problem');
    expect(node().textContent).toBe(
      'this output was written by another version of jupyter-px (format 9)'
    );
  });
});
