// Activities (`reef activities`' definitions typed in the page, kept in the
// URL): drawn over the timeline as slices on the row of their begin event,
// nested ones stacked; an activity whose begin and end are on different
// rows (a message) as an arrow between them. The side panel edits the
// definitions; the Activities tab lists a definition's activities in the
// selected or visible range, with their statistics and a histogram.

import { ApiError, getActivities, isAbort, type Activity, type ActivitiesAnswer, type ActivityDefinition } from './api';
import { el, formatCount, formatDuration, formatTimeOfDay } from './format';
import { showExprError } from './panels';
import type { State } from './state';
import type { Overlay, OverlayGeometry } from './timeline';
import { getHashParam, setHashParams } from './urlstate';
import { distToSegment, drawArrow, histogram } from './draw';

const COLOURS = ['#d4380d', '#1d39c4', '#08979c', '#c41d7f', '#7cb305', '#d48806'];
/** Activities fetched per definition for the timeline: the longest of the window. */
const DRAW_LIMIT = 5000;
/** Stacked levels drawn per row. */
const MAX_DEPTH = 4;
const SLICE_H = 3;
/** Activities listed in the tab. */
const LIST_LIMIT = 1000;

export type Def = ActivityDefinition & {
  id: number;
  colour: string;
};

interface Drawn {
  def: Def;
  a: Activity;
  /** A slice: its row and stacking level; an arrow: null. */
  row: number | null;
  depth: number;
}

/** A period definition's name: `NAME[(PARENT)] : ...`. */
function periodName(def: string): string {
  return def.split(':')[0]!.replace(/\(.*$/, '').trim();
}

export function defLabel(d: ActivityDefinition): string {
  if (d.kind === 'periods') return `periods: ${d.periods.map(periodName).join(', ')}`;
  return `${d.begin} → ${d.end}${d.key ? ` [${d.key}]` : ''}`;
}

/**
 * The definitions in the URL (`#acts=` JSON: an activity as its [begin,
 * end, key], a set of periods as {"periods": [...]}).
 */
function defsFromUrl(): ActivityDefinition[] {
  const text = getHashParam('acts');
  if (!text) return [];
  const strings = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === 'string');
  try {
    const v = JSON.parse(text) as unknown;
    if (!Array.isArray(v)) return [];
    const out: ActivityDefinition[] = [];
    for (const x of v as unknown[]) {
      if (strings(x) && x.length === 3) out.push({ kind: 'activities', begin: x[0]!, end: x[1]!, key: x[2]! });
      else if (x && typeof x === 'object' && 'periods' in x && strings(x.periods) && x.periods.length)
        out.push({ kind: 'periods', periods: x.periods });
    }
    return out;
  } catch {
    return [];
  }
}

function defsToUrl(defs: ActivityDefinition[]): void {
  const json = defs.map((d) => (d.kind === 'periods' ? { periods: d.periods } : [d.begin, d.end, d.key]));
  setHashParams({ acts: defs.length ? JSON.stringify(json) : null });
}

/** What a truncated answer misses, for people: the intervals are kept up to a time. */
export function truncation(a: ActivitiesAnswer, originTod: number): string {
  const until = a.kept_until === null ? '' : ` (up to ${formatTimeOfDay(originTod + a.kept_until)})`;
  return `only the first 1,000,000 intervals to end are kept${until}: the range's numbers and the timeline count those; the whole trace's count every one`;
}

/** The definitions, and what the timeline draws of them. */
export class Activities implements Overlay {
  defs: Def[] = [];
  messagesOn = true;
  private nextId = 1;
  private loading = false;
  private windows = new Map<number, { from: number; to: number; answer: ActivitiesAnswer | null; c: AbortController | null }>();
  private view = { from: 0, to: 1 };
  private drawn: { slices: Drawn[]; arrows: Drawn[] } = { slices: [], arrows: [] };
  private listeners: (() => void)[] = [];
  /** Called when what is drawn changed (the timeline redraws). */
  redraw: () => void = () => {};

  constructor(private state: State) {}

  onChange(f: () => void): void {
    this.listeners.push(f);
  }

  /** The definitions changed: the URL, the listeners (the timeline asks for the new ones' windows), what is drawn. */
  private changed(): void {
    defsToUrl(this.defs);
    for (const f of this.listeners) f();
    this.viewChanged(this.view.from, this.view.to, 0);
    this.redraw();
  }

  /** Checks a definition with the server (which computes its activities), then adds it. */
  async add(d: ActivityDefinition): Promise<Def> {
    await getActivities(d, 0, 1, { limit: 0 });
    const def: Def = { ...d, id: this.nextId++, colour: COLOURS[(this.nextId - 2) % COLOURS.length]! };
    this.defs.push(def);
    this.changed();
    return def;
  }

  remove(id: number): void {
    this.defs = this.defs.filter((d) => d.id !== id);
    this.windows.get(id)?.c?.abort();
    this.windows.delete(id);
    this.changed();
  }

  /** The definitions the URL holds (those the server refuses are dropped, with a warning). */
  async loadFromUrl(): Promise<void> {
    this.loading = true;
    try {
      for (const d of defsFromUrl()) {
        try {
          await this.add(d);
        } catch (e) {
          console.warn(`activities from the URL: ${defLabel(d)}:`, e);
        }
      }
    } finally {
      this.loading = false;
    }
  }

  setMessages(on: boolean): void {
    this.messagesOn = on;
    this.redraw();
  }

  busy(): boolean {
    if (this.loading) return true;
    for (const w of this.windows.values()) if (w.c) return true;
    return false;
  }

  viewChanged(from: number, to: number, _widthPx: number): void {
    this.view = { from, to };
    for (const def of this.defs) {
      const w = this.windows.get(def.id);
      if (w && w.from === from && w.to === to) continue;
      w?.c?.abort();
      const c = new AbortController();
      const entry: { from: number; to: number; answer: ActivitiesAnswer | null; c: AbortController | null } = {
        from,
        to,
        answer: w?.answer ?? null,
        c,
      };
      this.windows.set(def.id, entry);
      getActivities(def, from, to, { sort: 'duration', limit: DRAW_LIMIT, bins: 1 }, c.signal)
        .then((a) => {
          entry.answer = a;
        })
        .catch((e: unknown) => {
          if (!isAbort(e)) console.warn('activities:', e);
        })
        .finally(() => {
          if (entry.c === c) entry.c = null;
          this.layout();
          this.redraw();
        });
    }
    this.layout();
  }

  /** Slices per row, stacked (nested or overlapping ones one level up), and the arrows. */
  private layout(): void {
    const slices: Drawn[] = [];
    const arrows: Drawn[] = [];
    for (const def of this.defs) {
      const a = this.windows.get(def.id)?.answer;
      if (!a) continue;
      for (const act of a.activities) {
        const [r1, r2] = act.rows;
        if (r1 !== null && r2 !== null && r1 !== r2) arrows.push({ def, a: act, row: null, depth: 0 });
        else slices.push({ def, a: act, row: r1 ?? r2, depth: 0 });
      }
    }
    const byRow = new Map<number, Drawn[]>();
    for (const s of slices) {
      if (s.row === null) continue;
      let l = byRow.get(s.row);
      if (!l) byRow.set(s.row, (l = []));
      l.push(s);
    }
    for (const l of byRow.values()) {
      l.sort((x, y) => x.a.begin - y.a.begin || y.a.end - x.a.end);
      const open: number[] = [];
      for (const s of l) {
        while (open.length && open[open.length - 1]! < s.a.begin) open.pop();
        s.depth = open.length;
        open.push(s.a.end);
      }
    }
    this.drawn = { slices: slices.filter((s) => s.row !== null), arrows };
  }

  /**
   * What is drawn (for tests), with where in `g`'s coordinates: a slice's
   * box `[x, y, w, h]`, an arrow's ends `[x1, y1, x2, y2]` (null: off screen
   * or, for arrows, hidden).
   */
  drawnNow(g: OverlayGeometry): { def: number; begin: number; end: number; rows: (number | null)[]; depth: number; arrow: boolean; at: number[] | null }[] {
    const out = (d: Drawn, arrow: boolean) => {
      const b = arrow ? null : this.sliceBox(d, g);
      const at = arrow ? (this.messagesOn ? this.arrowEnds(d, g) : null) : b && [b.x, b.y, b.w, b.h];
      return { def: d.def.id, begin: d.a.begin, end: d.a.end, rows: d.a.rows, depth: d.depth, arrow, at };
    };
    return [...this.drawn.slices.map((d) => out(d, false)), ...this.drawn.arrows.map((d) => out(d, true))];
  }

  private sliceBox(d: Drawn, g: OverlayGeometry): { x: number; y: number; w: number; h: number } | null {
    if (d.row === null || d.depth >= MAX_DEPTH) return null;
    const box = g.rowBox(d.row);
    if (!box) return null;
    const x0 = Math.max(g.plotLeft - 1, g.xOf(d.a.begin));
    const x1 = Math.min(g.plotRight + 1, g.xOf(d.a.end));
    return { x: Math.floor(x0), y: box.y + box.h - 1 - (d.depth + 1) * SLICE_H, w: Math.max(1, Math.round(x1 - Math.floor(x0))), h: SLICE_H - 1 };
  }

  private arrowEnds(d: Drawn, g: OverlayGeometry): [number, number, number, number] | null {
    const b1 = g.rowBox(d.a.rows[0]!);
    const b2 = g.rowBox(d.a.rows[1]!);
    if (!b1 || !b2) return null;
    return [g.xOf(d.a.begin), b1.y + b1.h - 4, g.xOf(d.a.end), b2.y + b2.h - 4];
  }

  draw(ctx: CanvasRenderingContext2D, g: OverlayGeometry): void {
    for (const d of this.drawn.slices) {
      const b = this.sliceBox(d, g);
      if (!b) continue;
      ctx.fillStyle = d.def.colour;
      ctx.fillRect(b.x, b.y, b.w, b.h);
    }
    if (!this.messagesOn) return;
    ctx.lineWidth = 1.2;
    for (const d of this.drawn.arrows) {
      const e = this.arrowEnds(d, g);
      if (!e) continue;
      const [x1, y1, x2, y2] = e;
      ctx.strokeStyle = d.def.colour;
      ctx.fillStyle = d.def.colour;
      drawArrow(ctx, x1, y1, x2, y2, [4, 2]);
    }
  }

  /** The tooltip's lines for an activity. */
  tipRows(d: { def: Def; a: Activity }): [string, string][] {
    const tod = (t: number): string => formatTimeOfDay(this.state.originTod + t);
    const row = (r: number | null): string => (r === null ? '—' : (this.state.rowById.get(r)?.label ?? `row ${r}`));
    const rows: [string, string][] = [
      d.def.kind === 'periods' ? ['period', d.a.name] : ['activity', defLabel(d.def)],
      ['group', d.a.group || '—'],
      ['begin', tod(d.a.begin)],
      ['end', tod(d.a.end)],
      ['duration', formatDuration(d.a.duration)],
    ];
    if (d.a.rows[0] !== d.a.rows[1]) rows.push(['from', row(d.a.rows[0])], ['to', row(d.a.rows[1])]);
    else rows.push(['row', row(d.a.rows[0])]);
    return rows;
  }

  hit(x: number, y: number, g: OverlayGeometry): { key: string; rows: [string, string][] } | null {
    const key = (d: Drawn): string => `act:${d.def.id}:${d.a.name}:${d.a.begin}:${d.a.end}:${d.a.rows.join(',')}`;
    // The innermost (deepest) slice under the pointer first.
    let best: Drawn | null = null;
    for (const d of this.drawn.slices) {
      const b = this.sliceBox(d, g);
      if (!b) continue;
      if (x >= b.x - 1 && x <= b.x + b.w + 1 && y >= b.y - 1 && y <= b.y + b.h + 1 && (!best || d.depth > best.depth)) best = d;
    }
    if (!best && this.messagesOn) {
      let bestD = 4;
      for (const d of this.drawn.arrows) {
        const e = this.arrowEnds(d, g);
        if (!e) continue;
        const dist = distToSegment(x, y, ...e);
        if (dist < bestD) {
          bestD = dist;
          best = d;
        }
      }
    }
    return best ? { key: key(best), rows: this.tipRows(best) } : null;
  }
}


// --- The side panel: definitions ---------------------------------------------------------------

export class DefinitionsPanel {
  private inputs: Record<'begin' | 'end' | 'key', HTMLInputElement>;
  private periods: HTMLTextAreaElement;
  private error: HTMLElement;
  private status: HTMLElement;
  private list: HTMLElement;
  private adding = false;

  constructor(
    box: HTMLElement,
    private acts: Activities,
  ) {
    const input = (id: string, placeholder: string): HTMLInputElement =>
      el('input', { id, type: 'text', spellcheck: 'false', placeholder });
    this.inputs = {
      begin: input('act-begin', 'begin: $evt.$name == "lock:ACQUIRE"'),
      end: input('act-end', 'end: $evt.$name == "lock:RELEASE"'),
      key: input('act-key', 'key (optional): mutex'),
    };
    const add = el('button', { id: 'act-add', type: 'button' }, 'Add');
    add.onclick = () => void this.add();
    for (const i of Object.values(this.inputs)) {
      i.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') void this.add();
      });
    }
    this.periods = el('textarea', {
      id: 'per-defs',
      rows: '2',
      spellcheck: 'false',
      placeholder: 'or periods, one per line: NAME[(PARENT)] : BEGIN [: END]',
    });
    const addPeriods = el('button', { id: 'per-add', type: 'button' }, 'Add periods');
    addPeriods.onclick = () => void this.addPeriods();
    this.error = el('div', { class: 'expr-error', id: 'act-error' });
    this.error.hidden = true;
    this.status = el('div', { class: 'status', id: 'act-status' });
    this.list = el('div', { id: 'act-defs' });
    box.append(this.inputs.begin, this.inputs.end, this.inputs.key, add, this.periods, addPeriods, this.error, this.status, this.list);
    acts.onChange(() => this.render());
  }

  busy(): boolean {
    return this.adding;
  }

  private async add(): Promise<void> {
    const d = { kind: 'activities' as const, begin: this.inputs.begin.value, end: this.inputs.end.value, key: this.inputs.key.value.trim() };
    if (!d.begin.trim() || !d.end.trim()) {
      this.error.hidden = false;
      this.error.textContent = 'An activity needs a begin and an end condition.';
      return;
    }
    await this.submit(d, () => {
      for (const i of Object.values(this.inputs)) i.value = '';
    });
  }

  private async addPeriods(): Promise<void> {
    const periods = this.periods.value.split('\n').filter((l) => l.trim());
    if (!periods.length) {
      this.error.hidden = false;
      this.error.textContent = 'Periods: one definition per line, NAME[(PARENT)] : BEGIN [: END].';
      return;
    }
    await this.submit({ kind: 'periods', periods }, () => {
      this.periods.value = '';
    });
  }

  private async submit(d: ActivityDefinition, done: () => void): Promise<void> {
    this.adding = true;
    this.error.hidden = true;
    this.status.textContent = 'finding the intervals…';
    try {
      await this.acts.add(d);
      this.status.textContent = '';
      done();
    } catch (e) {
      this.status.textContent = '';
      const which = e instanceof ApiError ? e.expr : null;
      if (d.kind === 'activities' && (which === 'begin' || which === 'end' || which === 'key')) {
        showExprError(this.error, d[which], e);
        this.error.prepend(el('div', { class: 'expr-message' }, `in the ${which} ${which === 'key' ? '' : 'condition'}:`));
        this.inputs[which].focus();
      } else if (e instanceof ApiError && e.text !== null) {
        showExprError(this.error, e.text, e);
        this.error.prepend(el('div', { class: 'expr-message' }, `in the ${which ?? 'definition'}:`));
        if (d.kind === 'periods') this.periods.focus();
      } else {
        showExprError(this.error, '', e);
      }
    } finally {
      this.adding = false;
    }
  }

  private render(): void {
    this.list.replaceChildren(
      ...this.acts.defs.map((d) => {
        const line = el('div', { class: 'act-def' });
        const swatch = el('span', { class: 'swatch' });
        swatch.style.background = d.colour;
        const remove = el('button', { type: 'button', title: 'Remove', class: 'act-remove' }, '×');
        remove.onclick = () => this.acts.remove(d.id);
        const kind = d.kind === 'periods' ? d.periods.join('\n') : defLabel(d);
        line.append(swatch, el('span', { class: 'act-label', title: kind }, defLabel(d)), remove);
        return line;
      }),
    );
  }
}

// --- The Activities tab ------------------------------------------------------------------------

export class ActivitiesTab {
  private select: HTMLSelectElement;
  private name: HTMLSelectElement;
  private sort: HTMLSelectElement;
  private status: HTMLElement;
  private stats: HTMLElement;
  private histogram: HTMLElement;
  private table: HTMLTableElement;
  private shown = false;
  private timer: number | null = null;
  private c: AbortController | null = null;
  private last = '';

  constructor(
    box: HTMLElement,
    private acts: Activities,
    private state: State,
    /** An activity was clicked: show it. */
    private pick: (a: Activity) => void,
  ) {
    this.select = el('select', { id: 'act-which', 'aria-label': 'Activity' });
    this.name = el('select', { id: 'act-name', 'aria-label': 'Period name' });
    this.name.hidden = true;
    this.sort = el('select', { id: 'act-sort', 'aria-label': 'Order' });
    this.sort.append(el('option', { value: 'begin' }, 'by begin time'), el('option', { value: 'duration' }, 'longest first'));
    this.status = el('span', { id: 'act-tab-status', class: 'status' });
    const tools = el('div', { class: 'an-tools' });
    tools.append(this.select, this.name, this.sort, this.status);
    this.stats = el('div', { id: 'act-stats', class: 'act-stats' });
    this.histogram = el('div', { id: 'act-hist', class: 'act-hist' });
    this.table = el('table', { id: 'act-list', class: 'lami' });
    const top = el('div', { class: 'act-top' });
    top.append(this.stats, this.histogram);
    box.append(tools, top, this.table);
    this.select.onchange = () => {
      this.options();
      this.schedule(0);
    };
    this.name.onchange = () => this.schedule(0);
    this.sort.onchange = () => this.schedule(0);
    acts.onChange(() => {
      this.options();
      this.schedule(0);
    });
    this.options();
  }

  private options(): void {
    const keep = this.select.value;
    this.select.replaceChildren(...this.acts.defs.map((d) => el('option', { value: String(d.id) }, defLabel(d))));
    if (this.acts.defs.some((d) => String(d.id) === keep)) this.select.value = keep;
    // Periods: all of them, or those of one name.
    const def = this.acts.defs.find((d) => String(d.id) === this.select.value);
    const names = def?.kind === 'periods' ? [...new Set(def.periods.map(periodName))] : [];
    const keepName = this.name.value;
    this.name.replaceChildren(el('option', { value: '' }, 'every period'), ...names.map((n) => el('option', { value: n }, n)));
    if (names.includes(keepName)) this.name.value = keepName;
    this.name.hidden = names.length < 2;
  }

  setShown(on: boolean): void {
    this.shown = on;
    if (on) this.schedule(0);
  }

  busy(): boolean {
    return this.timer !== null || this.c !== null;
  }

  /** The range changed (or the definitions): list again after a pause. */
  schedule(ms = 300): void {
    if (!this.shown) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = window.setTimeout(() => {
      this.timer = null;
      void this.update();
    }, ms);
  }

  private async update(): Promise<void> {
    const def = this.acts.defs.find((d) => String(d.id) === this.select.value);
    if (!def) {
      this.last = '';
      this.status.textContent = 'No activity defined: add one in the side panel (Activities).';
      this.stats.replaceChildren();
      this.histogram.replaceChildren();
      this.table.replaceChildren();
      return;
    }
    const r = this.state.range ?? this.state.view;
    const from = Math.max(0, Math.floor(r.from));
    const to = Math.max(from + 1, Math.ceil(r.to));
    const sort = this.sort.value === 'duration' ? 'duration' : 'begin';
    const name = this.name.hidden ? '' : this.name.value;
    const key = JSON.stringify([def.id, from, to, sort, name]);
    if (key === this.last) return;
    this.c?.abort();
    const c = new AbortController();
    this.c = c;
    const tod = (t: number): string => formatTimeOfDay(this.state.originTod + t);
    try {
      const a = await getActivities(def, from, to, { sort, limit: LIST_LIMIT, bins: 20, name: name || undefined }, c.signal);
      this.last = key;
      const where = `${this.state.range ? 'selection' : 'visible range'} ${tod(from)} – ${tod(to)}`;
      this.status.textContent = `${formatCount(a.count)} overlapping the ${where}${a.more ? ` (the first ${formatCount(LIST_LIMIT)} listed)` : ''}`;
      this.renderStats(a);
      this.renderHistogram(a);
      this.renderList(a.activities);
    } catch (e) {
      if (!isAbort(e)) this.status.textContent = `activities: ${e instanceof Error ? e.message : String(e)}`;
    } finally {
      if (this.c === c) this.c = null;
    }
  }

  private renderStats(a: ActivitiesAnswer): void {
    const line = (label: string, s: ActivitiesAnswer['range']): HTMLElement => {
      const d = el('div', { class: 'act-stat' });
      d.textContent = s
        ? `${label}: ${formatCount(s.count)} · min ${formatDuration(s.min_ns)} · avg ${formatDuration(s.avg_ns)} · max ${formatDuration(s.max_ns)} · stdev ${s.stdev_ns === null ? '—' : formatDuration(s.stdev_ns)}`
        : `${label}: none`;
      return d;
    };
    const notes: string[] = [];
    if (a.unfinished) notes.push(`${formatCount(a.unfinished)} never ended`);
    if (a.unmatched_ends) notes.push(`${formatCount(a.unmatched_ends)} ends without a begin`);
    if (a.unkeyed) notes.push(`${formatCount(a.unkeyed)} events without the key`);
    if (a.truncated) notes.push(truncation(a, this.state.originTod));
    this.stats.replaceChildren(line('in range', a.range), ...a.totals.map((t) => line(t.name ? `whole trace, ${t.name}` : 'whole trace', t)));
    if (!a.totals.length) this.stats.append(line('whole trace', null));
    if (notes.length) this.stats.append(el('div', { class: 'status' }, notes.join(' · ')));
    if (a.error) this.stats.append(el('div', { class: 'an-error' }, a.error));
  }

  private renderHistogram(a: ActivitiesAnswer): void {
    this.histogram.replaceChildren(...histogram('', 'durations in range', a.histogram ?? []).childNodes);
  }

  private renderList(list: Activity[]): void {
    const tod = (t: number): string => formatTimeOfDay(this.state.originTod + t);
    const row = (r: number | null): string => (r === null ? '—' : (this.state.rowById.get(r)?.label ?? `row ${r}`));
    const head = this.table.createTHead();
    head.replaceChildren();
    const hr = head.insertRow();
    const periods = list.some((a) => a.name);
    const cols = [['begin', false], ['end', false], ['duration (µs)', true], [periods ? 'period' : 'group', false], ['row', false]] as const;
    for (const [t, num] of cols) {
      const th = el('th', num ? { class: 'num' } : {}, t);
      hr.appendChild(th);
    }
    const body = el('tbody');
    for (const a of list) {
      const tr = el('tr', { class: 'act-line' });
      tr.dataset['begin'] = String(a.begin);
      tr.dataset['end'] = String(a.end);
      const rows = a.rows[0] === a.rows[1] ? row(a.rows[0]) : `${row(a.rows[0])} → ${row(a.rows[1])}`;
      tr.append(
        el('td', {}, tod(a.begin)),
        el('td', {}, tod(a.end)),
        el('td', { class: 'num', title: formatDuration(a.duration) }, (a.duration / 1e3).toFixed(3)),
        el('td', {}, periods ? a.name + (a.group ? ` (${a.group})` : '') : a.group),
        el('td', {}, rows),
      );
      tr.onclick = () => this.pick(a);
      body.appendChild(tr);
    }
    this.table.querySelector('tbody')?.remove();
    this.table.appendChild(body);
  }
}
