import { Dialog, showDialog } from '@jupyterlab/apputils';
import * as React from 'react';

import { formatAge, progressFraction, stateBadge } from '../runs';
import type { RunsModel } from '../runsModel';
import {
  bestText,
  ITrialRun,
  trialRunIds,
  trialText,
  trialsText
} from '../sweepGroups';
import type { ISweep } from '../types';
import type { ISidebarActions } from './actions';
import { IRowMenuItem, RowMenu } from './rowMenu';
import { RunRow } from './runRow';

const FINISHED = new Set(['Succeeded', 'Failed', 'Stopped']);

/**
 * A sweep in the runs list: its name, state, trials done and best value, and, expanded, its
 * trials' runs (rows as any run's, each with its values). Its menu compares its trials (where a
 * comparison view is installed), opens its tuning views, and stops it.
 */
export function SweepGroup(props: {
  sweep: ISweep;
  trials: ITrialRun[];
  model: RunsModel;
  actions: ISidebarActions;
  expanded: boolean;
  onExpand: (expanded: boolean) => void;
  now?: number;
  chosen: ReadonlySet<string>;
  choose: (runId: string, on: boolean) => void;
}): JSX.Element {
  const { sweep, trials, model, actions, expanded, now } = props;
  const label = sweep.name ?? sweep.sweep_id;
  const badge = stateBadge(sweep.state);
  const best = bestText(sweep);
  const stop = async () => {
    const answer = await showDialog({
      title: 'Stop sweep?',
      body: `Stop ${label} (${sweep.sweep_id})? Its running trials are stopped, and no new ones start.`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Stop' })]
    });
    if (answer.button.accept) {
      await actions.stopSweep(sweep.sweep_id);
    }
  };
  const compare = actions.compareRuns;
  const runIds = trialRunIds(sweep);
  const items: IRowMenuItem[] = [
    ...(compare && runIds.length > 0
      ? [
          {
            name: 'compare-trials',
            label: 'Compare trials',
            title: `${runIds.length} trial run${runIds.length === 1 ? '' : 's'}`,
            run: () => compare(runIds)
          }
        ]
      : []),
    {
      name: 'open-sweep',
      label: 'Tuning views',
      title:
        'History, importance, parallel coordinates, contour (and the Pareto front)',
      run: () => actions.openSweep(sweep.sweep_id)
    },
    ...(FINISHED.has(sweep.state)
      ? []
      : [{ name: 'stop-sweep', label: 'Stop', run: () => void stop() }])
  ];
  return (
    <li
      className="jp-px-sweep"
      data-sweep-id={sweep.sweep_id}
      data-state={sweep.state}
    >
      <div className="jp-px-run-head">
        <button
          className="jp-px-link jp-px-sweep-toggle"
          aria-expanded={expanded}
          aria-label={`${expanded ? 'Collapse' : 'Expand'} sweep ${label}`}
          title={expanded ? 'Hide the trials' : 'Show the trials'}
          onClick={() => props.onExpand(!expanded)}
        >
          {expanded ? '▾' : '▸'}
        </button>
        <span className="jp-px-run-name" title={sweep.sweep_id}>
          {label}
        </span>
        <span className="jp-px-sweep-tag">sweep</span>
        <span className={badge.className}>{badge.label}</span>
        {items.length > 0 && (
          <RowMenu label={`More actions for sweep ${label}`} items={items} />
        )}
      </div>
      <div className="jp-px-run-meta">
        <span className="jp-px-sweep-trials">{trialsText(sweep)}</span>
        {best && <span className="jp-px-sweep-best">{best}</span>}
        <span
          className="jp-px-age"
          title={new Date(sweep.created_at * 1000).toLocaleString()}
        >
          {formatAge(sweep.created_at, now)}
        </span>
      </div>
      {sweep.message && (
        <div className="jp-px-run-message">{sweep.message}</div>
      )}
      {sweep.owner_problem && (
        <div className="jp-px-run-message jp-px-run-owner">
          {sweep.owner_problem}
        </div>
      )}
      {expanded && (
        <ul className="jp-px-run-list jp-px-sweep-trials-list">
          {trials.length === 0 && (
            <li className="jp-px-note">No trial runs listed yet.</li>
          )}
          {trials.map(({ run, trial }) => (
            <RunRow
              key={run.run_id}
              run={run}
              now={now}
              progress={progressFraction(model.progress[run.run_id])}
              actions={actions}
              selected={props.chosen.has(run.run_id)}
              onSelect={on => props.choose(run.run_id, on)}
              detail={trialText(trial, sweep.objective)}
            />
          ))}
        </ul>
      )}
    </li>
  );
}
