import type { IStateDB } from '@jupyterlab/statedb';
import { ISignal, Signal } from '@lumino/signaling';

import * as api from './api';
import { loadedFromLine, notebookTopology } from './notebookTopology';
import { ApiError, IProblem } from './request';
import {
  formSchema,
  fromTopology,
  initialTopology,
  problemsToErrorSchema,
  toTopology
} from './topology';
import type { IValidation } from './types';

type JSONObject = { [key: string]: any };

const STATE_PREFIX = 'jupyter-px:topology:';

/**
 * The sidebar's topology: the form's data, the server's verdict on it, and where it is kept
 * (per notebook, in the state database). Validation is live but debounced: the server (the
 * model's single definition) answers, and its problems become messages beside the fields.
 *
 * Opening a notebook loads its `%%px_topology` cell into the form, unless the user has edited
 * the form for that notebook: their edits are kept (and only they are saved), and
 * `loadedFrom` says which of the two the form shows.
 */
export class TopologyModel {
  constructor(
    private state: IStateDB | null,
    defaultBackend: string
  ) {
    this.formData = initialTopology(defaultBackend);
  }

  modelSchema: JSONObject | null = null;
  schema: JSONObject | null = null;
  formData: JSONObject;
  validation: IValidation | null = null;
  errorSchema: JSONObject = {};
  loadError: string | null = null;
  notebook: string | null = null;
  /** Where the form's topology came from, for the line above the form (null: nothing to say). */
  loadedFrom: string | null = null;
  /**
   * Whether the "Overrides, images, processes" section is open: its fields print their problems
   * only then, so only then does the verdict leave them out of its list.
   */
  advancedOpen = false;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The topology as the server will read it (what Submit sends). */
  get topology(): JSONObject {
    return toTopology(this.formData);
  }

  get valid(): boolean {
    return this.validation?.valid === true;
  }

  get problems(): IProblem[] {
    return this.validation?.problems ?? [];
  }

  async load(): Promise<void> {
    try {
      this.modelSchema = await api.topologySchema();
      this.schema = formSchema(this.modelSchema);
      this.loadError = null;
    } catch (error) {
      this.loadError = `the topology schema could not be loaded: ${(error as Error).message}`;
    }
    this._changed.emit();
    await this.validate();
  }

  /** The user changed the form (a field, a button in it, an import): theirs from now on. */
  markEdited(): void {
    if (this._edited) {
      return;
    }
    this._edited = true;
    if (this.notebook) {
      this.loadedFrom = `your edits for ${baseName(this.notebook)}`;
      this._changed.emit();
    }
  }

  get edited(): boolean {
    return this._edited;
  }

  setAdvancedOpen(open: boolean): void {
    if (open !== this.advancedOpen) {
      this.advancedOpen = open;
      this._changed.emit();
    }
  }

  setFormData(data: JSONObject): void {
    this.formData = data;
    this._changed.emit();
    this.scheduleValidation();
  }

  scheduleValidation(delay = 300): void {
    window.clearTimeout(this._timer);
    this._timer = window.setTimeout(() => {
      this._timer = 0;
      void this.validate();
    }, delay);
  }

  /**
   * The server's verdict on the form as it is now. Validation is debounced, so right after a
   * keystroke `validation` still judges the previous value: then the pending check is done at
   * once (Enter typed straight after a new worker count runs only if that count is valid).
   */
  async verdict(): Promise<IValidation | null> {
    if (
      this._timer !== 0 ||
      this._answered !== this._ticket ||
      !this.validation
    ) {
      window.clearTimeout(this._timer);
      this._timer = 0;
      return this.validate();
    }
    return this.validation;
  }

  /** Ask the server; a newer request wins over an older one that answers late. */
  async validate(): Promise<IValidation | null> {
    const ticket = ++this._ticket;
    let result: IValidation;
    try {
      result = await api.validateTopology(this.topology);
    } catch (error) {
      result = {
        valid: false,
        message: (error as Error).message,
        problems: error instanceof ApiError ? error.problems : []
      };
    }
    if (ticket !== this._ticket) {
      return this.validation;
    }
    this._answered = ticket;
    this.validation = result;
    this.errorSchema = problemsToErrorSchema(
      result.problems ?? [],
      this.schema ?? undefined
    );
    this._changed.emit();
    if (result.valid && this._edited && this.notebook && this.state) {
      await this.state.save(STATE_PREFIX + this.notebook, this.formData as any);
    }
    return result;
  }

  /**
   * Follow the active notebook (`sources`: its cells' texts, null for non-code cells): the
   * user's edits for it come back; else its `%%px_topology` cell is loaded; else the form keeps
   * what it shows.
   */
  async setNotebook(
    path: string | null,
    sources: (string | null)[] = []
  ): Promise<void> {
    if (path === this.notebook) {
      return;
    }
    this.notebook = path;
    this._edited = false;
    this.loadedFrom = null;
    if (path && this.state) {
      const saved = await this.state.fetch(STATE_PREFIX + path);
      if (this.notebook !== path) {
        return;
      }
      if (saved && typeof saved === 'object') {
        this._edited = true;
        this.loadedFrom = `your edits for ${baseName(path)}`;
        await this.replaceForm(saved as JSONObject);
        return;
      }
    }
    const declared = path ? notebookTopology(sources) : null;
    if (path && declared) {
      let answer: IValidation;
      try {
        answer = await api.validateTopology(declared.yaml);
      } catch (error) {
        answer = { valid: false, message: (error as Error).message };
      }
      if (this.notebook !== path || this._edited) {
        return;
      }
      if (answer.valid && answer.topology) {
        this.loadedFrom = loadedFromLine(path, declared);
        await this.replaceForm(fromTopology(answer.topology));
        return;
      }
      const problems = (answer.problems ?? [])
        .map(p => (p.path ? `${p.path}: ${p.message}` : p.message))
        .join('; ');
      this.loadedFrom =
        `the topology ${loadedFromLine(path, declared)} does not validate ` +
        `(${problems || answer.message}); the form is unchanged`;
    }
    this._changed.emit();
  }

  /**
   * Another notebook's form: the verdict on the previous form is dropped at once (it showed its
   * problems beside the new notebook's fields until the debounced check answered) and the new
   * form is checked without waiting.
   */
  private async replaceForm(data: JSONObject): Promise<void> {
    window.clearTimeout(this._timer);
    this._timer = 0;
    this._ticket++; // an answer still on its way is about the previous form
    this.formData = data;
    this.validation = null;
    this.errorSchema = {};
    this._changed.emit();
    await this.validate();
  }

  /** Replace the form with a topology in any accepted form (YAML text or an object). */
  async importTopology(topology: string | JSONObject): Promise<IValidation> {
    const result = await api.validateTopology(topology);
    if (result.valid && result.topology) {
      this.markEdited();
      this.setFormData(fromTopology(result.topology));
    }
    return result;
  }

  dispose(): void {
    window.clearTimeout(this._timer);
  }

  private _changed = new Signal<this, void>(this);
  private _timer = 0;
  private _ticket = 0;
  /** The ticket whose answer `validation` holds. */
  private _answered = 0;
  private _edited = false;
}

function baseName(path: string): string {
  return path.split('/').pop() ?? path;
}
