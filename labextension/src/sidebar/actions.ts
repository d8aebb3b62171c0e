import type { Kernel } from '@jupyterlab/services';

/** What the sidebar asks of the rest of the extension (commands, the active notebook). */
export interface ISidebarActions {
  submitActive(options: {
    name: string;
    cells: 'all' | 'tagged';
  }): Promise<void>;
  activeNotebook(): string | null;
  activeKernel(): Kernel.IKernelConnection | null;
  openLogs(runId: string): void;
  openMetrics(runId: string): void;
  /** One TensorBoard for `runId` and the runs of `also` (the multi-select). */
  openTensorBoard(runId: string, also?: string[]): void;
  stopRun(runId: string): Promise<void>;
  /** Open the sweep's view in the main area (history, importance, parallel coordinates...). */
  openSweep(sweepId: string): void;
  /** Stop a sweep (asked for already): its running trials, then its controller. */
  stopSweep(sweepId: string): Promise<void>;
  /** Remove finished runs' directories (asked for already); resolves once the list is refreshed. */
  deleteRuns(runIds: string[]): Promise<void>;
  /** Open the comparison view of these runs; null when no comparison view is installed. */
  compareRuns: ((runIds: string[]) => void) | null;
}
