import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { ICommandPalette } from '@jupyterlab/apputils';

import { pxIcon } from '../icons';
import { CommandIDs } from './ids';

/** The command that opens the sidebar, and the palette's entries (it and Run distributed). */
export function addSidebarCommands(
  app: JupyterFrontEnd,
  palette: ICommandPalette | null
): void {
  app.commands.addCommand(CommandIDs.openSidebar, {
    label: 'Distributed runs: open the sidebar',
    icon: pxIcon,
    execute: () => app.shell.activateById('jupyter-px-sidebar')
  });
  if (palette) {
    const category = 'Distributed runs';
    palette.addItem({ command: CommandIDs.submitNotebook, category });
    palette.addItem({ command: CommandIDs.openSidebar, category });
  }
}
