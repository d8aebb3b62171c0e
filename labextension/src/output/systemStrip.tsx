import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import type { MetricsModel } from '../panels/metricsModel';
import type { RunOutputModel } from './runOutputModel';
import type { ISeries } from '../types';

/** The system series each replica's owner samples every 2 s (docs/hangs.md). */
export const CPU_SERIES = 'system/cpu_percent';
export const RSS_SERIES = 'system/rss_mib';

/** A replica's newest CPU (% of one core) and resident memory (MiB), and its memory limit. */
export interface ISystemSample {
  replica: string;
  cpu: number | null;
  rssMib: number | null;
  /** The limit its backend enforces (MiB), where it has one. */
  limitMib?: number | null;
}

/** Resident memory at or past this share of its limit is marked: the kill is near. */
export const NEAR_LIMIT = 0.9;

function last(series: ISeries | undefined): number | null {
  if (!series || series.values.length === 0) {
    return null;
  }
  const value = series.values[series.values.length - 1];
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * Each replica's newest system sample, in replica order, with its memory limit from `limits`
 * (replica -> MiB); replicas without a sample are left out.
 */
export function systemSamples(
  data: MetricsModel['data'],
  limits: { [replica: string]: number | null | undefined } = {}
): ISystemSample[] {
  return Object.keys(data)
    .sort()
    .map(replica => ({
      replica,
      cpu: last(data[replica][CPU_SERIES]),
      rssMib: last(data[replica][RSS_SERIES]),
      limitMib: limits[replica] ?? null
    }))
    .filter(sample => sample.cpu !== null || sample.rssMib !== null);
}

/** `412 MiB of 900 MiB`, or `412 MiB` without a limit. */
export function memoryOfLimitText(
  rssMib: number | null,
  limitMib: number | null | undefined
): string {
  return limitMib
    ? `${memoryText(rssMib)} of ${memoryText(limitMib)}`
    : memoryText(rssMib);
}

/** `412 MiB` or `1.3 GiB`. */
export function memoryText(mib: number | null): string {
  if (mib === null) {
    return '–';
  }
  return mib >= 1024
    ? `${(mib / 1024).toFixed(1)} GiB`
    : `${Math.round(mib)} MiB`;
}

/**
 * One compact cell per replica: a CPU bar (of one core; a scale of the busiest replica when one
 * uses more than a core) with its % and its resident memory. A rank at 100% beside ranks at 3%
 * shows at a glance: the busy one's bar is full and marked hot.
 */
export function SystemStripView(props: {
  samples: ISystemSample[];
}): JSX.Element | null {
  const { samples } = props;
  if (samples.length === 0) {
    return null;
  }
  const scale = Math.max(100, ...samples.map(s => s.cpu ?? 0));
  return (
    <div
      className="jp-px-system-strip"
      role="list"
      aria-label="each replica's CPU and memory"
    >
      {samples.map(({ replica, cpu, rssMib, limitMib }) => (
        <div
          key={replica}
          role="listitem"
          className={
            'jp-px-system-cell' +
            (cpu !== null && cpu >= 80 ? ' jp-px-system-hot' : '') +
            (limitMib && rssMib !== null && rssMib >= NEAR_LIMIT * limitMib
              ? ' jp-px-system-near-limit'
              : '')
          }
          data-replica={replica}
          data-cpu={cpu === null ? '' : Math.round(cpu)}
          title={
            `${replica}: CPU ${cpu === null ? '–' : cpu.toFixed(0)}% of one core, ` +
            `${memoryText(rssMib)} resident` +
            (limitMib ? ` of its ${memoryText(limitMib)} limit` : '')
          }
        >
          <span className="jp-px-system-name">{replica}</span>
          <span className="jp-px-system-bar">
            <span style={{ width: `${(100 * (cpu ?? 0)) / scale}%` }} />
          </span>
          <span className="jp-px-system-cpu">
            {cpu === null ? '–' : `${Math.round(cpu)}%`}
          </span>
          <span className="jp-px-system-mem">
            {memoryOfLimitText(rssMib, limitMib)}
          </span>
        </div>
      ))}
    </div>
  );
}

/**
 * The strip, following the run's metrics as they arrive (the same poll as the plot's), each
 * replica's memory beside the limit its run view reports (`run`: the run view's model).
 */
export function SystemStrip(props: {
  metrics: MetricsModel;
  run?: RunOutputModel;
}): JSX.Element {
  const { metrics, run } = props;
  const draw = () => (
    <SystemStripView samples={systemSamples(metrics.data, limitsOf(run))} />
  );
  if (!run) {
    return <UseSignal signal={metrics.changed}>{draw}</UseSignal>;
  }
  return (
    <UseSignal signal={run.changed}>
      {() => <UseSignal signal={metrics.changed}>{draw}</UseSignal>}
    </UseSignal>
  );
}

function limitsOf(run: RunOutputModel | undefined): {
  [replica: string]: number | null | undefined;
} {
  return Object.fromEntries(
    (run?.view?.replicas ?? []).map(row => [row.key, row.memory_limit_mib])
  );
}
