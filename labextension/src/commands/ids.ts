/** The extension's command ids (the settings schema's toolbar and context-menu entries name two). */
export namespace CommandIDs {
  export const openSidebar = 'jupyter-px:open-sidebar';
  export const submitNotebook = 'jupyter-px:submit-notebook';
  export const submitFile = 'jupyter-px:submit-file';
  export const openLogs = 'jupyter-px:open-logs';
  export const openMetrics = 'jupyter-px:open-metrics';
  export const openTensorBoard = 'jupyter-px:open-tensorboard';
  export const stopRun = 'jupyter-px:stop-run';
}
