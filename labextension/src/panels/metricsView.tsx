import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import { MetricsModel } from './metricsModel';
import { MetricsPlot } from './metricsPlot';

/** Metrics: one trace per replica for the chosen metric, live. */
export class MetricsView extends ReactWidget {
  constructor(runId: string, interval: number) {
    super();
    this.addClass('jp-px-metrics-view');
    this.model = new MetricsModel(runId, interval, () => this.isVisible);
  }

  readonly model: MetricsModel;

  render(): JSX.Element {
    return <MetricsPlot model={this.model} />;
  }

  dispose(): void {
    this.model.dispose();
    super.dispose();
  }
}
