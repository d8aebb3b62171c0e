import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { PanelLayout, Widget } from '@lumino/widgets';

import { COMPARE_POINTS, CompareView } from '../panels/compareView';

/** `jupyter_px.compare(...)`'s mimetype (`jupyter_px/compare/notebook.py`). */
export const COMPARE_MIMETYPE = 'application/vnd.jupyter-px.compare+json';

export interface IComparePayload {
  version: number;
  runs: string[];
  /** "main": the output that shows the panel; the comparison's other outputs show nothing. */
  part: string;
  metrics?: string[];
  optimization?: { [metric: string]: 'min' | 'max' };
  /** The older spelling, in notebooks saved before `optimization`. */
  optimisation?: { [metric: string]: 'min' | 'max' };
  all_params?: boolean;
}

/**
 * A comparison in a notebook, in JupyterLab: the comparison panel itself (the sidebar's, reading
 * the server), in the output of its first part; the other parts (the table, the params' figure
 * other front-ends show) render nothing here, since the panel holds them.
 */
export class CompareOutput extends Widget implements IRenderMime.IRenderer {
  constructor(
    /** Opens one TensorBoard over the runs in a panel, as the sidebar's TensorBoard does. */
    private openTensorBoard: ((runIds: string[]) => void) | null = null
  ) {
    super();
    this.layout = new PanelLayout();
    this.addClass('jp-px-compare-output');
  }

  async renderModel(mime: IRenderMime.IMimeModel): Promise<void> {
    const payload = mime.data[COMPARE_MIMETYPE] as IComparePayload | undefined;
    const layout = this.layout as PanelLayout;
    const key = JSON.stringify(payload ?? null);
    if (key === this._key) {
      return;
    }
    this._key = key;
    for (const child of [...layout.widgets]) {
      child.dispose();
    }
    const runs = Array.isArray(payload?.runs) ? payload!.runs.map(String) : [];
    if (
      payload?.version !== 1 ||
      payload.part !== 'main' ||
      runs.length === 0
    ) {
      this.node.dataset.part = String(payload?.part ?? 'none');
      return;
    }
    this.node.dataset.part = 'main';
    layout.addWidget(
      new CompareView(
        runs,
        COMPARE_POINTS,
        {
          metrics: payload.metrics,
          optimization: payload.optimization ?? payload.optimisation,
          all_params: payload.all_params
        },
        this.openTensorBoard
      )
    );
  }

  private _key = '';
}

export function compareOutputFactory(
  openTensorBoard: ((runIds: string[]) => void) | null = null
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [COMPARE_MIMETYPE],
    createRenderer: () => new CompareOutput(openTensorBoard)
  };
}
