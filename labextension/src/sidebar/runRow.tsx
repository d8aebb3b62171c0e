import { Clipboard, Dialog, showDialog } from '@jupyterlab/apputils';
import * as React from 'react';

import {
  formatAge,
  ownerNote,
  replicaText,
  runLabel,
  stateBadge
} from '../runs';
import { failureLine } from '../failureLine';
import type { IRunSummary } from '../types';
import type { ISidebarActions } from './actions';

/** A failed run's exception line, read from its failing replica's log once the run failed. */
function FailureLine(props: { runId: string }): JSX.Element | null {
  const [line, setLine] = React.useState('');
  React.useEffect(() => {
    let live = true;
    failureLine(props.runId).then(
      text => live && setLine(text),
      () => undefined
    );
    return () => {
      live = false;
    };
  }, [props.runId]);
  return line ? (
    <div className="jp-px-run-message jp-px-run-failure" title={line}>
      {line}
    </div>
  ) : null;
}

/** One run in the list: name, state, replicas, age, progress, and its actions (stop asks first). */
export function RunRow(props: {
  run: IRunSummary;
  progress: number | null;
  actions: ISidebarActions;
  /** Seconds since the epoch, ticking: ages count up between polls. */
  now?: number;
}): JSX.Element {
  const { run, progress, actions, now } = props;
  const badge = stateBadge(run.state);
  const owner = ownerNote(run);
  const stop = async () => {
    const answer = await showDialog({
      title: 'Stop run?',
      body: `Stop ${runLabel(run)} (${run.run_id})? Every replica is stopped.`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Stop' })]
    });
    if (answer.button.accept) {
      await actions.stopRun(run.run_id);
    }
  };
  return (
    <li className="jp-px-run" data-run-id={run.run_id} data-state={run.state}>
      <div className="jp-px-run-head">
        <span className="jp-px-run-name" title={run.run_id}>
          {runLabel(run)}
        </span>
        <span className={badge.className}>{badge.label}</span>
      </div>
      <div className="jp-px-run-meta">
        <span className="jp-px-replicas">{replicaText(run)}</span>
        <span
          className="jp-px-age"
          title={new Date(run.created_at * 1000).toLocaleString()}
        >
          {formatAge(run.created_at, now)}
        </span>
        {run.submitted_from && (
          <span className="jp-px-from">{run.submitted_from}</span>
        )}
      </div>
      {progress !== null && (
        <div
          className="jp-px-progress"
          title={`${Math.round(progress * 100)}%`}
        >
          <div style={{ width: `${progress * 100}%` }} />
        </div>
      )}
      {run.message && run.state !== 'Succeeded' && (
        <div className="jp-px-run-message">{run.message}</div>
      )}
      {run.state === 'Failed' && run.finished && (
        <FailureLine runId={run.run_id} />
      )}
      {owner && (
        <div className="jp-px-run-message jp-px-run-owner">{owner}</div>
      )}
      <div className="jp-px-run-actions">
        <button
          className="jp-px-link jp-px-action-logs"
          onClick={() => actions.openLogs(run.run_id)}
        >
          Logs
        </button>
        <button
          className="jp-px-link jp-px-action-metrics"
          onClick={() => actions.openMetrics(run.run_id)}
        >
          Metrics
        </button>
        <button
          className="jp-px-link jp-px-action-tensorboard"
          onClick={() => actions.openTensorBoard(run.run_id)}
        >
          TensorBoard
        </button>
        {!run.finished && (
          <button
            className="jp-px-link jp-px-action-stop"
            onClick={() => void stop()}
          >
            Stop
          </button>
        )}
        <button
          className="jp-px-link jp-px-action-copy"
          onClick={() => Clipboard.copyToSystem(run.run_id)}
          title="Copy the run id"
        >
          Copy id
        </button>
      </div>
    </li>
  );
}
