// The Analyses tab (kernel traces): the tables of `reef cputop`,
// `syscallstats`, `irqstats`, `schedstats`, `iolatency` and `memtop` over
// the selected range, else the visible one, from /api/analysis (the
// commands' own LAMI output, so the numbers are theirs).

import {
  getActivities,
  getAnalysis,
  getLatency,
  getWindow,
  B_CHANGES,
  B_J,
  B_ON,
  B_V,
  type Bucket,
  type ActivitiesAnswer,
  type Activity,
  type AnalysisAnswer,
  type AnalysisOptions,
  type LamiCell,
  type LamiColumn,
} from './api';
import { truncation } from './activity';
import { hiDpiCanvas, histogram } from './draw';
import { el, formatCount, formatDuration, formatTimeOfDay } from './format';
import { AUTO_STATS } from './panels';
import { Serial } from './serial';
import type { State } from './state';

interface Analysis {
  name: string;
  label: string;
  limit: boolean;
  groups: boolean;
  /** A latency view: these periods (`reef periods`' definitions) as a scatter plot and a histogram. */
  periods?: string[];
  /** A latency view: the rows of this kernel analysis' log (`reef schedlog`). */
  log?: string;
  /** CPU usage over time, from the index's CPU rows. */
  usage?: boolean;
}

/** Buckets of the CPU usage chart across the range. */
const USAGE_BUCKETS = 400;

/**
 * Each bucket's on-time from `j0` to `j1` (inclusive) for one row's window
 * answer: the buckets it leaves out are plain (no change inside), their
 * value the one before them (docs/view-api.md, Buckets); after the last
 * bucket with changes, the value at the start of `j1 + 1` (`after`).
 */
export function onTimes(b: Bucket[], res: number, j0: number, j1: number, after: number, isOn: (v: number) => boolean): number[] {
  const out: number[] = [];
  let i = 0;
  for (let j = j0; j <= j1; j++) {
    while (i + 1 < b.length && b[i + 1]![B_J] <= j) i++;
    const bk = b[i];
    if (!bk || bk[B_J] > j) {
      out.push(0);
    } else if (bk[B_J] === j) {
      out.push(bk[B_ON]);
    } else {
      // A plain bucket after `bk`: the value `bk` ends with.
      const next = b[i + 1];
      const v = bk[B_CHANGES] === 0 ? bk[B_V] : next ? next[B_V] : after;
      out.push(isOn(v) ? res : 0);
    }
  }
  return out;
}

/** Points of a latency scatter plot: the longest of the range. */
const SCATTER_LIMIT = 50_000;

export const ANALYSES: Analysis[] = [
  { name: 'cputop', label: 'CPU usage (cputop)', limit: true, groups: false },
  { name: 'syscallstats', label: 'System calls (syscallstats)', limit: false, groups: false },
  { name: 'irqstats', label: 'Interrupts (irqstats)', limit: false, groups: false },
  { name: 'schedstats', label: 'Scheduling latency (schedstats)', limit: false, groups: true },
  { name: 'iolatency', label: 'I/O latency (iolatency)', limit: false, groups: false },
  { name: 'memtop', label: 'Memory pages (memtop)', limit: true, groups: false },
  { name: 'cpu-usage', label: 'CPU usage over time', limit: false, groups: false, usage: true },
  { name: 'sched-latency', label: 'Scheduling latencies (scatter)', limit: false, groups: false, log: 'schedlog' },
  { name: 'syscall-latency', label: 'System call durations (scatter)', limit: false, groups: false, log: 'syscalls' },
  { name: 'io-latency', label: 'I/O system call latencies (scatter)', limit: false, groups: false, log: 'iolog' },
  {
    name: 'irq-latency',
    label: 'IRQ handler durations (scatter)',
    limit: false,
    groups: false,
    periods: [
      'irq : $evt.$name == "irq_handler_entry" : $evt.$name == "irq_handler_exit" && $evt.irq == $begin.$evt.irq && $evt.cpu_id == $begin.$evt.cpu_id',
    ],
  },
  {
    name: 'softirq-latency',
    label: 'Softirq durations (scatter)',
    limit: false,
    groups: false,
    periods: [
      'softirq : $evt.$name == "softirq_entry" : $evt.$name == "softirq_exit" && $evt.vec == $begin.$evt.vec && $evt.cpu_id == $begin.$evt.cpu_id',
    ],
  },
];

/** A table that took less than this is computed again by itself when the range changes. */
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
  private serial = new Serial(
    () => this.fetch(),
    (e) => {
      this.status.textContent = '';
      this.tables.replaceChildren(el('div', { class: 'an-error' }, e instanceof Error ? e.message : String(e)));
    },
  );
  private timer: number | null = null;
  /** What the tables show: the request's key, and how long it took. */
  private last: { key: string; ms: number } | null = null;

  /** The latency points drawn: their periods and where on the scatter plot (CSS px). */
  private points: { a: Activity; x: number; y: number }[] = [];

  constructor(
    box: HTMLElement,
    private state: State,
    /** A latency point was clicked: show its interval. */
    private pick: (a: Activity) => void,
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
    if (!shown || this.state.info?.state === 'building' || this.request().key === this.last?.key) return;
    // Opening the tab runs the analysis by itself when it reads few
    // events (as the statistics count names); over more, it waits for a
    // click (a pass over a large trace takes seconds, and cannot be
    // stopped).
    const n = this.eventsToRead();
    if (n <= AUTO_STATS) {
      this.compute();
    } else {
      this.run.classList.add('stale');
      this.run.textContent = `Compute (reads about ${formatCount(Math.round(n))} events)`;
    }
  }

  /**
   * About how many events the analysis reads (at the trace's mean rate):
   * the tables and latency views read from the start of the trace to the
   * range's end (the kernel model needs what came before); the CPU usage
   * chart reads the index only.
   */
  private eventsToRead(): number {
    const info = this.state.info;
    if (!info || this.analysis().usage) return 0;
    return (info.events * Math.min(this.request().to, info.end + 1)) / Math.max(1, info.end + 1);
  }

  /** The range changed: quick analyses follow it, slow ones say it changed. */
  rangeChanged(): void {
    if (!this.shown || !this.last) return;
    if (this.request().key === this.last.key) {
      this.run.classList.remove('stale');
      return;
    }
    // A latency plot stays on its range: a click on a point selects that
    // point's period, which must not replace the plot.
    if (this.last.ms >= AUTO_MS || this.state.info?.state === 'building' || this.analysis().periods || this.analysis().log) {
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
    return this.serial.busy() || this.timer !== null;
  }

  /** One request at a time (the server cannot be told to stop): the latest wish waits for it. */
  compute(): void {
    this.serial.ask();
  }

  private async fetch(): Promise<void> {
    const q = this.request();
    const latency = this.analysis().periods;
    const log = this.analysis().log;
    const run = this.starting(q);
    let shown: HTMLElement[];
    if (latency) {
      const a = await getActivities({ kind: 'periods', periods: latency }, q.from, q.to, { sort: 'duration', limit: SCATTER_LIMIT, bins: 20 });
      shown = this.renderLatency(a, q.from, q.to, `reef periods --period '${latency.join("' --period '")}'`, latency.join('\n'));
    } else if (log) {
      const a = await getLatency(log, q.from, q.to, { sort: 'duration', limit: SCATTER_LIMIT, bins: 20 });
      const [cmd, what] =
        log === 'syscalls'
          ? ['reef syscallstats (its calls)', 'every system call reef syscallstats counts']
          : [`reef ${log}`, `the rows of reef ${log} (lttng-analyses' ${log})`];
      shown = this.renderLatency(a, q.from, q.to, cmd, `${what} over the whole trace that overlap the range`);
    } else if (this.analysis().usage) {
      shown = await this.usageChart(q);
    } else {
      shown = this.render(await getAnalysis(q.name, q.from, q.to, q.opts));
    }
    const ms = performance.now() - run.t0;
    this.last = { key: q.key, ms };
    this.status.textContent = `over the ${run.what} (${formatDuration(q.to - q.from)}), in ${(ms / 1e3).toFixed(2)} s`;
    this.tables.replaceChildren(...shown);
    this.rangeChanged();
  }

  /** A computation over `q`'s range starts: says so; what the range is called, and when it started. */
  private starting(q: { from: number; to: number }): { what: string; t0: number } {
    const tod = (t: number): string => formatTimeOfDay(this.state.originTod + t);
    const what = `${this.state.range ? 'selection' : 'visible range'} ${tod(q.from)} – ${tod(q.to)}`;
    this.run.classList.remove('stale');
    this.run.textContent = 'Compute';
    this.status.textContent = `computing over the ${what}…`;
    return { what, t0: performance.now() };
  }

  private renderLatency(a: ActivitiesAnswer, from: number, to: number, defText: string, defTitle: string): HTMLElement[] {
    const tod = (t: number): string => formatTimeOfDay(this.state.originTod + t);
    const s = a.range;
    const head = el('div', { class: 'an-lat-stats', id: 'an-lat-stats' });
    head.textContent = s
      ? `${formatCount(s.count)} in range · min ${formatDuration(s.min_ns)} · avg ${formatDuration(s.avg_ns)} · max ${formatDuration(s.max_ns)} · stdev ${s.stdev_ns === null ? '—' : formatDuration(s.stdev_ns)}${a.more ? ` (the ${formatCount(SCATTER_LIMIT)} longest plotted)` : ''}`
      : 'none in range';
    if (a.truncated) head.append(el('div', { class: 'an-error' }, truncation(a, this.state.originTod)));
    const def = el('div', { class: 'status', id: 'an-lat-def', title: defTitle }, defText);
    const W = 900;
    const H = 220;
    const [canvas, ctx] = hiDpiCanvas('an-scatter', 'an-scatter', W, H);
    const L = 96;
    const B = 20;
    const maxD = Math.max(1, s?.max_ns ?? 1);
    const xOf = (t: number): number => L + ((t - from) / Math.max(1, to - from)) * (W - L - 8);
    const yOf = (d: number): number => H - B - (d / maxD) * (H - B - 8);
    const pts = a.activities.map((act) => ({ a: act, x: xOf(act.begin), y: yOf(act.duration) }));
    if (ctx) {
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, 0, W, H);
      ctx.strokeStyle = '#c8ccd2';
      ctx.beginPath();
      ctx.moveTo(L, 8);
      ctx.lineTo(L, H - B);
      ctx.lineTo(W - 8, H - B);
      ctx.stroke();
      ctx.fillStyle = '#3b4350';
      ctx.font = '10px sans-serif';
      ctx.textAlign = 'right';
      for (const f of [0, 0.5, 1]) ctx.fillText(formatDuration(maxD * f), L - 4, yOf(maxD * f) + 3);
      ctx.textAlign = 'left';
      ctx.fillText(tod(from), L, H - 6);
      ctx.textAlign = 'right';
      ctx.fillText(tod(to), W - 8, H - 6);
      ctx.fillStyle = 'rgba(29, 57, 196, 0.55)';
      for (const p of pts) ctx.fillRect(p.x - 1.5, p.y - 1.5, 3, 3);
    }
    canvas.onclick = (e) => {
      const r = canvas.getBoundingClientRect();
      const x = e.clientX - r.left;
      const y = e.clientY - r.top;
      let best: (typeof pts)[number] | null = null;
      let bd = 6;
      for (const p of pts) {
        const d = Math.hypot(p.x - x, p.y - y);
        if (d < bd) {
          bd = d;
          best = p;
        }
      }
      if (best) this.pick(best.a);
    };
    canvas.title = 'Each point: a period (begin time, duration). A click selects it on the timeline.';
    this.points = pts;
    this.scatter = canvas;
    const hist = histogram('an-hist', 'density of durations', a.histogram ?? []);
    const plots = el('div', { class: 'an-lat-plots' });
    plots.append(canvas, hist);
    return [head, def, plots];
  }

  private scatter: HTMLCanvasElement | null = null;
  /** The CPU usage shown: per CPU, its busy ns in each bucket from `j0` (for tests). */
  usage: { res: number; j0: number; cpus: { cpu: number; on: number[] }[] } | null = null;

  /** CPU usage over time: per CPU and in total, the share of each bucket a thread (not idle) ran. */
  private async usageChart(q: { from: number; to: number }): Promise<HTMLElement[]> {
    const tod = (t: number): string => formatTimeOfDay(this.state.originTod + t);
    const cpus = this.state.rows.filter((r) => r.kind === 'cpu').sort((a, b) => (a.cpu ?? 0) - (b.cpu ?? 0));
    const ids = cpus.map((r) => r.id);
    const w = await getWindow(q.from, q.to, USAGE_BUCKETS, ids, null);
    const res = w.res;
    const j0 = Math.floor(q.from / res);
    const j1 = Math.floor((q.to - 1) / res);
    // The values at the start of the bucket after the range (one bucket at the same resolution).
    const next = await getWindow((j1 + 1) * res, (j1 + 2) * res, 1, ids, null);
    const series = cpus.map((r) => ({
      cpu: r.cpu ?? r.id,
      on: onTimes(w.rows.find((x) => x.id === r.id)?.b ?? [], res, j0, j1, next.rows.find((x) => x.id === r.id)?.b[0]?.[B_V] ?? -1, (v) => v > 0),
    }));
    this.usage = { res, j0, cpus: series };
    const W = 900;
    const H = 240;
    const L = 44;
    const B = 20;
    const [canvas, ctx] = hiDpiCanvas('an-usage', 'an-scatter', W, H);
    const n = j1 - j0 + 1;
    const xOf = (i: number): number => L + ((i + 0.5) / n) * (W - L - 8);
    const yOf = (f: number): number => H - B - f * (H - B - 8);
    const colours = ['#d4380d', '#1d39c4', '#08979c', '#c41d7f', '#7cb305', '#d48806', '#531dab', '#096dd9'];
    const line = (vals: number[], colour: string, width: number): void => {
      if (!ctx) return;
      ctx.strokeStyle = colour;
      ctx.lineWidth = width;
      ctx.beginPath();
      vals.forEach((v, i) => (i ? ctx.lineTo(xOf(i), yOf(v)) : ctx.moveTo(xOf(i), yOf(v))));
      ctx.stroke();
    };
    if (ctx) {
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, 0, W, H);
      ctx.strokeStyle = '#e2e5ea';
      ctx.fillStyle = '#3b4350';
      ctx.font = '10px sans-serif';
      ctx.textAlign = 'right';
      for (const f of [0, 0.25, 0.5, 0.75, 1]) {
        ctx.beginPath();
        ctx.moveTo(L, yOf(f));
        ctx.lineTo(W - 8, yOf(f));
        ctx.stroke();
        ctx.fillText(`${f * 100} %`, L - 4, yOf(f) + 3);
      }
      ctx.textAlign = 'left';
      ctx.fillText(tod(j0 * res), L, H - 6);
      ctx.textAlign = 'right';
      ctx.fillText(tod((j1 + 1) * res), W - 8, H - 6);
      series.forEach((s, k) => line(s.on.map((o) => o / res), colours[k % colours.length]!, 1));
      const total = series.length ? series[0]!.on.map((_, i) => series.reduce((a, s) => a + s.on[i]!, 0) / (res * series.length)) : [];
      line(total, '#111', 2);
    }
    const legend = el('div', { class: 'an-legend', id: 'an-usage-legend' });
    const span = (j1 - j0 + 1) * res;
    const item = (label: string, colour: string, busy: number, cpusN: number): HTMLElement => {
      const d = el('span', { class: 'an-legend-item' });
      const sw = el('span', { class: 'swatch' });
      sw.style.background = colour;
      d.append(sw, ` ${label}: ${((100 * busy) / (span * cpusN)).toFixed(2)} %`);
      d.title = `busy ${formatDuration(busy)} of ${formatDuration(span * cpusN)}`;
      d.dataset['busy'] = String(busy);
      return d;
    };
    const sum = (a: number[]): number => a.reduce((x, y) => x + y, 0);
    legend.append(
      item('total', '#111', sum(series.map((s) => sum(s.on))), Math.max(1, series.length)),
      ...series.map((s, k) => item(`CPU ${s.cpu}`, colours[k % colours.length]!, sum(s.on), 1)),
    );
    const note = el(
      'div',
      { class: 'status' },
      `The share of each bucket (${formatDuration(res)}) during which a thread other than the idle one (tid 0) ran on the CPU, from the CPU rows of the index.`,
    );
    return [note, canvas, legend];
  }

  /** The points in client coordinates (the scatter may have moved since it was drawn). */
  pointsNow(): { begin: number; end: number; x: number; y: number }[] {
    const r = this.scatter?.isConnected ? this.scatter.getBoundingClientRect() : null;
    if (!r) return [];
    return this.points.map((p) => ({ begin: p.a.begin, end: p.a.end, x: r.left + p.x, y: r.top + p.y }));
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
