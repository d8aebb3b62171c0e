import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ReactWidget, UseSignal } from '@jupyterlab/ui-components';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';
import { PanelLayout, Widget } from '@lumino/widgets';
import * as React from 'react';

import * as api from '../api';
import { ILine, IFigure, lineFigure } from '../plotting/figures';
import { PlotlyFigure, usePlotTheme } from '../plotting/plotlyFigure';
import type { IPlotTheme } from '../plotting/theme';
import { viewPoll } from '../polling';
import { formatAge, stateBadge } from '../runs';
import {
  bestText,
  paramsText,
  trialRunIds,
  trialStateWord,
  trialsText
} from '../sweepGroups';
import type { ISweep, ISweepView } from '../types';
import { Ticking } from '../useNow';
import { spansDecades, SweepViews } from './sweepViews';

/** The sweep's mimetype (`jupyter_px/widgets/run_mime.py`): every output of the sweep monitor. */
export const SWEEP_MIMETYPE = 'application/vnd.jupyter-px.sweep+json';

export interface ISweepPayload {
  version: number;
  sweep_id: string;
  name: string | null;
  state: string | null;
}

/** What the sweep's buttons do. */
export interface ISweepOutputActions {
  compareRuns(runIds: string[]): void;
  stopSweep(sweepId: string): Promise<void>;
}

const SWEEP_ID = /^[a-z0-9][a-z0-9-]*$/;

export function readSweepPayload(data: unknown): ISweepPayload | string {
  const payload = data as Partial<ISweepPayload> | null;
  if (!payload || typeof payload !== 'object' || payload.version !== 1) {
    return 'this output was written by another version of jupyter-px';
  }
  if (
    typeof payload.sweep_id !== 'string' ||
    !SWEEP_ID.test(payload.sweep_id)
  ) {
    return `this output names no valid sweep (${JSON.stringify(payload.sweep_id)})`;
  }
  return {
    version: 1,
    sweep_id: payload.sweep_id,
    name: payload.name ?? null,
    state: payload.state ?? null
  };
}

/**
 * The objective per trial by step: a line per trial from the values it reported, the best
 * thick, a pruned one dotted. A trial that reported no step yet but has a value is a point at
 * its last step, so a sweep never draws bare axes once a trial has a value.
 */
export function objectiveFigure(
  sweep: ISweep,
  theme: IPlotTheme,
  log = false
): IFigure {
  const lines: ILine[] = [];
  for (const trial of [...(sweep.trials ?? [])].sort(
    (a, b) => a.number - b.number
  )) {
    const points: (number | null)[][] = trial.intermediate.length
      ? trial.intermediate
      : trial.value !== null
        ? [[trial.step ?? 0, trial.value]]
        : [];
    if (!points.length) {
      continue;
    }
    const best = trial.number === sweep.best;
    lines.push({
      name: `trial ${trial.number}${best ? ' ★' : ''}`,
      id: trial.run_id ?? String(trial.number),
      x: points.map(p => p[0] ?? 0),
      y: points.map(p => p[1]),
      color: theme.series[trial.number % theme.series.length],
      width: best ? 3.5 : 1.5,
      dash: trial.state === 'Pruned' ? 'dot' : 'solid'
    });
  }
  const figure = lineFigure({
    lines,
    theme,
    yTitle: sweep.objective ?? 'value',
    height: 300,
    log
  });
  for (const trace of figure.data) {
    trace.mode = trace.x.length === 1 ? 'markers' : 'lines+markers';
    trace.marker = { size: 5, color: trace.line.color };
  }
  return figure;
}

/** A sweep as the server knows it now, read again until it has finished. */
export class SweepOutputModel {
  constructor(
    readonly payload: ISweepPayload,
    interval: number,
    isVisible: () => boolean
  ) {
    this.poll = viewPoll({
      name: `jupyter-px:sweep:${payload.sweep_id}`,
      intervalSeconds: interval,
      isVisible,
      factory: () => this.fetch()
    });
  }

  readonly poll: Poll;
  sweep: ISweep | null = null;
  /** What a tuner looks at (`GET sweeps/<ref>/view`), read with the sweep. */
  view: ISweepView | null = null;
  error: string | null = null;
  /** Why the views could not be read (the sweep itself was). */
  viewError: string | null = null;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  async fetch(): Promise<void> {
    // The sweep first (its head, table and per-step plot show at once), then its views.
    let sweep: ISweep | null = null;
    try {
      sweep = this.sweep = await api.getSweep(this.payload.sweep_id);
      this.error = null;
      this._changed.emit();
      this.view = await api.getSweepView(this.payload.sweep_id);
      this.viewError = null;
      this._changed.emit();
    } catch (error) {
      const message = (error as Error).message;
      if (sweep) {
        this.viewError = message;
      } else {
        this.error = message;
      }
      this._changed.emit();
      throw error;
    }
    if (['Succeeded', 'Failed', 'Stopped'].includes(sweep!.state)) {
      void this.poll.stop();
    }
  }

  dispose(): void {
    this.poll.dispose();
  }

  private _changed = new Signal<this, void>(this);
}

/** A sweep's whole view: its head, buttons, plots and trials (the notebook's output, the panel). */
export function SweepView(props: {
  model: SweepOutputModel;
  actions: ISweepOutputActions;
}): JSX.Element {
  const { model, actions } = props;
  const theme = usePlotTheme();
  // null: the axis follows the values (log once they span more than three decades)
  const [logChoice, setLogChoice] = React.useState<boolean | null>(null);
  return (
    <UseSignal signal={model.changed}>
      {() => {
        const sweep = model.sweep;
        const label =
          sweep?.name ?? model.payload.name ?? model.payload.sweep_id;
        if (!sweep) {
          return (
            <div
              className="jp-px-sweep-output"
              data-sweep-id={model.payload.sweep_id}
            >
              <div className="jp-px-run-output-head">
                <span className="jp-px-run-output-name">{label}</span>
              </div>
              {model.error ? (
                <div className="jp-px-error">
                  the sweep could not be read: {model.error}
                </div>
              ) : (
                <div className="jp-px-note">reading the sweep…</div>
              )}
            </div>
          );
        }
        const finished = ['Succeeded', 'Failed', 'Stopped'].includes(
          sweep.state
        );
        const badge = stateBadge(sweep.state);
        const values = (sweep.trials ?? []).flatMap(trial =>
          trial.intermediate.length
            ? trial.intermediate
                .map(point => point[1])
                .filter((value): value is number => value !== null)
            : trial.value !== null
              ? [trial.value]
              : []
        );
        const logged = (model.view?.metrics ?? []).flatMap(metric =>
          metric.trials.flatMap(curve => curve.values)
        );
        const log =
          logChoice ?? spansDecades(sweep.objective ? values : logged);
        const best = bestText(sweep);
        const runIds = trialRunIds(sweep);
        const stop = async () => {
          const answer = await showDialog({
            title: 'Stop sweep?',
            body: `Stop ${label} (${sweep.sweep_id})? Its running trials are stopped, and no new ones start.`,
            buttons: [
              Dialog.cancelButton(),
              Dialog.warnButton({ label: 'Stop' })
            ]
          });
          if (answer.button.accept) {
            await actions.stopSweep(sweep.sweep_id);
            void model.poll.refresh();
          }
        };
        return (
          <div
            className="jp-px-sweep-output"
            data-sweep-id={sweep.sweep_id}
            data-state={sweep.state}
          >
            <div className="jp-px-run-output-head">
              <span className="jp-px-run-output-name">{label}</span>
              <code className="jp-px-run-output-id">{sweep.sweep_id}</code>
              <span className={badge.className}>{badge.label}</span>
              <span className="jp-px-note">
                trials {trialsText(sweep)}
                {best ? ` · ${best}` : ''}
                <Ticking
                  text={now =>
                    sweep.finished_at
                      ? ` · ended ${formatAge(sweep.finished_at, now)} ago`
                      : ` · started ${formatAge(sweep.started_at ?? sweep.created_at, now)} ago`
                  }
                />
              </span>
            </div>
            {sweep.message && (
              <div className="jp-px-run-message">{sweep.message}</div>
            )}
            {sweep.owner_problem && !finished && (
              <div className="jp-px-run-message jp-px-run-owner">
                {sweep.owner_problem}
              </div>
            )}
            <div className="jp-px-toolbar">
              {!finished && (
                <button
                  className="jp-mod-styled jp-mod-warn jp-px-sweep-stop"
                  onClick={() => void stop()}
                >
                  Stop sweep
                </button>
              )}
              <label
                className="jp-px-sweep-log"
                title="A log y axis on the per-trial charts: values that span decades stay apart"
              >
                <input
                  type="checkbox"
                  checked={log}
                  onChange={event => setLogChoice(event.target.checked)}
                />{' '}
                log scale
              </label>
              <button
                className="jp-mod-styled jp-px-sweep-compare"
                disabled={runIds.length < 1}
                onClick={() => actions.compareRuns(runIds)}
                title="Compare the trials' runs: curves, the table, the params' view"
              >
                Compare trials
              </button>
            </div>
            {sweep.objective !== null && (
              <div className="jp-px-sweep-plots">
                <PlotlyFigure
                  className="jp-px-sweep-objective"
                  label={`${sweep.objective} per trial by step`}
                  figure={objectiveFigure(sweep, theme, log)}
                />
              </div>
            )}
            {model.viewError && (
              <div className="jp-px-error">
                the sweep&apos;s views could not be read: {model.viewError}
              </div>
            )}
            {model.view && (
              <SweepViews view={model.view} theme={theme} log={log} />
            )}
            <table className="jp-px-sweep-trials">
              <thead>
                <tr>
                  <th>trial</th>
                  <th>state</th>
                  {sweep.objective !== null && <th>{sweep.objective}</th>}
                  <th>step</th>
                  <th>params</th>
                  <th>reason</th>
                </tr>
              </thead>
              <tbody>
                {[...(sweep.trials ?? [])]
                  .sort((a, b) => a.number - b.number)
                  .map(trial => (
                    <tr
                      key={trial.number}
                      data-trial={trial.number}
                      className={
                        trial.number === sweep.best
                          ? 'jp-px-best-trial'
                          : undefined
                      }
                    >
                      <td>
                        {trial.number}
                        {trial.number === sweep.best ? ' ★' : ''}
                      </td>
                      <td>
                        <span
                          className={`jp-px-trial-state jp-px-trial-${trial.state.toLowerCase()}`}
                        >
                          {trialStateWord(trial.state)}
                        </span>
                      </td>
                      {sweep.objective !== null && (
                        <td>
                          {trial.value === null
                            ? '–'
                            : Number(trial.value.toPrecision(4))}
                        </td>
                      )}
                      <td>{trial.step ?? '–'}</td>
                      <td>{paramsText(trial.params)}</td>
                      <td>{trial.reason ?? ''}</td>
                    </tr>
                  ))}
              </tbody>
            </table>
          </div>
        );
      }}
    </UseSignal>
  );
}

/**
 * The sweep's mimetype in a notebook: in JupyterLab this renderer owns the sweep's live view
 * (the ipywidgets sweep monitor in the same output serves other front-ends). It follows the sweep
 * as the server knows it, whatever the kernel does.
 */
export class SweepOutput extends Widget implements IRenderMime.IRenderer {
  constructor(
    private options: { interval: number; actions: ISweepOutputActions }
  ) {
    super();
    this.layout = new PanelLayout();
    this.addClass('jp-px-run-output-host');
  }

  async renderModel(mime: IRenderMime.IMimeModel): Promise<void> {
    this.showSweep(readSweepPayload(mime.data[SWEEP_MIMETYPE]));
  }

  /** Show a sweep (or why the output names none); the same sweep again changes nothing. */
  showSweep(payload: ISweepPayload | string): void {
    const layout = this.layout as PanelLayout;
    if (
      typeof payload !== 'string' &&
      this._model?.payload.sweep_id === payload.sweep_id
    ) {
      return;
    }
    this._model?.dispose();
    this._model = null;
    for (const child of [...layout.widgets]) {
      child.dispose();
    }
    if (typeof payload === 'string') {
      const note = new Widget();
      note.addClass('jp-px-error');
      note.node.textContent = payload;
      layout.addWidget(note);
      return;
    }
    const model = (this._model = new SweepOutputModel(
      payload,
      this.options.interval,
      () => this.isVisible
    ));
    layout.addWidget(
      ReactWidget.create(
        <SweepView model={model} actions={this.options.actions} />
      )
    );
  }

  dispose(): void {
    this._model?.dispose();
    super.dispose();
  }

  private _model: SweepOutputModel | null = null;
}

export function sweepOutputFactory(options: {
  interval: number;
  actions: ISweepOutputActions;
}): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [SWEEP_MIMETYPE],
    createRenderer: () => new SweepOutput(options)
  };
}
