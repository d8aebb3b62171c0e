import { ISignal, Signal } from '@lumino/signaling';

import type { ISidebarActions } from './actions';

/**
 * What the Submit section holds (the run's name, which cells, the last outcome), shared with the
 * topology card's Run button and Enter in a valid form, so every way of running reads one name.
 */
export class SubmitState {
  constructor(private actions: ISidebarActions) {}

  name = '';
  cells: 'all' | 'tagged' = 'all';
  busy = false;
  error: string | null = null;
  done: string | null = null;
  /** The notebook the outcome is about: another notebook active does not show it. */
  outcomeFor: string | null = null;

  /** The last outcome, when it is about the notebook active now (else nothing: it would be stale). */
  outcome(): { error: string | null; done: string | null } {
    return this.outcomeFor === this.actions.activeNotebook()
      ? { error: this.error, done: this.done }
      : { error: null, done: null };
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  update(change: Partial<Pick<SubmitState, 'name' | 'cells'>>): void {
    Object.assign(this, change);
    this._changed.emit();
  }

  /** Submit the active notebook; the name clears after a submit (the next run names itself). */
  async run(): Promise<void> {
    if (this.busy) {
      return;
    }
    this.busy = true;
    this.error = null;
    this.done = null;
    this.outcomeFor = this.actions.activeNotebook();
    this._changed.emit();
    try {
      await this.actions.submitActive({ name: this.name, cells: this.cells });
      this.name = '';
      this.done = 'submitted: see Runs below';
    } catch (error) {
      this.error = (error as Error).message;
    } finally {
      this.busy = false;
      this._changed.emit();
    }
  }

  private _changed = new Signal<this, void>(this);
}
