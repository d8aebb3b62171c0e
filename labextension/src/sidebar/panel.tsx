import { ReactWidget, SidePanel } from '@jupyterlab/ui-components';
import type { Message } from '@lumino/messaging';
import { AccordionPanel } from '@lumino/widgets';
import * as React from 'react';

import { pxIcon } from '../icons';
import type { RunsModel } from '../runsModel';
import type { TopologyModel } from '../topologyModel';
import type { ISidebarActions } from './actions';
import { RunsList } from './runsList';
import { SubmitForm } from './submitForm';
import { SubmitState } from './submitState';
import { TopologyForm } from './topologyForm';

/** The left-sidebar panel: Topology, Submit, Runs sections. */
export class PxSidebar extends SidePanel {
  constructor(
    topology: TopologyModel,
    runs: RunsModel,
    actions: ISidebarActions
  ) {
    super();
    this.id = 'jupyter-px-sidebar';
    this.addClass('jp-px-sidebar');
    this.title.icon = pxIcon;
    this.title.caption = 'Distributed runs';

    const submitState = new SubmitState(actions);
    const form = ReactWidget.create(
      <TopologyForm model={topology} actions={actions} submit={submitState} />
    );
    form.title.label = 'Topology';
    form.addClass('jp-px-section-topology');
    const submit = ReactWidget.create(
      <SubmitForm submit={submitState} model={topology} actions={actions} />
    );
    submit.title.label = 'Submit';
    submit.addClass('jp-px-section-submit');
    const list = ReactWidget.create(
      <RunsList model={runs} actions={actions} />
    );
    list.title.label = 'Runs';
    list.addClass('jp-px-section-runs');
    this.addWidget(form);
    this.addWidget(submit);
    this.addWidget(list);
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    // The form needs the room; Submit is a few lines.
    (this.content as AccordionPanel).setRelativeSizes([5, 2, 4]);
  }
}
