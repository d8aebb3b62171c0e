import { Clipboard, Dialog, showDialog } from '@jupyterlab/apputils';
import * as React from 'react';

import {
  formatAge,
  launchWord,
  ownerNote,
  replicaText,
  runLabel,
  stateBadge
} from '../runs';
import { FailureLine } from '../failureLineView';
import type { IRunSummary } from '../types';
import type { ISidebarActions } from './actions';
import { confirmDelete } from './housekeeping';
import { IRowMenuItem, RowMenu } from './rowMenu';

/**
 * What tells runs of one name apart: the end of the id the name does not say (`long-one-3f2a1c`
 * shows `3f2a1c`), else the id's last six characters.
 */
export function shortId(run: IRunSummary): string {
  const slug = (run.name ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return slug && run.run_id.startsWith(`${slug}-`)
    ? run.run_id.slice(slug.length + 1)
    : run.run_id.slice(-6);
}

/**
 * One run in the list: a check box (for TensorBoard, Compare and Delete of several), name, state,
 * replicas, age, progress; Logs, Metrics and TensorBoard, and the rest in the "⋯" menu (Stop and
 * Delete ask first). A named run shows the end of its id too: four runs named alike stay apart.
 */
export function RunRow(props: {
  run: IRunSummary;
  progress: number | null;
  actions: ISidebarActions;
  /** Seconds since the epoch, ticking: ages count up between polls. */
  now?: number;
  selected?: boolean;
  onSelect?: (selected: boolean) => void;
  /** A line under the name: a sweep trial's values. */
  detail?: string;
}): JSX.Element {
  const { run, progress, actions, now, selected, onSelect, detail } = props;
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
  const items: IRowMenuItem[] = [
    ...(run.finished
      ? []
      : [{ name: 'stop', label: 'Stop', run: () => void stop() }]),
    {
      name: 'copy',
      label: 'Copy id',
      title: run.run_id,
      run: () => Clipboard.copyToSystem(run.run_id)
    },
    ...(run.finished
      ? [
          {
            name: 'delete',
            label: 'Delete…',
            title: 'Remove the run and its logs, metrics and outputs',
            danger: true,
            run: () => void confirmDelete([run], actions)
          }
        ]
      : [])
  ];
  return (
    <li
      className={'jp-px-run' + (selected ? ' jp-mod-selected' : '')}
      data-run-id={run.run_id}
      data-state={run.state}
    >
      <div className="jp-px-run-head">
        {onSelect && (
          <input
            type="checkbox"
            className="jp-px-run-select"
            aria-label={`Select ${runLabel(run)}`}
            checked={selected ?? false}
            onChange={event => onSelect(event.target.checked)}
          />
        )}
        <span className="jp-px-run-name" title={run.run_id}>
          {runLabel(run)}
        </span>
        <span className={badge.className}>{badge.label}</span>
      </div>
      {detail && (
        <div className="jp-px-run-detail" title={detail}>
          {detail}
        </div>
      )}
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
        {launchWord(run.launch) && (
          <span
            className={`jp-px-launch jp-px-launch-${launchWord(run.launch)!.word}`}
            title={`replicas started ${launchWord(run.launch)!.why}`}
          >
            {launchWord(run.launch)!.word}
          </span>
        )}
        {run.name && (
          <code className="jp-px-run-short-id" title={run.run_id}>
            {shortId(run)}
          </code>
        )}
        <RowActions run={run} actions={actions} items={items} />
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
    </li>
  );
}

/** A row's actions, on its second line: Logs, Metrics, TensorBoard, and the "⋯" menu. */
function RowActions(props: {
  run: IRunSummary;
  actions: ISidebarActions;
  items: IRowMenuItem[];
}): JSX.Element {
  const { run, actions, items } = props;
  return (
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
      <RowMenu label={`More actions for ${runLabel(run)}`} items={items} />
    </div>
  );
}
