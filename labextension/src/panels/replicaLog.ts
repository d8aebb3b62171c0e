import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import * as api from '../api';
import { viewPoll } from '../polling';

/** The most log text a tab keeps (its tail): a long run's log does not grow the page without end. */
const MAX_LOG_TEXT = 2 * 1024 * 1024;

/** The text positions where `query` occurs in `text` (case-insensitive), at most `limit`. */
export function findAll(text: string, query: string, limit = 10000): number[] {
  const found: number[] = [];
  if (!query) {
    return found;
  }
  const haystack = text.toLowerCase();
  const needle = query.toLowerCase();
  for (
    let at = haystack.indexOf(needle);
    at >= 0 && found.length < limit;
    at = haystack.indexOf(needle, at + needle.length)
  ) {
    found.push(at);
  }
  return found;
}

function checkbox(label: string, className: string, checked: boolean) {
  const wrapper = document.createElement('label');
  wrapper.className = className;
  const input = document.createElement('input');
  input.type = 'checkbox';
  input.checked = checked;
  wrapper.append(input, ` ${label}`);
  return { wrapper, input };
}

/**
 * One replica's log, read from a byte offset and followed live while visible; the poll stops once
 * the run has ended and everything has been read (`data-complete`). Its toolbar: Follow (keep
 * the newest line in view), Wrap (long lines), Search (matches counted, Enter goes to the next)
 * and Download (the whole log from the server, not only the tail the tab keeps).
 */
export class ReplicaLog extends Widget {
  constructor(
    private runId: string,
    readonly role: string,
    readonly index: number,
    interval: number
  ) {
    super();
    this.addClass('jp-px-log');
    this.title.label = `${role}-${index}`;
    this.node.dataset.replica = `${role}-${index}`;
    this.node.appendChild(this.toolbar());
    this._scroller = document.createElement('div');
    this._scroller.className = 'jp-px-log-scroller';
    this.node.appendChild(this._scroller);
    this._empty = document.createElement('div');
    this._empty.className = 'jp-px-log-empty';
    this._empty.textContent = 'No output yet.';
    this._scroller.appendChild(this._empty);
    this._pre = document.createElement('pre');
    this._scroller.appendChild(this._pre);
    this.poll = viewPoll({
      name: `jupyter-px:log:${runId}:${role}-${index}`,
      intervalSeconds: interval,
      isVisible: () => this.isVisible,
      factory: () => this.fetch()
    });
  }

  readonly poll: Poll;

  async fetch(): Promise<void> {
    for (let i = 0; i < 8; i++) {
      const chunk = await api.readLog(
        this.runId,
        this.role,
        this.index,
        this._offset
      );
      if (chunk.text) {
        this._empty.hidden = true;
        this._pre.textContent = (this._pre.textContent + chunk.text).slice(
          -MAX_LOG_TEXT
        );
        if (this._follow.checked) {
          this._scroller.scrollTop = this._scroller.scrollHeight;
        }
        this.countMatches();
      }
      const more = chunk.offset !== this._offset;
      this._offset = chunk.offset;
      if (!more) {
        if (chunk.finished) {
          if (!this._pre.textContent) {
            this._empty.textContent = `${this.role}-${this.index} wrote nothing to its log.`;
          }
          this.node.dataset.complete = 'true';
          this.poll.stop();
        }
        return;
      }
    }
  }

  /** The matches of the search box in the text shown, and which one is selected. */
  get matches(): { count: number; current: number } {
    return { count: this._matches.length, current: this._current };
  }

  /** Select the next match of the search (wrapping around) and bring it into view. */
  nextMatch(): void {
    if (!this._matches.length) {
      return;
    }
    this._current = (this._current + 1) % this._matches.length;
    const text = this._pre.firstChild;
    const start = this._matches[this._current];
    if (text && text.nodeType === Node.TEXT_NODE) {
      const range = document.createRange();
      if (range instanceof Range) {
        // Selected, so the browser shows it (and Ctrl+C copies it).
        range.setStart(text, start);
        range.setEnd(text, start + this._search.value.length);
        const selection = window.getSelection();
        selection?.removeAllRanges();
        selection?.addRange(range);
      }
      // Lines before the match, at the pre's line height: scroll so it is in view.
      const line =
        this._pre.textContent!.slice(0, start).split('\n').length - 1;
      const height = parseFloat(getComputedStyle(this._pre).lineHeight) || 16;
      this._follow.checked = false;
      this._scroller.scrollTop = Math.max(0, line * height - 40);
    }
    this.showCount();
  }

  /** The whole log, read from the server in chunks (the tab keeps only its tail). */
  async fullText(): Promise<string> {
    let text = '';
    let offset = 0;
    for (;;) {
      const chunk = await api.readLog(
        this.runId,
        this.role,
        this.index,
        offset
      );
      text += chunk.text;
      if (chunk.offset === offset) {
        return text;
      }
      offset = chunk.offset;
    }
  }

  async download(): Promise<void> {
    const blob = new Blob([await this.fullText()], { type: 'text/plain' });
    const link = document.createElement('a');
    link.href = URL.createObjectURL(blob);
    link.download = `${this.runId}-${this.role}-${this.index}.log`;
    document.body.appendChild(link);
    link.click();
    link.remove();
    window.setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  }

  private toolbar(): HTMLElement {
    const bar = document.createElement('div');
    bar.className = 'jp-px-log-toolbar';
    const follow = checkbox('Follow', 'jp-px-log-follow', true);
    follow.wrapper.title = 'Keep the newest lines in view';
    this._follow = follow.input;
    follow.input.addEventListener('change', () => {
      if (follow.input.checked) {
        this._scroller.scrollTop = this._scroller.scrollHeight;
      }
    });
    const wrap = checkbox('Wrap', 'jp-px-log-wrap', true);
    wrap.wrapper.title = 'Wrap long lines';
    wrap.input.addEventListener('change', () =>
      this._pre.classList.toggle('jp-mod-nowrap', !wrap.input.checked)
    );
    const search = document.createElement('input');
    search.type = 'search';
    search.className = 'jp-mod-styled jp-px-log-search';
    search.placeholder = 'Search';
    search.setAttribute('aria-label', 'Search the log');
    search.addEventListener('input', () => {
      this.countMatches();
      this._current = -1;
      this.nextMatch();
    });
    search.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        this.nextMatch();
      }
    });
    this._search = search;
    this._count = document.createElement('span');
    this._count.className = 'jp-px-log-count';
    const download = document.createElement('button');
    download.className = 'jp-px-link jp-px-log-download';
    download.textContent = 'Download';
    download.title = 'The whole log, as a file';
    download.addEventListener('click', () => void this.download());
    bar.append(follow.wrapper, wrap.wrapper, search, this._count, download);
    return bar;
  }

  private countMatches(): void {
    this._matches = findAll(this._pre.textContent ?? '', this._search.value);
    if (this._current >= this._matches.length) {
      this._current = -1;
    }
    this.showCount();
  }

  private showCount(): void {
    const count = this._matches.length;
    this._count.textContent = !this._search.value
      ? ''
      : count === 0
        ? 'no match'
        : `${this._current + 1} of ${count}`;
  }

  dispose(): void {
    this.poll.dispose();
    super.dispose();
  }

  private _scroller: HTMLDivElement;
  private _follow!: HTMLInputElement;
  private _search!: HTMLInputElement;
  private _count!: HTMLSpanElement;
  private _matches: number[] = [];
  private _current = -1;
  private _pre: HTMLPreElement;
  private _empty: HTMLDivElement;
  private _offset = 0;
}
