// The Analyses tab (kernel traces): the tables of `reef cputop`,
// `syscallstats`, `irqstats`, `schedstats`, `iolatency` and `memtop` over
// the selected range, else the visible one, from /api/analysis (the
// commands' own LAMI output, so the numbers are theirs).

import { getAnalysis, isAbort, type AnalysisAnswer, type AnalysisOptions, type LamiCell, type LamiColumn } from './api';
import { el, formatDuration, formatTimeOfDay } from './format';
import type { State } from './state';

interface Analysis {
  name: string;
  label: string;
  limit: boolean;
  groups: boolean;
}

export const ANALYSES: Analysis[] = [
  { name: 'cputop', label: 'CPU usage (cputop)', limit: true, groups: false },
  { name: 'syscallstats', label: 'System calls (syscallstats)', limit: false, groups: false },
  { name: 'irqstats', label: 'Interrupts (irqstats)', limit: false, groups: false },
  { name: 'schedstats', label: 'Scheduling latency (schedstats)', limit: false, groups: true },
  { name: 'iolatency', label: 'I/O latency (iolatency)', limit: false, groups: false },
  { name: 'memtop', label: 'Memory pages (memtop)', limit: true, groups: false },
];

/** An analysis that took less than this is computed again by itself when the range changes. */
const AUTO_MS = 1000;

/** A cell as shown: its text, its exact value (a tooltip) and how it sorts. */
export function cellView(c: LamiCell): { text: string; exact: string; key: number | string } {
  const num = typeof c.value === 'number' ? c.value : NaN;
  switch (c.class) {
    case 'duration':
      // Microseconds with 3 decimals, as lttng-analyses' text tables.
      return { text: (num / 1e3).toFixed(3), exact: `${num} ns (${formatDuration(num)})`, key: num };
    case 'ratio':
      return { text: `${(num * 100).toFixed(2)} %`, exact: String(num), key: num };
    case 'number':
      return { text: String(num), exact: String(num), key: num };
    case 'size':
      return { text: String(num), exact: `${num} bytes`, key: num };
    case 'string':
    case 'path':
      return { text: String(c.value ?? ''), exact: String(c.value ?? ''), key: String(c.value ?? '') };
    case 'process': {
      const id = c.tid ?? c.pid;
      const text = `${c.name ?? '?'}${id !== undefined ? ` (${id})` : ''}`;
      const exact = [c.name ?? '?', c.pid !== undefined ? `pid ${c.pid}` : '', c.tid !== undefined ? `tid ${c.tid}` : '']
        .filter(Boolean)
        .join(', ');
      return { text, exact, key: (c.name ?? '') + '\u0000' + String(id ?? '').padStart(12, '0') };
    }
    case 'cpu':
      return { text: `CPU ${c.id ?? '?'}`, exact: `CPU ${c.id ?? '?'}`, key: c.id ?? -1 };
    case 'syscall':
      return { text: c.name ?? '?', exact: c.name ?? '?', key: c.name ?? '' };
    case 'irq': {
      const text = `${c.hard ? '' : 'softirq '}${c.nr ?? '?'}${c.name ? ` <${c.name}>` : ''}`;
      return { text, exact: `${c.hard ? 'hard IRQ' : 'softirq'} ${c.nr ?? '?'}${c.name ? ` (${c.name})` : ''}`, key: c.nr ?? -1 };
    }
    case 'unknown':
      return { text: '?', exact: 'unknown', key: -Infinity };
    case 'empty':
      return { text: '', exact: '', key: -Infinity };
    default:
      return { text: JSON.stringify(c), exact: JSON.stringify(c), key: JSON.stringify(c) };
  }
}

function columnTitle(c: LamiColumn): string {
  if (c.class === 'duration') return `${c.title} (µs)`;
  if (c.unit && c.class !== 'number') return `${c.title} (${c.unit})`;
  return c.title;
}

const NUMERIC = new Set(['duration', 'ratio', 'number', 'size']);

/** One result table, sortable by any column (a click on its header; again: the other way). */
function resultTable(title: string, columns: LamiColumn[], data: LamiCell[][]): HTMLElement {
  const box = el('section', { class: 'an-table' });
  box.append(el('h3', {}, `${title} — ${data.length} row${data.length === 1 ? '' : 's'}`));
  const table = el('table', { class: 'lami' });
  const head = table.createTHead().insertRow();
  const body = table.createTBody();
  const cells = data.map((r) => r.map(cellView));
  let order = cells.map((_, i) => i);
  let sorted: { col: number; desc: boolean } | null = null;
  const fill = (): void => {
    const rows = order.map((i) => {
      const tr = el('tr');
      cells[i]!.forEach((c, j) => {
        const td = el('td', { title: c.exact }, c.text);
        if (NUMERIC.has(columns[j]?.class ?? '')) td.className = 'num';
        tr.appendChild(td);
      });
      return tr;
    });
    body.replaceChildren(...rows);
  };
  columns.forEach((c, j) => {
    const th = el('th', { title: 'Sort', scope: 'col' }, columnTitle(c));
    if (NUMERIC.has(c.class)) th.className = 'num';
    th.onclick = () => {
      const desc = sorted?.col === j ? !sorted.desc : NUMERIC.has(c.class);
      sorted = { col: j, desc };
      order = cells.map((_, i) => i);
      order.sort((a, b) => {
        const x = cells[a]![j]?.key ?? '';
        const y = cells[b]![j]?.key ?? '';
        const d = x < y ? -1 : x > y ? 1 : 0;
        return (desc ? -d : d) || a - b;
      });
      for (const h of head.cells) h.removeAttribute('aria-sort');
      th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
      fill();
    };
    head.appendChild(th);
  });
  fill();
  box.appendChild(table);
  return box;
}

export class AnalysesPanel {
  private select: HTMLSelectElement;
  private limit: HTMLInputElement;
  private limitBox: HTMLElement;
  private groups: { total: HTMLInputElement; per_tid: HTMLInputElement; per_prio: HTMLInputElement };
  private groupsBox: HTMLElement;
  private run: HTMLButtonElement;
  private status: HTMLElement;
  private tables: HTMLElement;
  private shown = false;
  private inFlight = false;
  private wanted = false;
  private timer: number | null = null;
  /** What the tables show: the request's key, and how long it took. */
  private last: { key: string; ms: number } | null = null;

  constructor(
    box: HTMLElement,
    private state: State,
  ) {
    this.select = el('select', { id: 'an-name', 'aria-label': 'Analysis' });
    for (const a of ANALYSES) this.select.appendChild(el('option', { value: a.name }, a.label));
    this.limit = el('input', { id: 'an-limit', type: 'number', min: '0', value: '10', title: 'Rows per table (0: all)' });
    this.limitBox = el('label', {}, 'rows ');
    this.limitBox.appendChild(this.limit);
    const check = (id: string, label: string, on: boolean): [HTMLInputElement, HTMLElement] => {
      const c = el('input', { id, type: 'checkbox' });
      c.checked = on;
      const l = el('label', {});
      l.append(c, ` ${label}`);
      return [c, l];
    };
    const [total, lt] = check('an-total', 'total', false);
    const [perTid, lp] = check('an-per-tid', 'per thread', true);
    const [perPrio, lq] = check('an-per-prio', 'per priority', false);
    this.groups = { total, per_tid: perTid, per_prio: perPrio };
    this.groupsBox = el('span', { class: 'an-groups' });
    this.groupsBox.append(lt, lp, lq);
    this.run = el('button', { id: 'an-run', type: 'button' }, 'Compute');
    this.status = el('span', { id: 'an-status', class: 'status' });
    const tools = el('div', { class: 'an-tools' });
    tools.append(this.select, this.limitBox, this.groupsBox, this.run, this.status);
    this.tables = el('div', { id: 'an-tables' });
    box.append(tools, this.tables);
    this.select.onchange = () => {
      this.options();
      this.compute();
    };
    for (const c of [this.limit, total, perTid, perPrio]) c.onchange = () => this.compute();
    this.run.onclick = () => this.compute();
    this.options();
  }

  private analysis(): Analysis {
    return ANALYSES.find((a) => a.name === this.select.value) ?? ANALYSES[0]!;
  }

  private options(): void {
    const a = this.analysis();
    this.limitBox.hidden = !a.limit;
    this.groupsBox.hidden = !a.groups;
  }

  private request(): { name: string; from: number; to: number; opts: AnalysisOptions; key: string } {
    const a = this.analysis();
    const r = this.state.range ?? this.state.view;
    const from = Math.max(0, Math.floor(r.from));
    const to = Math.max(from + 1, Math.ceil(r.to));
    const opts: AnalysisOptions = {};
    if (a.limit) opts.limit = Math.max(0, Math.floor(Number(this.limit.value) || 0));
    if (a.groups) {
      opts.total = this.groups.total.checked;
      opts.per_tid = this.groups.per_tid.checked;
      opts.per_prio = this.groups.per_prio.checked;
    }
    return { name: a.name, from, to, opts, key: JSON.stringify([a.name, from, to, opts]) };
  }

  /** The tab was opened or closed. */
  setShown(shown: boolean): void {
    this.shown = shown;
    if (shown && this.state.info?.state !== 'building' && this.request().key !== this.last?.key) this.compute();
  }

  /** The range changed: quick analyses follow it, slow ones say it changed. */
  rangeChanged(): void {
    if (!this.shown || !this.last) return;
    if (this.request().key === this.last.key) {
      this.run.classList.remove('stale');
      return;
    }
    if (this.last.ms >= AUTO_MS || this.state.info?.state === 'building') {
      this.run.classList.add('stale');
      this.run.textContent = 'Compute for this range';
      return;
    }
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = window.setTimeout(() => {
      this.timer = null;
      this.compute();
    }, 400);
  }

  busy(): boolean {
    return this.inFlight || this.timer !== null;
  }

  /** One request at a time (the server cannot be told to stop): the latest wish waits for it. */
  compute(): void {
    if (this.inFlight) {
      this.wanted = true;
      return;
    }
    this.inFlight = true;
    this.fetch()
      .catch((e: unknown) => {
        if (isAbort(e)) return;
        this.status.textContent = '';
        this.tables.replaceChildren(el('div', { class: 'an-error' }, e instanceof Error ? e.message : String(e)));
      })
      .finally(() => {
        this.inFlight = false;
        if (this.wanted) {
          this.wanted = false;
          this.compute();
        }
      });
  }

  private async fetch(): Promise<void> {
    const q = this.request();
    const tod = (t: number): string => formatTimeOfDay(this.state.originTod + t);
    const what = `${this.state.range ? 'selection' : 'visible range'} ${tod(q.from)} – ${tod(q.to)}`;
    this.run.classList.remove('stale');
    this.run.textContent = 'Compute';
    this.status.textContent = `computing over the ${what}…`;
    const t0 = performance.now();
    const a = await getAnalysis(q.name, q.from, q.to, q.opts);
    const ms = performance.now() - t0;
    this.last = { key: q.key, ms };
    this.status.textContent = `over the ${what} (${formatDuration(q.to - q.from)}), in ${(ms / 1e3).toFixed(2)} s`;
    this.tables.replaceChildren(...this.render(a));
    this.rangeChanged();
  }

  private render(a: AnalysisAnswer): HTMLElement[] {
    const out: HTMLElement[] = [];
    if (a.error) out.push(el('div', { class: 'an-error' }, `The trace is damaged: the tables hold the events before. ${a.error}`));
    for (const t of a.results) {
      const name = typeof t.class === 'string' ? t.class : t.class.inherit;
      const cls = a['table-classes'][name];
      const title = typeof t.class === 'string' ? (cls?.title ?? name) : t.class.title;
      out.push(resultTable(title, cls?.['column-descriptions'] ?? [], t.data));
    }
    if (!a.results.length) out.push(el('div', { class: 'status' }, 'Nothing in this range.'));
    return out;
  }
}
