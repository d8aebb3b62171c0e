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
  openTensorBoard(runId: string): void;
  stopRun(runId: string): Promise<void>;
}
