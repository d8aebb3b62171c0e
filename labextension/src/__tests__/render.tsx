import { ReactWidget } from '@jupyterlab/ui-components';
import { MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

import type { ISidebarActions } from '../sidebar/actions';

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

/** Render a sidebar section the way the sidebar does (a ReactWidget), synchronously. */
export function mount(element: JSX.Element): Widget {
  const widget = ReactWidget.create(element);
  React.act(() => {
    Widget.attach(widget, document.body);
    MessageLoop.sendMessage(widget, Widget.Msg.UpdateRequest);
  });
  return widget;
}

/** What the sidebar asks of the extension, doing nothing; `overrides` for what a test needs. */
export function actions(
  overrides: Partial<ISidebarActions> = {}
): ISidebarActions {
  return {
    submitActive: async () => undefined,
    activeNotebook: () => null,
    activeKernel: () => null,
    openLogs: () => undefined,
    openMetrics: () => undefined,
    openTensorBoard: () => undefined,
    stopRun: async () => undefined,
    openSweep: () => undefined,
    stopSweep: async () => undefined,
    deleteRuns: async () => undefined,
    compareRuns: null,
    ...overrides
  };
}

/**
 * The open dialog's text once it holds `expected` (within about 5 s). A dialog's header is a
 * ReactWidget of its own, rendered on a later update than its body and buttons: read at once on
 * a loaded machine, its text lacked the title.
 */
export async function dialogText(expected: string): Promise<string> {
  const text = () =>
    document.body.querySelector('.jp-Dialog')?.textContent ?? '';
  for (let tries = 0; tries < 100 && !text().includes(expected); tries++) {
    await new Promise(resolve => setTimeout(resolve, 50));
  }
  return text();
}
