import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ReactWidget } from '@jupyterlab/ui-components';
import { PanelLayout, Widget } from '@lumino/widgets';
import * as React from 'react';

import { MetricsModel } from '../panels/metricsModel';
import { TensorBoardView } from '../panels/tensorBoardView';
import { RunOutputModel } from './runOutputModel';
import { IRunOutputActions, RunOutputView } from './runOutputView';
import {
  IRunPayload,
  readPayload,
  RUN_MIMETYPE,
  WIDGET_MIMETYPE
} from './runMime';

/** How long after rendering a saved widget the renderer looks for its model to come (a reload). */
const LIVE_CHECKS = 30;
const LIVE_CHECK_MS = 1000;

/** What the renderer needs from the notebook it is in. */
export interface IRunOutputOptions {
  actions: IRunOutputActions;
  /** Seconds between reads of an unfinished run (the sidebar's refresh setting). */
  interval: number;
  /** Whether the notebook's kernel holds this widget model now (its comm is open). */
  widgetLive(modelId: string): boolean;
  /** ipywidgets' renderer, where it is installed. */
  createWidgetRenderer(): IRenderMime.IRenderer | null;
  /** The notebook's HTML renderer (sanitizing an untrusted output), for the static final view. */
  createHtmlRenderer(): IRenderMime.IRenderer | null;
}

/**
 * The run's mimetype in a notebook (`runMime.ts`). While the notebook's kernel still holds the
 * output's live monitor (its widget model), that widget is shown as ipywidgets would show it;
 * otherwise (the final view, a reopened or headless-executed notebook) the run as the server
 * knows it now: state, TensorBoard and Logs buttons, the interactive metrics plot, and the
 * run's TensorBoard embedded where the monitor had it open. Under them, the final view's static
 * HTML from the same output (the replicas' table, the failing replica's log open), its static
 * plots and dead TensorBoard hidden (style/base.css): what the run left stays readable, also
 * once the run is deleted.
 */
export class RunOutput extends Widget implements IRenderMime.IRenderer {
  constructor(private options: IRunOutputOptions) {
    super();
    this.layout = new PanelLayout();
    this.addClass('jp-px-run-output-host');
  }

  /** What this output shows now. */
  shows: 'widget' | 'run' | 'problem' | null = null;

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    window.clearInterval(this._liveCheck);
    const payload = readPayload(model.data[RUN_MIMETYPE]);
    const widget = model.data[WIDGET_MIMETYPE] as { model_id?: string } | null;
    // A trusted output only: the widget's renderer is not a safe one.
    const modelId = model.trusted ? (widget?.model_id ?? null) : null;
    if (modelId && this.options.widgetLive(modelId)) {
      const renderer = this.options.createWidgetRenderer();
      if (renderer) {
        this._clear();
        this.shows = 'widget';
        (this.layout as PanelLayout).addWidget(renderer);
        await renderer.renderModel(model);
        return;
      }
    }
    if (typeof payload === 'string') {
      this._clear();
      this.shows = 'problem';
      const note = new Widget();
      note.addClass('jp-px-error');
      note.node.textContent = payload;
      (this.layout as PanelLayout).addWidget(note);
      return;
    }
    // The same run again (an update of the output) is re-rendered only when what the output
    // says changed: the final view sent again with the TensorBoard the monitor opened late.
    const text = JSON.stringify(payload);
    if (this.shows !== 'run' || this._payloadText !== text) {
      this._showRun(payload, model);
      this._payloadText = text;
    }
    if (modelId) {
      // A notebook reloaded while its kernel runs: the widget's model comes back a moment later.
      let checks = 0;
      this._liveCheck = window.setInterval(() => {
        if (this.isDisposed || ++checks > LIVE_CHECKS) {
          window.clearInterval(this._liveCheck);
        } else if (this.options.widgetLive(modelId)) {
          void this.renderModel(model);
        }
      }, LIVE_CHECK_MS);
    }
  }

  dispose(): void {
    window.clearInterval(this._liveCheck);
    this._clear();
    super.dispose();
  }

  private _showRun(payload: IRunPayload, mime: IRenderMime.IMimeModel): void {
    this._clear();
    this.shows = 'run';
    const visible = () => this.isVisible;
    const model = (this._model = new RunOutputModel(
      payload,
      this.options.interval,
      visible
    ));
    const metrics = (this._metrics = new MetricsModel(
      payload.run_id,
      this.options.interval,
      visible
    ));
    const layout = this.layout as PanelLayout;
    layout.addWidget(
      ReactWidget.create(
        <RunOutputView
          model={model}
          metrics={metrics}
          actions={this.options.actions}
        />
      )
    );
    const html = mime.data['text/html']
      ? this.options.createHtmlRenderer()
      : null;
    if (html) {
      html.addClass('jp-px-run-output-static');
      layout.addWidget(html);
      void html.renderModel(mime);
    }
    let board: TensorBoardView | null = null;
    if (payload.tensorboard) {
      board = new TensorBoardView(payload.run_id);
      board.addClass('jp-px-run-output-tensorboard');
      layout.addWidget(board);
    }
    // A deleted run has no metrics nor TensorBoard: drop them once the server says so (the
    // static view stays: it is what the run left).
    model.changed.connect(() => {
      if (model.gone) {
        this._metrics?.dispose();
        this._metrics = null;
        board?.dispose();
        board = null;
      }
    });
  }

  private _clear(): void {
    this._model?.dispose();
    this._metrics?.dispose();
    this._model = null;
    this._metrics = null;
    this.shows = null;
    const layout = this.layout as PanelLayout;
    for (const child of [...layout.widgets]) {
      child.dispose();
    }
  }

  private _model: RunOutputModel | null = null;
  private _metrics: MetricsModel | null = null;
  private _liveCheck = 0;
  private _payloadText = '';
}

/** The factory registered on each notebook's rendermime (`output/plugin.ts`). */
export function runOutputFactory(
  options: IRunOutputOptions
): IRenderMime.IRendererFactory {
  return {
    safe: true, // it renders text from JSON with React, and the widget only for trusted outputs
    mimeTypes: [RUN_MIMETYPE],
    createRenderer: () => new RunOutput(options)
  };
}
