import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import { FailureLine } from '../failureLineView';
import type { MetricsModel } from '../panels/metricsModel';
import { MetricsPlot } from '../panels/metricsPlot';
import { formatAge, replicaText, stateBadge } from '../runs';
import type { RunOutputModel } from './runOutputModel';

/** What the output's buttons open: the same panels as the sidebar's (its commands). */
export interface IRunOutputActions {
  openTensorBoard(runId: string): void;
  openLogs(runId: string): void;
}

/**
 * The run in a notebook output, as the server knows it now: name, state, replicas, age; why it
 * failed; TensorBoard and Logs (the sidebar's panels); the interactive metrics plot. A run the
 * server no longer knows says so, with the state the output recorded.
 */
export function RunOutputView(props: {
  model: RunOutputModel;
  metrics: MetricsModel | null;
  actions: IRunOutputActions;
}): JSX.Element {
  const { model, metrics, actions } = props;
  return (
    <UseSignal signal={model.changed}>
      {() => {
        const { payload, detail, gone } = model;
        const state = model.state ?? 'unknown';
        const badge = stateBadge(state);
        const replicas = detail
          ? replicaText(detail)
          : `${payload.replicas.length} replica${payload.replicas.length === 1 ? '' : 's'}`;
        const ended = detail?.finished_at ?? payload.finished_at;
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
              <code className="jp-px-run-output-id">{payload.run_id}</code>
              <span className={badge.className}>{badge.label}</span>
              <span className="jp-px-note">
                {payload.backend} · {replicas}
                {ended
                  ? ` · ended ${formatAge(ended)} ago`
                  : payload.created_at
                    ? ` · started ${formatAge(payload.created_at)} ago`
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
                  <div className="jp-px-error">
                    the run could not be read: {model.error} (showing it as
                    saved: {payload.state ?? '?'})
                  </div>
                )}
                {state === 'Failed' && <FailureLine runId={payload.run_id} />}
                <div className="jp-px-toolbar jp-px-run-output-actions">
                  <button
                    className="jp-mod-styled jp-px-output-tensorboard"
                    title="Open this run's TensorBoard (started, or reused)"
                    onClick={() => actions.openTensorBoard(payload.run_id)}
                  >
                    TensorBoard
                  </button>
                  <button
                    className="jp-mod-styled jp-px-output-logs"
                    title="Open this run's logs, on the failing replica if one failed"
                    onClick={() => actions.openLogs(payload.run_id)}
                  >
                    Logs
                  </button>
                </div>
                {metrics && (
                  <UseSignal signal={metrics.changed}>
                    {() =>
                      // A finished run that logged nothing: a line, not an empty plot.
                      metrics.finished && metrics.metrics().length === 0 ? (
                        <div className="jp-px-note jp-px-run-output-no-metrics">
                          no metrics were logged
                          (jupyter_px.tracking.log_metrics)
                        </div>
                      ) : (
                        <MetricsPlot model={metrics} />
                      )
                    }
                  </UseSignal>
                )}
              </>
            )}
          </div>
        );
      }}
    </UseSignal>
  );
}
