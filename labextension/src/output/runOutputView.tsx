import { Dialog, showDialog } from '@jupyterlab/apputils';
import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import { formatAge, stateBadge } from '../runs';
import type { ICellChanges, IRunViewModel } from '../types';
import { useNow } from '../useNow';
import type { RunOutputModel } from './runOutputModel';
import { StalledBadge } from './stalledBadge';
import { KillButton } from './killButton';
import { StacksButton, StacksResult, useStacks } from './stacksView';

/** What the output's buttons do: the sidebar's panels and commands. */
export interface IRunOutputActions {
  openTensorBoard(runId: string): void;
  openLogs(runId: string): void;
  openMetrics?(runId: string): void;
  stopRun?(runId: string): Promise<void>;
  /** End one running replica on purpose (`jupyter px kill`); what was signalled, in words. */
  killReplica?(
    runId: string,
    replica: string,
    signal: 'KILL' | 'TERM'
  ): Promise<string>;
  /** Open the notebook cell a failure names (when the run recorded it). */
  goToCell?(cellId: string, line: number | null): void;
}

export type RunOutputTab = 'metrics' | 'logs' | 'replicas';

const TABS: { [tab in RunOutputTab]: string } = {
  metrics: 'Metrics',
  logs: 'Logs',
  replicas: 'Replicas'
};

function number(value: number | null | undefined): string {
  if (value === null || value === undefined) {
    return '–';
  }
  return Math.abs(value) >= 1e5 || (value !== 0 && Math.abs(value) < 1e-3)
    ? value.toExponential(2)
    : String(Number(value.toPrecision(4)));
}

/** The replicas bar: a segment per phase in its state's color, sized by its count. */
export function PhaseBar(props: { view: IRunViewModel }): JSX.Element {
  const { view } = props;
  const total = Math.max(1, view.replicas_total);
  return (
    <div className="jp-px-phase-row">
      <div className="jp-px-phase-bar" role="img" aria-label={view.counts}>
        {view.phases.map(phase => (
          <div
            key={phase.phase}
            className={`jp-px-phase jp-px-phase-${phase.state.toLowerCase()}`}
            data-phase={phase.phase}
            style={{ width: `${(100 * phase.count) / total}%` }}
            title={`${phase.count} ${phase.phase}`}
          />
        ))}
      </div>
      <span className="jp-px-phase-text">{view.counts}</span>
    </div>
  );
}

/** What changed since the previous run of the same cell: params, metrics, the code's diff. */
export function CellChangesView(props: { changes: ICellChanges }): JSX.Element {
  const { changes } = props;
  const metrics = changes.metrics.filter(
    m => m.before !== null || m.after !== null
  );
  const summary = [
    ...changes.params
      .slice(0, 3)
      .map(p => `${p.name} ${p.before ?? '–'} → ${p.after ?? '–'}`),
    ...metrics
      .slice(0, 2)
      .map(m => `${m.name} ${number(m.before)} → ${number(m.after)}`)
  ].join('; ');
  return (
    <details className="jp-px-changes">
      <summary>
        Since the last run of this cell (
        {changes.previous_name ?? changes.previous_run},{' '}
        {changes.previous_state}):{' '}
        {summary ||
          (changes.code_diff ? 'the code changed' : 'nothing changed')}
      </summary>
      {changes.params.length > 0 && (
        <table className="jp-px-changes-params">
          <tbody>
            {changes.params.map(p => (
              <tr key={p.name}>
                <td>{p.name}</td>
                <td>{p.before ?? '–'}</td>
                <td>→</td>
                <td>{p.after ?? '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {metrics.length > 0 && (
        <table className="jp-px-changes-metrics">
          <tbody>
            {metrics.map(m => (
              <tr
                key={m.name}
                className={
                  m.better === null
                    ? ''
                    : m.better
                      ? 'jp-px-better'
                      : 'jp-px-worse'
                }
              >
                <td>{m.name}</td>
                <td>{number(m.before)}</td>
                <td>→</td>
                <td>{number(m.after)}</td>
                <td>
                  {m.better === null ? '' : m.better ? 'better' : 'worse'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {changes.code_diff && (
        <pre className="jp-px-changes-diff">
          {changes.code_diff.split('\n').map((line, i) => (
            <span
              key={i}
              className={
                line.startsWith('+') && !line.startsWith('+++')
                  ? 'jp-px-diff-add'
                  : line.startsWith('-') && !line.startsWith('---')
                    ? 'jp-px-diff-del'
                    : undefined
              }
            >
              {line + '\n'}
            </span>
          ))}
        </pre>
      )}
    </details>
  );
}

/**
 * The run in a notebook output, as the server knows it now: name, state (and why it waits),
 * replicas by phase, training progress, the straggler, why it failed, what changed since the
 * previous run of the cell; Stop, TensorBoard, Logs and Metrics; the tabs below it. Ages tick.
 * A run the server no longer knows says so, with the state the output recorded.
 */
export function RunOutputView(props: {
  model: RunOutputModel;
  actions: IRunOutputActions;
  tab: RunOutputTab;
  onTab: (tab: RunOutputTab) => void;
}): JSX.Element {
  const { model, actions, tab, onTab } = props;
  const now = useNow();
  const finished = React.useCallback(() => model.finished, [model]);
  const stacks = useStacks(model.runId, finished);
  return (
    <UseSignal signal={model.changed}>
      {() => {
        const { payload, view, gone } = model;
        const state = model.state ?? 'unknown';
        const badge = stateBadge(state);
        const total = view?.replicas_total ?? payload.replicas.length;
        const ended = view?.finished_at ?? payload.finished_at;
        // Since it was submitted, as the runs list counts ages: one clock before and after the
        // server's first answer.
        const started = view?.created_at ?? payload.created_at;
        const stop = async () => {
          const answer = await showDialog({
            title: 'Stop run?',
            body: `Stop ${payload.name ?? payload.run_id} (${payload.run_id})? Every replica is stopped.`,
            buttons: [
              Dialog.cancelButton(),
              Dialog.warnButton({ label: 'Stop' })
            ]
          });
          if (answer.button.accept && actions.stopRun) {
            await actions.stopRun(payload.run_id);
            model.refresh();
          }
        };
        return (
          <div
            className="jp-px-run-output"
            data-run-id={payload.run_id}
            data-state={state}
          >
            <div className="jp-px-run-output-head">
              <span className="jp-px-run-output-name">
                {payload.name || payload.run_id}
              </span>
              {payload.name && (
                <code className="jp-px-run-output-id" title={payload.run_id}>
                  {payload.run_id}
                </code>
              )}
              <span className={badge.className}>{badge.label}</span>
              <span className="jp-px-note jp-px-run-output-meta">
                {payload.backend} · {total} replica{total === 1 ? '' : 's'}
                {view?.launch && (
                  <span className="jp-px-launch" title={view.launch}>
                    {' '}
                    · {view.launch}
                  </span>
                )}
                {ended
                  ? ` · ended ${formatAge(ended, now)} ago`
                  : started
                    ? ` · started ${formatAge(started, now)} ago`
                    : ''}
              </span>
            </div>
            {gone ? (
              <div className="jp-px-run-gone">
                {gone} When this output was saved it was {payload.state ?? '?'}.
              </div>
            ) : (
              <>
                {model.error && (
                  <div className="jp-px-error jp-px-run-output-stale">
                    the server cannot be reached ({model.error}): this is the
                    run as read{' '}
                    {model.readAt
                      ? `${formatAge(model.readAt / 1000, now)} ago`
                      : `when the output was saved (${payload.state ?? '?'})`}
                    , not updating
                  </div>
                )}
                {view && state === 'Pending' && view.message && (
                  <div className="jp-px-run-message jp-px-pending-reason">
                    waiting: {view.message}
                  </div>
                )}
                {view?.owner_problem && !view.finished && (
                  <div className="jp-px-run-message jp-px-run-owner">
                    {view.owner_problem}
                  </div>
                )}
                {view?.failure && (
                  <div
                    className="jp-px-run-message jp-px-run-failure"
                    title={view.failure.line}
                  >
                    <span>
                      {view.failure.replica}: {view.failure.line}
                    </span>
                    {view.failure.cell_id && actions.goToCell && (
                      <button
                        className="jp-px-link jp-px-go-to-cell"
                        onClick={() =>
                          actions.goToCell!(
                            view.failure!.cell_id!,
                            view.failure!.cell_line ?? null
                          )
                        }
                      >
                        Go to cell
                      </button>
                    )}
                  </div>
                )}
                {view && <PhaseBar view={view} />}
                {view?.progress && (
                  <div className="jp-px-phase-row jp-px-training">
                    <div className="jp-px-progress">
                      <div
                        style={{
                          width: `${(view.progress_fraction ?? 0) * 100}%`
                        }}
                      />
                    </div>
                    <span className="jp-px-phase-text">{view.progress}</span>
                  </div>
                )}
                {view?.straggler && (
                  <div className="jp-px-run-message jp-px-straggler">
                    {view.straggler}
                  </div>
                )}
                {view?.stalled && (
                  <div className="jp-px-run-message jp-px-stalled">
                    {view.stalled}
                  </div>
                )}
                {view?.attempt && (
                  <div className="jp-px-run-message jp-px-attempts">
                    <span className="jp-px-attempt-now">{view.attempt}</span>
                    {(view.attempts ?? [])
                      .filter(attempt => attempt.ended)
                      .map(attempt => (
                        <div
                          key={attempt.attempt}
                          className="jp-px-attempt-ended"
                          data-attempt={attempt.attempt}
                        >
                          attempt {attempt.attempt}: {attempt.ended}
                        </div>
                      ))}
                  </div>
                )}
                {view?.changes && <CellChangesView changes={view.changes} />}
                <div className="jp-px-toolbar jp-px-run-output-actions">
                  {!model.finished && actions.stopRun && (
                    <button
                      className="jp-mod-styled jp-mod-warn jp-px-output-stop"
                      title="Stop every replica of this run (asks first)"
                      onClick={() => void stop()}
                    >
                      Stop
                    </button>
                  )}
                  <button
                    className="jp-mod-styled jp-px-output-tensorboard"
                    title="Open this run's TensorBoard (started, or reused)"
                    onClick={() => actions.openTensorBoard(payload.run_id)}
                  >
                    TensorBoard
                  </button>
                  <button
                    className="jp-mod-styled jp-px-output-logs"
                    title="Open this run's logs in a panel, on the failing replica if one failed"
                    onClick={() => actions.openLogs(payload.run_id)}
                  >
                    Logs panel
                  </button>
                  <StacksButton stacks={stacks} finished={model.finished} />
                  <div className="jp-px-tabs" role="tablist">
                    {(Object.keys(TABS) as RunOutputTab[]).map(name => (
                      <button
                        key={name}
                        role="tab"
                        aria-selected={tab === name}
                        className={`jp-px-tab jp-px-output-tab-${name}${tab === name ? ' jp-px-tab-current' : ''}`}
                        onClick={() => onTab(name)}
                      >
                        {TABS[name]}
                      </button>
                    ))}
                  </div>
                </div>
                <StacksResult stacks={stacks} />
              </>
            )}
          </div>
        );
      }}
    </UseSignal>
  );
}

/** The replicas' table of the Replicas tab, from the same view-model. */
export function ReplicaTable(props: {
  model: RunOutputModel;
  actions?: IRunOutputActions;
}): JSX.Element {
  const now = useNow();
  const kill = props.actions?.killReplica;
  return (
    <UseSignal signal={props.model.changed}>
      {() => {
        const view = props.model.view;
        if (!view) {
          return <div className="jp-px-note">reading the run…</div>;
        }
        const rates = new Map(view.rates.map(rate => [rate.replica, rate]));
        return (
          <table className="jp-px-replica-table">
            <thead>
              <tr>
                <th>replica</th>
                <th>state</th>
                <th>step</th>
                <th>steps/s</th>
                <th>restarts</th>
                <th>exit</th>
                <th>resources</th>
                <th>reason</th>
                <th>last output</th>
                {kill && <th aria-label="actions" />}
              </tr>
            </thead>
            <tbody>
              {view.replicas.map(row => {
                const rate = rates.get(row.key);
                // Stalled is a mark on a Running replica: its state word stays, the badge says why.
                const stalled =
                  row.stalled_since !== null && row.stalled_since !== undefined;
                const phase = stalled ? row.state : row.phase;
                return (
                  <tr
                    key={row.key}
                    data-replica={row.key}
                    data-state={row.state}
                    data-stalled={stalled ? 'true' : undefined}
                  >
                    <td>{row.label}</td>
                    <td>
                      <span
                        className={`jp-px-phase-word jp-px-phase-word-${phase === 'starting' ? 'pending' : row.state.toLowerCase()}`}
                      >
                        {phase}
                      </span>
                      {stalled && (
                        <>
                          {' '}
                          <StalledBadge
                            since={row.stalled_since!}
                            after={row.stall_after_s}
                            now={now}
                          />
                        </>
                      )}
                    </td>
                    <td>{row.step}</td>
                    <td>
                      {rate?.steps_per_s ? rate.steps_per_s.toFixed(2) : ''}
                    </td>
                    <td>{row.restarts}</td>
                    <td>{row.exit_code}</td>
                    <td>{row.resources}</td>
                    <td>{row.reason}</td>
                    <td>
                      <code>{row.last_line}</code>
                    </td>
                    {kill && (
                      <td>
                        <KillButton
                          model={props.model}
                          replica={row.key}
                          label={row.label}
                          killable={
                            row.state === 'Running' && !view.finished_at
                          }
                          kill={kill}
                        />
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        );
      }}
    </UseSignal>
  );
}
