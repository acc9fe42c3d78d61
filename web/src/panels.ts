// The side panel: filters (checkboxes and an expression), search, and the
// statistics of the selected or visible range.

import { ApiError, getEvents, getStats, isAbort, makeFilter, search, type EventLine, type Row } from './api';
import { byteToCharOffset, byId, el, formatCount, formatDuration, formatTimeOfDay } from './format';
import { Serial } from './serial';
import type { State } from './state';

/** Shows an API error; for an expression error, the expression with a caret under its position. */
export function showExprError(box: HTMLElement, expr: string, e: unknown): void {
  box.hidden = false;
  const message = el('div', { class: 'expr-message' }, e instanceof Error ? e.message : String(e));
  if (e instanceof ApiError && e.position !== null) {
    const at = byteToCharOffset(expr, e.position);
    const pre = el('pre', { class: 'expr-caret' }, `${expr}\n${' '.repeat(at)}^\n`);
    box.replaceChildren(pre, message);
    // A long expression scrolls: show the caret.
    if (pre.scrollWidth > pre.clientWidth) {
      pre.scrollLeft = (at / Math.max(1, expr.length)) * pre.scrollWidth - pre.clientWidth / 2;
    }
  } else {
    box.replaceChildren(message);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// --- Filters --------------------------------------------------------------------------------

export interface FilterCallbacks {
  /** Rows were hidden or shown (client-side, at once). */
  rowsHidden(): void;
  /** A new filter is ready (or none is in use any more). */
  filterChanged(): void;
}

/** A checkbox list in a collapsible section, built when first opened. */
class CheckSection {
  readonly details: HTMLDetailsElement;
  private body: HTMLElement;
  private narrow: HTMLInputElement | null = null;
  private items: { key: string; label: string }[] = [];
  private built = false;

  constructor(
    parent: HTMLElement,
    title: string,
    private isShown: (key: string) => boolean,
    private setShown: (keys: string[], shown: boolean) => void,
    searchable: boolean,
  ) {
    this.details = el('details', { class: 'checks' });
    const summary = el('summary', {}, title);
    this.body = el('div', { class: 'check-body' });
    const tools = el('div', { class: 'check-tools' });
    const all = el('button', { type: 'button' }, 'all');
    const none = el('button', { type: 'button' }, 'none');
    all.onclick = () => this.setShown(this.matching(), true);
    none.onclick = () => this.setShown(this.matching(), false);
    tools.append(all, none);
    if (searchable) {
      this.narrow = el('input', { type: 'search', placeholder: 'narrow…' });
      this.narrow.oninput = () => this.build();
      tools.append(this.narrow);
    }
    this.details.append(summary, tools, this.body);
    this.details.addEventListener('toggle', () => {
      if (this.details.open && !this.built) this.build();
    });
    parent.appendChild(this.details);
  }

  private matching(): string[] {
    const q = this.narrow?.value.toLowerCase() ?? '';
    return this.items.filter((i) => !q || i.label.toLowerCase().includes(q)).map((i) => i.key);
  }

  setItems(items: { key: string; label: string }[]): void {
    const same =
      items.length === this.items.length && items.every((x, i) => x.key === this.items[i]!.key && x.label === this.items[i]!.label);
    this.items = items;
    this.details.querySelector('summary')!.dataset['count'] = String(items.length);
    this.details.hidden = items.length === 0;
    if (!same) {
      this.built = false;
      if (this.details.open) this.build();
    }
  }

  /** Refreshes the boxes' states (after all/none, or a change elsewhere). */
  sync(): void {
    for (const box of this.body.querySelectorAll<HTMLInputElement>('input[type=checkbox]')) {
      box.checked = this.isShown(box.value);
    }
  }

  private build(): void {
    this.built = true;
    const q = this.narrow?.value.toLowerCase() ?? '';
    const frag = document.createDocumentFragment();
    let n = 0;
    const LIMIT = 2000;
    for (const it of this.items) {
      if (q && !it.label.toLowerCase().includes(q)) continue;
      if (++n > LIMIT) {
        frag.appendChild(el('div', { class: 'more' }, `… ${this.items.length - LIMIT} more: narrow the list`));
        break;
      }
      const label = el('label');
      const box = el('input', { type: 'checkbox', value: it.key });
      box.checked = this.isShown(it.key);
      box.onchange = () => this.setShown([it.key], box.checked);
      label.append(box, document.createTextNode(` ${it.label}`));
      frag.appendChild(label);
    }
    this.body.replaceChildren(frag);
  }
}

export class FiltersPanel {
  private cpus: CheckSection;
  private procs: CheckSection;
  private threads: CheckSection;
  private groups: CheckSection;
  private names: CheckSection;
  private expr: HTMLInputElement;
  private error: HTMLElement;
  private status: HTMLElement;
  private applyTimer: number | null = null;
  private applying = 0;
  private applyToken = 0;

  constructor(
    root: HTMLElement,
    private state: State,
    private cb: FilterCallbacks,
  ) {
    this.expr = byId<HTMLInputElement>('filter-expr');
    this.error = byId('filter-error');
    this.status = byId('filter-status');
    byId('filter-apply').addEventListener('click', () => void this.apply());
    this.expr.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') void this.apply();
    });
    byId('filter-clear').addEventListener('click', () => {
      this.expr.value = '';
      this.state.hiddenRows.clear();
      this.state.hiddenClasses.clear();
      this.syncAll();
      this.cb.rowsHidden();
      void this.apply();
    });
    const rowsShown = (ids: number[]): boolean => ids.some((id) => !this.state.hiddenRows.has(id));
    const setRows = (ids: number[], shown: boolean): void => {
      for (const id of ids) {
        if (shown) this.state.hiddenRows.delete(id);
        else this.state.hiddenRows.add(id);
      }
      this.syncAll();
      this.cb.rowsHidden();
      this.scheduleApply();
    };
    const classesOf = (pred: (i: number) => boolean): number[] => {
      const out: number[] = [];
      (this.state.info?.classes ?? []).forEach((_, i) => {
        if (pred(i)) out.push(i);
      });
      return out;
    };
    const setClasses = (ids: number[], shown: boolean): void => {
      for (const id of ids) {
        if (shown) this.state.hiddenClasses.delete(id);
        else this.state.hiddenClasses.add(id);
      }
      this.syncAll();
      this.scheduleApply();
    };
    const classesShown = (ids: number[]): boolean => ids.some((id) => !this.state.hiddenClasses.has(id));
    const groupClasses = (g: string): number[] => classesOf((i) => this.state.info?.class_groups[i] === g);
    const nameClasses = (n: string): number[] => classesOf((i) => this.state.info?.classes[i] === n);
    const procRows = (pid: string): number[] =>
      this.state.rows.filter((r) => r.kind === 'thread' && String(r.pid) === pid).map((r) => r.id);

    this.cpus = new CheckSection(
      root,
      'CPUs',
      (k) => rowsShown([+k]),
      (ks, s) => setRows(ks.map(Number), s),
      false,
    );
    this.procs = new CheckSection(
      root,
      'Processes',
      (k) => rowsShown(procRows(k)),
      (ks, s) => setRows(ks.flatMap(procRows), s),
      true,
    );
    this.threads = new CheckSection(
      root,
      'Threads / streams',
      (k) => rowsShown([+k]),
      (ks, s) => setRows(ks.map(Number), s),
      true,
    );
    this.groups = new CheckSection(
      root,
      'Subsystems',
      (g) => classesShown(groupClasses(g)),
      (gs, s) => setClasses(gs.flatMap(groupClasses), s),
      false,
    );
    this.names = new CheckSection(
      root,
      'Event names',
      (n) => classesShown(nameClasses(n)),
      (ns, s) => setClasses(ns.flatMap(nameClasses), s),
      true,
    );
  }

  busy(): boolean {
    return this.applying > 0 || this.applyTimer !== null;
  }

  /** The expression in the box. */
  expression(): string {
    return this.expr.value.trim();
  }

  /** Sets the expression and the rows and classes hidden (a shared link), and applies them. */
  async restore(expr: string, hideRows: number[], hideClasses: number[]): Promise<void> {
    this.expr.value = expr;
    for (const id of hideRows) this.state.hiddenRows.add(id);
    for (const id of hideClasses) this.state.hiddenClasses.add(id);
    this.syncAll();
    if (hideRows.length) this.cb.rowsHidden();
    await this.apply();
  }

  private syncAll(): void {
    for (const s of [this.cpus, this.procs, this.threads, this.groups, this.names]) s.sync();
  }

  /** The rows or the classes changed (while the trace is indexed). */
  update(): void {
    const rows = this.state.rows;
    const byNum = (f: (r: Row) => number) => (a: Row, b: Row) => f(a) - f(b);
    this.cpus.setItems(
      rows
        .filter((r) => r.kind === 'cpu')
        .sort(byNum((r) => r.cpu ?? r.id))
        .map((r) => ({ key: String(r.id), label: r.label })),
    );
    const procs = new Map<number, string>();
    for (const r of rows) if (r.kind === 'thread' && r.pid !== undefined && r.pid !== null && !procs.has(r.pid)) procs.set(r.pid, r.process ?? `process ${r.pid}`);
    this.procs.setItems([...procs].sort((a, b) => a[0] - b[0]).map(([pid, label]) => ({ key: String(pid), label })));
    this.threads.setItems(
      rows
        .filter((r) => r.kind !== 'cpu')
        .sort(byNum((r) => r.tid ?? r.stream ?? r.id))
        .map((r) => ({ key: String(r.id), label: r.label })),
    );
    const info = this.state.info;
    if (info) {
      this.groups.setItems([...new Set(info.class_groups)].sort().map((g) => ({ key: g, label: g })));
      this.names.setItems([...new Set(info.classes)].sort().map((n) => ({ key: n, label: n })));
    }
  }

  private scheduleApply(): void {
    if (this.applyTimer !== null) clearTimeout(this.applyTimer);
    this.applyTimer = window.setTimeout(() => {
      this.applyTimer = null;
      void this.apply();
    }, 400);
  }

  /** Makes the filter (expression + hidden rows and classes), waits until it is ready, uses it. */
  async apply(): Promise<void> {
    if (this.applyTimer !== null) {
      clearTimeout(this.applyTimer);
      this.applyTimer = null;
    }
    const token = ++this.applyToken;
    const expr = this.expr.value.trim();
    const hideClasses = [...this.state.hiddenClasses].sort((a, b) => a - b);
    const hideRows = [...this.state.hiddenRows].sort((a, b) => a - b);
    this.error.hidden = true;
    this.error.textContent = '';
    if (!expr && !hideClasses.length && !hideRows.length) {
      this.status.textContent = '';
      if (this.state.filterId !== null) {
        this.state.filterId = null;
        this.cb.filterChanged();
      }
      return;
    }
    this.applying++;
    try {
      this.status.textContent = 'building the filter…';
      for (;;) {
        const f = await makeFilter(expr, hideClasses, hideRows);
        if (token !== this.applyToken) return;
        if (f.state === 'ready') {
          this.status.textContent = `filter ${f.id} in use`;
          if (this.state.filterId !== f.id) {
            this.state.filterId = f.id;
            this.cb.filterChanged();
          }
          return;
        }
        if (f.state === 'error') {
          this.status.textContent = 'the filter failed';
          return;
        }
        const p = f.progress;
        this.status.textContent =
          p && p.total ? `building the filter… ${Math.floor((100 * p.done) / p.total)}%` : 'building the filter…';
        await sleep(300);
        if (token !== this.applyToken) return;
      }
    } catch (e) {
      if (token === this.applyToken) {
        this.status.textContent = '';
        showExprError(this.error, expr, e);
      }
    } finally {
      this.applying--;
    }
  }
}

// --- Search -----------------------------------------------------------------------------------

export interface SearchCallbacks {
  /** Show the event found: select it in the list, centre the timeline. */
  found(hit: EventLine): Promise<void>;
}

export class SearchPanel {
  private expr: HTMLInputElement;
  private status: HTMLElement;
  private error: HTMLElement;
  private busyCount = 0;

  constructor(
    private state: State,
    private cb: SearchCallbacks,
  ) {
    this.expr = byId<HTMLInputElement>('search-expr');
    this.status = byId('search-status');
    this.error = byId('search-error');
    byId('search-next').addEventListener('click', () => void this.go(false));
    byId('search-prev').addEventListener('click', () => void this.go(true));
    this.expr.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') void this.go(e.shiftKey);
    });
  }

  busy(): boolean {
    return this.busyCount > 0;
  }

  /**
   * Searches the list (of the filter in use) from the selected event (or
   * from the start of the view): the next match is at or after (t, skip + 1),
   * the previous one strictly before (t, skip).
   */
  async go(back: boolean): Promise<void> {
    const expr = this.expr.value;
    this.error.hidden = true;
    this.status.textContent = 'searching…';
    this.status.classList.remove('not-found');
    this.busyCount++;
    try {
      const s = this.state.selected;
      const from = s && s.index !== null ? s.t : Math.max(0, Math.floor(this.state.view.from));
      const skip = s && s.index !== null ? s.skip + (back ? 0 : 1) : 0;
      const hit = await search(expr, from, skip, back, this.state.filterId);
      if (!hit) {
        this.status.textContent = back ? 'not found (before the selection)' : 'not found (after the selection)';
        this.status.classList.add('not-found');
        return;
      }
      await this.cb.found(hit);
      this.status.textContent = `found at ${formatTimeOfDay(this.state.originTod + hit.t)}`;
    } catch (e) {
      this.status.textContent = '';
      if (!isAbort(e)) showExprError(this.error, expr, e);
    } finally {
      this.busyCount--;
    }
  }
}

// --- Statistics ---------------------------------------------------------------------------------

export class StatsPanel {
  private timer: number | null = null;
  /** The request in flight: the server cannot be told to stop, so there is only ever one. */
  private serial = new Serial(
    () => this.update(),
    (e) => {
      this.box.textContent = `statistics: ${e instanceof Error ? e.message : String(e)}`;
    },
  );
  /** Counting per event name on a click. */
  private counting = false;
  /** When the pending refresh was first asked for. */
  private since = 0;
  private last = '';

  constructor(
    private box: HTMLElement,
    private state: State,
  ) {}

  busy(): boolean {
    return this.timer !== null || this.serial.busy() || this.counting;
  }

  /**
   * The view, the selection or the filter changed: refresh after a pause
   * (at least once a second while changes keep coming: a live trace).
   */
  schedule(): void {
    const now = performance.now();
    if (this.timer !== null) {
      if (now - this.since >= 1000) return;
      clearTimeout(this.timer);
    } else this.since = now;
    this.timer = window.setTimeout(() => {
      this.timer = null;
      this.serial.ask();
    }, 400);
  }

  /**
   * The range's event count comes from the list's positions (two quick
   * /api/events answers: `before` at each end); the count per event name
   * from /api/stats, which reads every event of the range: asked for at
   * once up to AUTO_STATS events, on a click beyond.
   */
  private async update(): Promise<void> {
    const r = this.state.range ?? this.state.view;
    const from = Math.max(0, Math.floor(r.from));
    const to = Math.max(from + 1, Math.ceil(r.to));
    const filter = this.state.filterId;
    const key = `${from}|${to}|${filter}|${this.state.generation}`;
    if (key === this.last) return;
    const [a, b] = await Promise.all([getEvents(from, 1, 0, false, filter), getEvents(to, 1, 0, false, filter)]);
    const count = b.before - a.before;
    this.last = key;
    const dur = to - from;
    const tod = (t: number): string => formatTimeOfDay(this.state.originTod + t);
    const head = el('div', { class: 'stats-head' });
    head.append(
      el('div', {}, `${this.state.range ? 'selection' : 'visible range'}: ${tod(from)} – ${tod(to)}`),
      el('div', {}, `duration: ${formatDuration(dur)}`),
      el('div', { class: 'stats-events' }, `events: ${formatCount(count)}`),
      el('div', {}, `rate: ${(count / (dur / 1e9)).toFixed(1)} /s`),
    );
    const table = el('div', { class: 'stats-names' });
    this.box.replaceChildren(head, table);
    const names = async (): Promise<void> => {
      table.textContent = 'counting…';
      const s = await getStats(from, to, filter);
      if (this.last !== key) return;
      table.replaceChildren(namesTable(s.event_names ?? [], dur));
    };
    if (this.state.info?.state === 'building' && !this.state.info.live) {
      // A pass over the events would slow the indexing down.
      table.textContent = 'per event name: once the index is built';
    } else if (count <= AUTO_STATS) {
      await names();
    } else {
      const button = el('button', { type: 'button' }, `Count per event name (reads ${formatCount(count)} events)`);
      button.onclick = () => {
        this.counting = true;
        names()
          .catch((e: unknown) => {
            table.textContent = `statistics: ${e instanceof Error ? e.message : String(e)}`;
          })
          .finally(() => {
            this.counting = false;
          });
      };
      table.replaceChildren(button);
    }
  }
}

/** Up to this many events, the statistics per event name are asked for without a click. */
export const AUTO_STATS = 2_000_000;

function namesTable(names: { name: string; count: number }[], durationNs: number): HTMLTableElement {
  const table = el('table', { class: 'stats-table' });
  const hr = table.createTHead().insertRow();
  for (const h of ['event', 'count', 'rate /s']) hr.appendChild(el('th', {}, h));
  const body = table.createTBody();
  for (const n of names) {
    const tr = body.insertRow();
    tr.insertCell().textContent = n.name;
    tr.insertCell().textContent = formatCount(n.count);
    tr.insertCell().textContent = (n.count / (durationNs / 1e9)).toFixed(1);
  }
  return table;
}
