// The event list: the lines of `reef print`, virtualised. A fixed line
// height; a scroll container whose content is total × height tall (capped,
// with a scaled mapping beyond); only the lines on screen are fetched, with
// /api/events, and only they are in the DOM.
//
// Lines are cached by index in the (filtered) list. Every line the server
// gives carries its position (t, skip): "the skip-th event with time ≥ t".
// The server finds a position quickly from its time (checkpoints) but walks
// the events for the skip, so lines next to known ones are asked relative
// to them (forward from the previous line, back=1 from the next one); for
// a far index (a drag of the scrollbar) a time is interpolated between
// known (index, time) points and the answer's exact `before` tells where
// that landed, until the index is reached.

import { getEvents, isAbort, type EventLine, type EventsAnswer } from './api';
import { clamp, el } from './format';
import type { Selected, State } from './state';

const LINE_H = 18;
/** The tallest the scroll content gets; beyond, scroll positions are scaled. */
const MAX_SCROLL_H = 4_000_000;
/** Lines fetched per request at most (the API's limit is 1000). */
const CHUNK = 200;
/** Lines kept around the screen. */
const OVERSCAN = 20;
const MAX_CACHED = 20000;
/**
 * How far (in lines) a request may reach from a known line: forward, the
 * server walks the lines skipped (cheap up to a few hundred thousand);
 * backward, `back=1` gives at most 1000 lines.
 */
const NEAR_FORWARD = 200_000;
const NEAR_BACK = 1000;
/** A far jump aims this many lines before the index (doubled at each miss), to land just before it. */
const FAR_AIM = 20_000;
/** Interpolation steps towards a far index before asking with skip from 0. */
const MAX_FAR_TRIES = 6;

export interface ListCallbacks {
  /** A line was chosen (click or keys): the timeline centres on it. */
  selected(s: Selected): void;
}

export class EventList {
  private spacer: HTMLElement;
  private linesEl: HTMLElement;
  private status: HTMLElement;
  private total = 0;
  /** End time of the trace (for interpolating far positions). */
  private end = 0;
  private entries = new Map<number, EventLine>();
  /** Requests in flight: first index → its controller and line count. */
  private pending = new Map<number, { c: AbortController; n: number }>();
  private renderPending = false;
  /** Bumped when cached lines become invalid (filter, generation). */
  private epoch = 0;
  private jumping = 0;
  /** The epoch whose total was asked for (an empty list fetches once to learn it). */
  private probed = -1;
  private farTries = new Map<number, number>();
  private firstShown = 0;

  constructor(
    private box: HTMLElement,
    private state: State,
    private cb: ListCallbacks,
  ) {
    this.spacer = el('div', { class: 'list-spacer' });
    this.linesEl = el('div', { class: 'list-lines' });
    this.status = el('div', { class: 'list-status' });
    box.append(this.spacer, this.linesEl);
    box.parentElement?.appendChild(this.status);
    box.tabIndex = 0;
    box.addEventListener('scroll', () => this.schedule());
    box.addEventListener('click', (e) => {
      const line = (e.target as HTMLElement).closest<HTMLElement>('.ev-line');
      if (line) this.selectIndex(Number(line.dataset['index']), false);
    });
    box.addEventListener('keydown', (e) => this.onKey(e));
    new ResizeObserver(() => this.schedule()).observe(box);
  }

  busy(): boolean {
    return this.pending.size > 0 || this.renderPending || this.jumping > 0;
  }

  /** Drops the cached lines (the filter changed, or the index grew). */
  reset(keepPosition: boolean): void {
    this.epoch++;
    this.abortAll();
    this.entries.clear();
    this.farTries.clear();
    if (!keepPosition) {
      this.total = 0;
      this.box.scrollTop = 0;
    }
    this.schedule();
  }

  /** The trace's end (ns from the origin), to interpolate far positions. */
  setEnd(end: number): void {
    this.end = end;
  }

  setTotal(total: number): void {
    if (total !== this.total) {
      this.total = total;
      this.schedule();
    }
  }

  private abortAll(): void {
    for (const p of this.pending.values()) p.c.abort();
    this.pending.clear();
  }

  // --- Position mapping -------------------------------------------------------------

  private viewLines(): number {
    return Math.max(1, Math.floor(this.box.clientHeight / LINE_H));
  }

  private contentH(): number {
    return Math.min(this.total * LINE_H, MAX_SCROLL_H);
  }

  /** The (fractional) index of the line at the top of the box. */
  private firstFloat(): number {
    if (this.total * LINE_H <= MAX_SCROLL_H) return this.box.scrollTop / LINE_H;
    const maxScroll = Math.max(1, this.contentH() - this.box.clientHeight);
    const lastFirst = Math.max(0, this.total - this.box.clientHeight / LINE_H);
    return (this.box.scrollTop / maxScroll) * lastFirst;
  }

  private scrollTopFor(first: number): number {
    if (this.total * LINE_H <= MAX_SCROLL_H) return first * LINE_H;
    const maxScroll = Math.max(1, this.contentH() - this.box.clientHeight);
    const lastFirst = Math.max(1, this.total - this.box.clientHeight / LINE_H);
    return (first / lastFirst) * maxScroll;
  }

  /** Scrolls so that line i is on screen (in the middle if `center` or if it was not). */
  scrollToIndex(i: number, center: boolean): void {
    const ff = this.firstFloat();
    const n = this.viewLines();
    if (!center && i >= ff && i < ff + n - 1) return;
    const first = clamp(i - Math.floor(n / 2), 0, Math.max(0, this.total - n));
    this.spacer.style.height = `${this.contentH()}px`;
    this.box.scrollTop = this.scrollTopFor(first);
    this.schedule();
  }

  // --- Rendering ---------------------------------------------------------------------------

  private schedule(): void {
    if (this.renderPending) return;
    this.renderPending = true;
    requestAnimationFrame(() => {
      this.renderPending = false;
      this.render();
    });
  }

  private render(): void {
    this.spacer.style.height = `${this.contentH()}px`;
    const ff = this.firstFloat();
    const first = Math.max(0, Math.floor(ff));
    const last = Math.min(this.total, first + this.viewLines() + 2);
    // The lines box moves with the scroll; within it, lines start at the
    // fractional offset of the first one.
    const top = this.box.scrollTop - (ff - first) * LINE_H;
    this.linesEl.style.transform = `translateY(${top}px)`;
    const sel = this.state.selected;
    const frag = document.createDocumentFragment();
    for (let i = first; i < last; i++) {
      const e = this.entries.get(i);
      if (!e) {
        frag.appendChild(el('div', { class: 'ev-pending' }, '…'));
        continue;
      }
      const d = el('div', { class: 'ev-line' }, e.line);
      d.dataset['t'] = String(e.t);
      d.dataset['row'] = e.row === null ? '' : String(e.row);
      d.dataset['index'] = String(i);
      if (sel && sel.index === i) d.classList.add('selected');
      frag.appendChild(d);
    }
    this.linesEl.replaceChildren(frag);
    this.firstShown = first;
    this.fetchMissing(Math.max(0, first - OVERSCAN), Math.min(this.total, last + OVERSCAN), first);
    if (this.total === 0 && this.probed !== this.epoch && !this.pending.size && !this.jumping) {
      // The total is not known (a new filter): the first lines tell it.
      this.probed = this.epoch;
      this.request(0, CHUNK, getEvents(0, CHUNK, 0, false, this.state.filterId, undefined));
    }
    const fmt = (n: number): string => n.toLocaleString('en-US');
    this.status.textContent = this.total ? `${fmt(first + 1)}–${fmt(last)} of ${fmt(this.total)} events` : 'no events';
  }

  /** Fetches the lines of [a, b) that are neither cached nor being fetched (those near `focus` first). */
  private fetchMissing(a: number, b: number, focus: number): void {
    for (const [start, p] of this.pending) {
      if (start + p.n < a - CHUNK || start > b + CHUNK) {
        p.c.abort();
        this.pending.delete(start);
      }
    }
    const runs: [number, number][] = [];
    let i = a;
    while (i < b) {
      if (this.entries.has(i) || this.isPending(i)) {
        i++;
        continue;
      }
      let j = i;
      while (j < b && j - i < CHUNK && !this.entries.has(j) && !this.isPending(j)) j++;
      runs.push([i, j]);
      i = j;
    }
    runs.sort((x, y) => Math.abs(x[0] - focus) - Math.abs(y[0] - focus));
    // One far jump at a time: its answer will tell where the others are.
    let far = false;
    for (const [x, y] of runs) {
      if (!this.fetchRange(x, y, far)) far = true;
    }
  }

  private isPending(i: number): boolean {
    for (const [start, p] of this.pending) if (i >= start && i < start + p.n) return true;
    return false;
  }

  /** The nearest cached index to i on one side (within `limit` lines), or null. */
  private nearest(i: number, side: -1 | 1, limit: number): number | null {
    let best: number | null = null;
    for (const k of this.entries.keys()) {
      const d = (k - i) * side;
      if (d > 0 && d <= limit && (best === null || d < (best - i) * side)) best = k;
    }
    return best;
  }

  /**
   * Asks for the lines [a, b). Returns false when that was (or would be) a
   * far jump and `noFar` forbids one.
   */
  private fetchRange(a: number, b: number, noFar: boolean): boolean {
    const filter = this.state.filterId;
    const n = b - a;
    const prev = this.entries.get(a - 1);
    if (prev) return this.request(a, n, getEvents(prev.t, n, prev.skip + 1, false, filter, this.signal(a, n)));
    const next = this.entries.get(b);
    if (next) return this.request(a, n, getEvents(next.t, n, next.skip, true, filter, this.signal(a, n)));
    const lo = this.nearest(a, -1, NEAR_FORWARD);
    if (lo !== null) {
      const e = this.entries.get(lo)!;
      return this.request(a, n, getEvents(e.t, n, e.skip + (a - lo), false, filter, this.signal(a, n)));
    }
    const hi = this.nearest(b - 1, 1, NEAR_BACK);
    if (hi !== null && hi - a <= NEAR_BACK) {
      const e = this.entries.get(hi)!;
      return this.request(a, n, getEvents(e.t, hi - a, e.skip, true, filter, this.signal(a, n)));
    }
    if (a === 0) return this.request(a, n, getEvents(0, n, 0, false, filter, this.signal(a, n)));
    if (noFar) return false;
    const tries = this.farTries.get(a) ?? 0;
    this.farTries.set(a, tries + 1);
    if (tries >= MAX_FAR_TRIES) {
      // Give up interpolating: exact, but the server walks `a` events.
      return this.request(a, n, getEvents(0, n, a, false, filter, this.signal(a, n)));
    }
    // A far index: a time interpolated between the known points around
    // it, aimed a little before it so that the answer lands within a
    // forward request's reach.
    const target = Math.max(0, a - FAR_AIM * 2 ** tries);
    let i1 = 0;
    let t1 = 0;
    let i2 = Math.max(1, this.total);
    let t2 = this.end + 1;
    for (const [k, e] of this.entries) {
      if (k <= target && k >= i1) {
        i1 = k;
        t1 = e.t;
      }
      if (k > target && k < i2) {
        i2 = k;
        t2 = e.t;
      }
    }
    const t = Math.floor(t1 + ((target - i1) / Math.max(1, i2 - i1)) * (t2 - t1));
    this.request(a, n, getEvents(Math.max(0, t), n, 0, false, filter, this.signal(a, n)));
    return false;
  }

  private signal(a: number, n: number): AbortSignal {
    const c = new AbortController();
    this.pending.set(a, { c, n });
    return c.signal;
  }

  /** Stores an answer's lines where `before` says they are. */
  private request(a: number, n: number, req: Promise<EventsAnswer>): boolean {
    const epoch = this.epoch;
    if (!this.pending.has(a)) this.signal(a, n);
    const p = this.pending.get(a)!;
    req
      .then((ans) => {
        if (epoch !== this.epoch) return;
        if (ans.total !== this.total) this.total = ans.total;
        ans.events.forEach((e, k) => this.entries.set(ans.before + k, e));
        if (ans.before <= a && a < ans.before + ans.events.length) this.farTries.delete(a);
        this.trim();
      })
      .catch((e: unknown) => {
        if (!isAbort(e)) console.warn('events:', e);
      })
      .finally(() => {
        if (this.pending.get(a) === p) this.pending.delete(a);
        this.schedule();
      });
    return true;
  }

  private trim(): void {
    if (this.entries.size <= MAX_CACHED) return;
    const keep = this.firstShown;
    for (const i of this.entries.keys()) {
      if (Math.abs(i - keep) > MAX_CACHED / 4) this.entries.delete(i);
    }
  }

  // --- Selection -------------------------------------------------------------------------------

  private selectIndex(i: number, center: boolean): void {
    const e = this.entries.get(i);
    if (!e) return;
    const s: Selected = { t: e.t, skip: e.skip, row: e.row, line: e.line, index: i };
    this.state.select(s);
    this.scrollToIndex(i, center);
    this.cb.selected(s);
    this.schedule();
  }

  private onKey(e: KeyboardEvent): void {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    e.preventDefault();
    e.stopPropagation();
    const d = e.key === 'ArrowDown' ? 1 : -1;
    const i = this.state.selected?.index ?? Math.floor(this.firstFloat()) - d;
    const j = clamp(i + d, 0, this.total - 1);
    if (this.entries.has(j)) this.selectIndex(j, false);
    else this.scrollToIndex(j, false);
  }

  /**
   * Selects the event at position (ev.t, ev.skip) of the list (a mark
   * clicked, a search hit): fetched with the lines after it, scrolled to
   * the middle and highlighted.
   */
  async selectEvent(ev: EventLine): Promise<void> {
    this.jumping++;
    try {
      const ans = await getEvents(ev.t, CHUNK, ev.skip, false, this.state.filterId);
      this.adopt(ans);
      const e = ans.events[0];
      if (e) this.state.select({ t: e.t, skip: e.skip, row: e.row, line: e.line, index: ans.before });
      this.scrollToIndex(ans.before, true);
    } finally {
      this.jumping--;
    }
  }

  /**
   * After a filter change: finds the selected event (same time, row and
   * text) in the new list and selects it again; if the filter hides it,
   * shows where it would be. Returns whether it is in the list.
   */
  async relocate(s: Selected): Promise<boolean> {
    this.jumping++;
    try {
      const ans = await getEvents(s.t, 1000, 0, false, this.state.filterId);
      this.adopt(ans);
      // Compared without the delta, which is from the previous event of the list.
      const k = ans.events.findIndex((e) => e.t === s.t && e.row === s.row && sansDelta(e.line) === sansDelta(s.line));
      const e = k >= 0 ? ans.events[k]! : null;
      if (e) this.state.select({ t: e.t, skip: e.skip, row: e.row, line: e.line, index: ans.before + k });
      else this.state.select({ ...s, index: null });
      this.scrollToIndex(ans.before + Math.max(0, k), true);
      return e !== null;
    } finally {
      this.jumping--;
    }
  }

  /** Drops the cache for a fresh answer at a new place. */
  private adopt(ans: EventsAnswer): void {
    this.epoch++;
    this.abortAll();
    this.entries.clear();
    this.farTries.clear();
    this.total = ans.total;
    ans.events.forEach((e, k) => this.entries.set(ans.before + k, e));
    this.schedule();
  }

  /** Re-renders (the selection changed elsewhere). */
  refresh(): void {
    this.schedule();
  }
}

/** A line without its `(+delta)` column. */
function sansDelta(line: string): string {
  return line.replace(/^(\[[^\]]*\] )\(\+[^)]*\) /, '$1');
}
