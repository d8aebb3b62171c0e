/** The extension's command ids (the settings schema's toolbar and context-menu entries name two). */
export namespace CommandIDs {
  export const openSidebar = 'jupyter-px:open-sidebar';
  export const submitNotebook = 'jupyter-px:submit-notebook';
  export const submitFile = 'jupyter-px:submit-file';
  export const openLogs = 'jupyter-px:open-logs';
  export const openMetrics = 'jupyter-px:open-metrics';
  export const openTensorBoard = 'jupyter-px:open-tensorboard';
  export const stopRun = 'jupyter-px:stop-run';
  export const deleteRuns = 'jupyter-px:delete-runs';
  export const stopSweep = 'jupyter-px:stop-sweep';
  /** A sweep's view in the main area (`{sweepId}`): what a tuner looks at. */
  export const openSweep = 'jupyter-px:open-sweep';
  /** The comparison view's command (`{runIds: string[]}`), registered by its own plugin part. */
  export const compareRuns = 'jupyter-px:compare-runs';
}
