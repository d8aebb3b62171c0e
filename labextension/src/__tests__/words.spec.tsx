/**
 * Words and signals: a bound said as a person says it, runs of one name told apart, the run
 * named after its notebook, the replicas bar's waiting color while replicas start, TensorBoard
 * in the theme's mode, and row actions in view rather than behind the menu.
 */
import * as React from 'react';

import { notebookRunName } from '../commands/submit';
import { PhaseBar } from '../output/runOutputView';
import { tensorBoardPage } from '../panels/tensorBoardView';
import { problemLines } from '../problemText';
import { RunRow, shortId } from '../sidebar/runRow';
import { summary } from './fixtures';
import { actions, mount } from './render';

describe('words and signals', () => {
  it('says a bound as "at least", not in the schema\'s words', () => {
    expect(
      problemLines([
        { path: 'environment.replicas.n_workers', message: '-2 is not >= 0' }
      ])
    ).toEqual(['Workers: at least 0']);
    expect(
      problemLines([
        {
          path: 'environment.replicas.n_ps',
          message: '20000 is above the maximum (10000)'
        }
      ])
    ).toEqual(['Parameter servers: at most 10000']);
  });

  it('tells four runs named alike apart by the end of their ids', () => {
    const ids = [
      'long-one-3f2a1c',
      'long-one-77be01',
      'long-one-aa0011',
      'long-one-c0ffee'
    ];
    expect(
      ids.map(run_id => shortId(summary({ run_id, name: 'long-one' })))
    ).toEqual(['3f2a1c', '77be01', 'aa0011', 'c0ffee']);
    const widget = mount(
      <ul>
        <RunRow
          run={summary({ run_id: 'long-one-3f2a1c', name: 'long-one' })}
          progress={null}
          actions={actions()}
        />
      </ul>
    );
    expect(widget.node.querySelector('.jp-px-run-short-id')!.textContent).toBe(
      '3f2a1c'
    );
    // Metrics and TensorBoard are on the row, not behind "⋯".
    expect(
      widget.node.querySelector('.jp-px-run-actions > .jp-px-action-metrics')
    ).not.toBeNull();
    expect(
      widget.node.querySelector(
        '.jp-px-run-actions > .jp-px-action-tensorboard'
      )
    ).not.toBeNull();
    React.act(() => widget.dispose());
  });

  it('names a run submitted from the sidebar after its notebook', () => {
    expect(notebookRunName('work/ux.ipynb')).toBe('ux');
    expect(notebookRunName('train.IPYNB')).toBe('train');
  });

  it('draws replicas still starting in the waiting color: a full bar of them is not done', () => {
    const widget = mount(
      <PhaseBar
        view={
          {
            replicas_total: 3,
            counts: '3 starting of 3',
            phases: [{ phase: 'starting', state: 'Pending', count: 3 }]
          } as any
        }
      />
    );
    const segment = widget.node.querySelector('.jp-px-phase') as HTMLElement;
    expect(segment.className).toContain('jp-px-phase-pending');
    expect(segment.className).not.toContain('running');
    expect(widget.node.querySelector('.jp-px-phase-text')!.textContent).toBe(
      '3 starting of 3'
    );
    React.act(() => widget.dispose());
  });

  it("opens TensorBoard in the theme's mode", () => {
    expect(tensorBoardPage('/px/tensorboard/6006/', true)).toBe(
      '/px/tensorboard/6006/?darkMode=true'
    );
    expect(tensorBoardPage('/px/tensorboard/6006/', false)).toBe(
      '/px/tensorboard/6006/'
    );
  });
});
