import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ReactWidget, UseSignal } from '@jupyterlab/ui-components';
import { Panel, PanelLayout, Widget } from '@lumino/widgets';
import * as React from 'react';

import { LogsView } from '../panels/logsView';
import { MetricsModel } from '../panels/metricsModel';
import { MetricsPlot } from '../panels/metricsPlot';
import { TensorBoardView } from '../panels/tensorBoardView';
import { RunOutputModel } from './runOutputModel';
import {
  IRunOutputActions,
  ReplicaTable,
  RunOutputTab,
  RunOutputView
} from './runOutputView';
import { IRunPayload, readPayload, RUN_MIMETYPE } from './runMime';
import { SystemStrip } from './systemStrip';

/** What the renderer needs from the notebook it is in. */
export interface IRunOutputOptions {
  actions: IRunOutputActions;
  /** Seconds between reads of an unfinished run (the sidebar's refresh setting). */
  interval: number;
  /** The notebook's HTML renderer (sanitizing an untrusted output), for a deleted run's saved view. */
  createHtmlRenderer(): IRenderMime.IRenderer | null;
}

/** The card with its tabs: the tab chosen here, and the failing replica's log once a run fails. */
function Card(props: {
  model: RunOutputModel;
  actions: IRunOutputActions;
  onTab: (tab: RunOutputTab) => void;
}): JSX.Element {
  const [tab, setTab] = React.useState<RunOutputTab>('metrics');
  const failedShown = React.useRef(false);
  const choose = (next: RunOutputTab) => {
    setTab(next);
    props.onTab(next);
  };
  React.useEffect(() => {
    const follow = () => {
      if (!failedShown.current && props.model.view?.failure) {
        failedShown.current = true; // once: the user's own choice of tab wins afterwards
        choose('logs');
      }
    };
    follow();
    props.model.changed.connect(follow);
    return () => {
      props.model.changed.disconnect(follow);
    };
  }, [props.model]);
  return (
    <RunOutputView
      model={props.model}
      actions={props.actions}
      tab={tab}
      onTab={choose}
    />
  );
}

/**
 * The run's mimetype in a notebook (`runMime.ts`): in JupyterLab this renderer owns the run's
 * live view, whatever the kernel does. It follows the run as the server knows it now (the
 * view-model, `GET runs/<id>/view`): a running run keeps updating after a kernel restart, a saved
 * notebook reopened shows the run as it is, and a run outliving its last cell is never frozen.
 * Under the card, a tab's content: the metrics plot, the logs (a tab per replica, following the
 * newest line), the replicas' table; the TensorBoard the monitor had open. The ipywidgets monitor
 * in the same output serves front-ends without this extension (VS Code, the classic Notebook);
 * its static HTML is shown here only once the run is deleted (what the run left).
 */
export class RunOutput extends Widget implements IRenderMime.IRenderer {
  constructor(private options: IRunOutputOptions) {
    super();
    this.layout = new PanelLayout();
    this.addClass('jp-px-run-output-host');
  }

  /** What this output shows now. */
  shows: 'run' | 'problem' | null = null;

  /** The tab whose content is shown. */
  get tab(): RunOutputTab {
    return this._tab;
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const payload = readPayload(model.data[RUN_MIMETYPE]);
    if (typeof payload === 'string') {
      this._clear();
      this.shows = 'problem';
      const note = new Widget();
      note.addClass('jp-px-error');
      note.node.textContent = payload;
      (this.layout as PanelLayout).addWidget(note);
      return;
    }
    this._mime = model;
    if (this.shows === 'run' && this._model?.runId === payload.run_id) {
      // The same run (the monitor's final update): the view goes on as it is.
      this._model.payload = payload;
      if (payload.tensorboard) {
        this._showTensorBoard(payload.run_id);
      }
      return;
    }
    this._showRun(payload);
  }

  dispose(): void {
    this._clear();
    super.dispose();
  }

  private _showRun(payload: IRunPayload): void {
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
        <Card
          model={model}
          actions={this.options.actions}
          onTab={tab => this._select(tab)}
        />
      )
    );
    // Each replica's CPU and memory, always in sight (a busy rank beside idle ones), above the tabs.
    const strip = (this._strip = ReactWidget.create(
      <SystemStrip metrics={metrics} run={model} />
    ));
    strip.addClass('jp-px-run-output-system');
    layout.addWidget(strip);
    const body = (this._body = new Panel());
    body.addClass('jp-px-run-output-body');
    const plot = ReactWidget.create(
      <UseSignal signal={metrics.changed}>
        {() =>
          // A finished run that logged nothing: a line, not an empty plot.
          metrics.finished && metrics.loggedByTheCode().length === 0 ? (
            <div className="jp-px-note jp-px-run-output-no-metrics">
              no metrics were logged (jupyter_px.tracking.log_metrics)
            </div>
          ) : (
            <MetricsPlot
              model={metrics}
              attempts={() => model.view?.attempts ?? []}
            />
          )
        }
      </UseSignal>
    );
    plot.addClass('jp-px-run-output-metrics');
    const replicas = ReactWidget.create(
      <ReplicaTable model={model} actions={this.options.actions} />
    );
    replicas.addClass('jp-px-run-output-replicas');
    this._tabs = { metrics: plot, replicas };
    body.addWidget(plot);
    body.addWidget(replicas);
    layout.addWidget(body);
    if (payload.tensorboard) {
      this._showTensorBoard(payload.run_id);
    }
    this._select(this._tab);
    // A deleted run has no metrics nor TensorBoard: drop them, and show what the output saved.
    model.changed.connect(() => {
      if (model.gone && !this._savedShown) {
        this._savedShown = true;
        this._metrics?.dispose();
        this._metrics = null;
        this._board?.dispose();
        this._board = null;
        this._body?.hide();
        this._strip?.hide(); // the samples of a run that no longer exists
        this._showSaved();
      }
    });
  }

  private _select(tab: RunOutputTab): void {
    this._tab = tab;
    if (tab === 'logs' && !this._tabs.logs && this._model && this._body) {
      const logs = new LogsView(this._model.runId, this.options.interval);
      logs.addClass('jp-px-run-output-logs');
      this._tabs.logs = logs;
      this._body.addWidget(logs);
    }
    for (const [name, widget] of Object.entries(this._tabs)) {
      widget?.setHidden(name !== tab);
    }
    this.node.dataset.tab = tab;
  }

  private _showTensorBoard(runId: string): void {
    if (this._board) {
      return;
    }
    this._board = new TensorBoardView(runId);
    this._board.addClass('jp-px-run-output-tensorboard');
    (this.layout as PanelLayout).addWidget(this._board);
  }

  /** The output's static view (as saved when the run ended), under a fold. */
  private _showSaved(): void {
    const mime = this._mime;
    const html = mime?.data['text/html']
      ? this.options.createHtmlRenderer()
      : null;
    if (!mime || !html) {
      return;
    }
    const fold = new Widget({ node: document.createElement('details') });
    fold.addClass('jp-px-run-output-saved');
    const summary = document.createElement('summary');
    summary.textContent = 'As saved when the run ended';
    fold.node.appendChild(summary);
    fold.node.appendChild(html.node); // the renderer needs no lifecycle: it is disposed with the fold
    fold.disposed.connect(() => html.dispose());
    (this.layout as PanelLayout).addWidget(fold);
    void html.renderModel(mime);
  }

  private _clear(): void {
    this._model?.dispose();
    this._metrics?.dispose();
    this._model = null;
    this._metrics = null;
    this._board = null;
    this._body = null;
    this._strip = null;
    this._tabs = {};
    this._savedShown = false;
    this.shows = null;
    const layout = this.layout as PanelLayout;
    for (const child of [...layout.widgets]) {
      child.dispose();
    }
  }

  private _model: RunOutputModel | null = null;
  private _metrics: MetricsModel | null = null;
  private _board: TensorBoardView | null = null;
  private _body: Panel | null = null;
  private _strip: Widget | null = null;
  private _tabs: { [tab in RunOutputTab]?: Widget } = {};
  private _tab: RunOutputTab = 'metrics';
  private _mime: IRenderMime.IMimeModel | null = null;
  private _savedShown = false;
}

/** The factory registered on each notebook's rendermime (`output/plugin.ts`). */
export function runOutputFactory(
  options: IRunOutputOptions
): IRenderMime.IRendererFactory {
  return {
    safe: true, // it renders text from JSON with React; the saved HTML through the notebook's sanitizer
    mimeTypes: [RUN_MIMETYPE],
    createRenderer: () => new RunOutput(options)
  };
}
