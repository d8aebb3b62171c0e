import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { SidePanel } from '@jupyterlab/ui-components';

import { pxIcon } from './icons';

const PLUGIN_ID = 'jupyter-px:plugin';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Define a distributed-training topology, submit notebooks and follow runs.',
  autoStart: true,
  optional: [ILayoutRestorer],
  activate: (app: JupyterFrontEnd, restorer: ILayoutRestorer | null) => {
    const panel = new SidePanel();
    panel.id = 'jupyter-px-sidebar';
    panel.title.icon = pxIcon;
    panel.title.caption = 'Distributed runs';
    app.shell.add(panel, 'left', { rank: 210 });
    restorer?.add(panel, panel.id);
  }
};

export default plugin;
