// The timeline: a canvas with the row labels on the left, the time axis on
// top and, per visible row, the state bars and the event marks drawn from
// /api/window; wakeup arrows from /api/arrows; tooltips; zoom, pan and range
// selection with the mouse and the keyboard; back/forward through views.
//
// Only the rows in the viewport are asked for and drawn, so thousands of
// thread rows cost nothing until scrolled to. Drawing happens in
// requestAnimationFrame and only when something changed; fetching is
// debounced while the view moves, and meanwhile whatever level is cached is
// drawn scaled (see tiles.ts).
//
// Samples (`reef:sample`) also get a lane of their own at the bottom of
// their row: dark ticks from the marks of a filter keeping only them (so
// exact counts at every zoom level, as the other marks), apart from the
// ordinary marks' coloured blocks.

import { distToSegment, drawArrow } from './draw';
import {
  B_CHANGES,
  B_COUNT,
  B_FIRST,
  B_J,
  B_V,
  getArrows,
  getEvent,
  getWindow,
  isAbort,
  makeFilter,
  type Arrow,
  type Bucket,
  type EventLine,
  type Row,
} from './api';
import {
  IDLE_COLOUR,
  THREAD_STATES,
  clamp,
  colourFor,
  colourForName,
  formatCount,
  formatDuration,
  formatDurationShort,
  formatTimeOfDay,
} from './format';
import { buildLines, type Line } from './layout';
import type { Range, State } from './state';
import { TILE, TileCache, type Need } from './tiles';

const LABEL_W = 230;
const AXIS_H = 44;
const ROW_H = 22;
const INDENT = 14;
/** Debounce of fetches while the view moves, and their longest delay. */
const FETCH_DEBOUNCE_MS = 60;
const FETCH_MAX_WAIT_MS = 250;
/** A view left alone this long becomes an entry of the back/forward history. */
const HISTORY_SETTLE_MS = 400;
const FRAME_LOG = 240;

/** A run of buckets to draw: `b` at resolution `res`, clipped to [lo, hi). */
interface Segment {
  b: Bucket[];
  res: number;
  lo: number;
  hi: number;
  /** The value at `hi` when known (first bucket of what follows). */
  endV: number | null;
}

interface MarkHit {
  row: Row;
  from: number;
  to: number;
  count: number;
}

interface Tip {
  key: string;
  token: number;
}

/** Where on the canvas an x, y falls. */
interface Place {
  area: 'axis' | 'labels' | 'plot' | 'none';
  line: Line | null;
  lineIndex: number;
  t: number;
  /** y inside the row, 0..ROW_H. */
  dy: number;
}

type Drag =
  | { kind: 'pan'; x0: number; from0: number; to0: number; moved: boolean }
  | { kind: 'range'; t0: number; moved: boolean; x0: number };

/** Where a row is drawn on the canvas, and where a time is. */
export interface OverlayGeometry {
  xOf(t: number): number;
  /** The row's box (CSS px), or null when it is not on screen. */
  rowBox(rowId: number): { y: number; h: number } | null;
  plotLeft: number;
  plotRight: number;
}

/** Something drawn over the rows (activities), with its own data and tooltips. */
export interface Overlay {
  /** The visible range or the rows on screen changed: fetch what is drawn. */
  viewChanged(from: number, to: number, widthPx: number): void;
  draw(ctx: CanvasRenderingContext2D, g: OverlayGeometry): void;
  /** The tooltip at (x, y), canvas CSS px: a key (same key, same tooltip) and its lines. */
  hit(x: number, y: number, g: OverlayGeometry): { key: string; rows: [string, string][] } | null;
  busy(): boolean;
}

/** Follow mode's default span: the newest 10 s of a live trace. */
const LIVE_SPAN = 10e9;

export interface TimelineCallbacks {
  /** A mark was clicked: its first event. */
  markClicked(ev: EventLine): void;
  /** The view changed (for the statistics panel, the status line). */
  viewChanged(): void;
  /** Follow mode was turned off by moving the view. */
  followChanged?(): void;
}

export class Timeline {
  private ctx: CanvasRenderingContext2D;
  private dpr = 1;
  private cssW = 0;
  private cssH = 0;
  private from = 0;
  private to = 1;
  /** True until the user moves the view: the view follows the trace while it is indexed. */
  private following = true;
  private followingNewest = false;
  private followSpan: number | null = null;
  /** The newest time the tiles asked for cover (the trace's end as then known). */
  private wantedEnd = 0;
  /** Frames drawn with every tile in: wall-clock time (ms) and the newest time covered. */
  private drawnLog: { wall: number; end: number }[] = [];
  private scrollY = 0;
  private lines: Line[] = [];
  private lineOfRow = new Map<number, number>();
  private collapsed = new Set<string>();
  private cache: TileCache;
  private dirty = true;
  private rafPending = false;
  private frameLog: number[] = [];
  private fetchTimer: number | null = null;
  private fetchFirstAsk = 0;
  private drag: Drag | null = null;
  private mouse: { x: number; y: number } | null = null;
  private tip: Tip | null = null;
  private tipToken = 0;
  private tipTimer: number | null = null;
  private tipBusy = false;
  private arrowsOn = true;
  private arrows: { from: number; to: number; list: Arrow[]; more: boolean } | null = null;
  private arrowsController: AbortController | null = null;
  private rangeCounts: { range: Range; filter: number | null; gen: number; counts: Map<number, number> | null } | null =
    null;
  private countsController: AbortController | null = null;
  /** Callbacks wait until the constructor is done. */
  private constructed = false;
  private history: Range[] = [];
  private historyIndex = -1;
  private overlay: Overlay | null = null;
  private historyTimer: number | null = null;
  /** The marks of the samples alone: a filter of /api/filter, its tiles, and whether it is complete. */
  private samples: { id: number | null; ready: boolean; asking: boolean; cache: TileCache } = {
    id: null,
    ready: false,
    asking: false,
    cache: new TileCache(() => this.invalidate()),
  };
  /** Sample ticks drawn in the last frame (for tests). */
  private sampleTicks: { row: number; x: number; count: number }[] = [];

  constructor(
    private canvas: HTMLCanvasElement,
    private scroller: HTMLElement,
    private spacer: HTMLElement,
    private tooltip: HTMLElement,
    private state: State,
    private cb: TimelineCallbacks,
  ) {
    const ctx = canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('no 2D canvas');
    this.ctx = ctx;
    this.cache = new TileCache(() => this.invalidate());
    new ResizeObserver(() => this.resize()).observe(canvas.parentElement!);
    this.resize();
    this.listen();
    this.constructed = true;
  }

  // --- Public API --------------------------------------------------------------

  /** The canvas (what the export saves). */
  canvasElement(): HTMLCanvasElement {
    return this.canvas;
  }

  setOverlay(o: Overlay): void {
    this.overlay = o;
    this.invalidate();
    this.fetch();
  }

  /** The overlay's data changed or must be fetched again. */
  overlayChanged(): void {
    this.fetch();
    this.invalidate();
  }

  view(): Range {
    return { from: this.from, to: this.to };
  }

  /** The rows changed (or the hidden ones): rebuild the lines. */
  setRows(): void {
    this.lines = buildLines(this.state.rows, this.state.hiddenRows, this.collapsed);
    this.lineOfRow = new Map();
    this.lines.forEach((l, i) => {
      if (l.row) this.lineOfRow.set(l.row.id, i);
    });
    this.spacer.style.height = `${this.lines.length * ROW_H + AXIS_H}px`;
    this.scrollY = clamp(this.scrollY, 0, this.maxScrollY());
    this.viewMoved(false);
  }

  /** The trace grew (while indexing) or the filter changed: refetch what is shown. */
  dataChanged(): void {
    if (this.following) this.fitAll(false);
    else if (this.followingNewest) this.slideToNewest();
    this.viewMoved(false);
  }

  /**
   * Follow mode (a live trace): keeps the newest time in view until the
   * view is moved by hand. `span` null: the whole trace while it is
   * shorter than LIVE_SPAN, then the newest LIVE_SPAN; else that span.
   */
  setFollowNewest(on: boolean, span: number | null = this.to - this.from): void {
    this.followingNewest = on;
    this.followSpan = span;
    if (on) {
      this.following = false;
      this.slideToNewest();
      this.viewMoved(false);
    }
  }

  isFollowingNewest(): boolean {
    return this.followingNewest;
  }

  private slideToNewest(): void {
    const full = this.fullRange();
    const want = this.followSpan ?? LIVE_SPAN;
    const span = Math.max(this.minSpan(), Math.min(want, full.to - full.from));
    this.to = full.to;
    this.from = Math.max(full.from, full.to - span);
    this.state.view = { from: this.from, to: this.to };
  }

  /** The range selection changed: its counts are fetched, the view redrawn. */
  rangeChanged(): void {
    this.fetchRangeCounts();
    this.invalidate();
  }

  filterChanged(): void {
    this.rangeCounts = null;
    this.viewMoved(false);
  }

  /** Sets the visible range [from, to) (ns from the origin). */
  setView(from: number, to: number, record = true): void {
    const full = this.fullRange();
    let span = Math.max(to - from, this.minSpan());
    span = Math.min(span, full.to - full.from);
    from = clamp(from, full.from, full.to - span);
    this.from = from;
    this.to = from + span;
    this.following = false;
    if (this.followingNewest) {
      this.followingNewest = false;
      this.cb.followChanged?.();
    }
    this.state.view = { from: this.from, to: this.to };
    this.viewMoved(record);
  }

  /** Keeps the span, centres on t. */
  centerOn(t: number): void {
    const span = this.to - this.from;
    this.setView(t - span / 2, t + span / 2);
  }

  fitAll(record = true): void {
    const full = this.fullRange();
    this.from = full.from;
    this.to = full.to;
    this.state.view = { from: this.from, to: this.to };
    this.viewMoved(record);
  }

  reset(): void {
    this.fitAll(true);
    this.following = this.state.info?.state === 'building';
  }

  zoom(factor: number, aroundT?: number): void {
    const t = aroundT ?? (this.from + this.to) / 2;
    this.setView(t - (t - this.from) * factor, t + (this.to - t) * factor);
  }

  pan(fraction: number): void {
    const d = (this.to - this.from) * fraction;
    this.setView(this.from + d, this.to + d);
  }

  zoomToSelection(): void {
    const r = this.state.range;
    if (r && r.to > r.from) this.setView(r.from, r.to);
  }

  back(): void {
    this.commitHistory();
    if (this.historyIndex > 0) {
      this.historyIndex--;
      const v = this.history[this.historyIndex]!;
      this.setView(v.from, v.to, false);
    }
  }

  forward(): void {
    if (this.historyIndex < this.history.length - 1) {
      this.historyIndex++;
      const v = this.history[this.historyIndex]!;
      this.setView(v.from, v.to, false);
    }
  }

  canGoBack(): boolean {
    return this.historyIndex > 0 || (this.historyTimer !== null && this.historyIndex >= 0);
  }

  canGoForward(): boolean {
    return this.historyIndex < this.history.length - 1;
  }

  setArrowsVisible(on: boolean): void {
    this.arrowsOn = on;
    this.viewMoved(false);
  }

  arrowsVisible(): boolean {
    return this.arrowsOn;
  }

  /** Ids of the rows with data that are (at least partly) on screen. */
  visibleRows(): number[] {
    const [a, b] = this.visibleLineRange();
    const out: number[] = [];
    for (let i = a; i < b; i++) {
      const r = this.lines[i]!.row;
      if (r) out.push(r.id);
    }
    return out;
  }

  /** Nothing to fetch, nothing fetching, nothing left to draw. */
  isReady(): boolean {
    return (
      !this.dirty &&
      !this.rafPending &&
      this.fetchTimer === null &&
      !this.cache.busy() &&
      !this.samples.cache.busy() &&
      !this.samples.asking &&
      !(this.hasSamples() && !this.samples.ready) &&
      this.arrowsController === null &&
      this.countsController === null &&
      this.tipTimer === null &&
      !this.tipBusy &&
      !(this.overlay?.busy() ?? false)
    );
  }

  /** The resolution the view is drawn at (the server's for a window as wide as the plot). */
  levelNow(): { k: number; res: number } {
    const k = this.level();
    return { k, res: 2 ** k };
  }

  /** The exact event counts per row of the range selection, once known. */
  rangeCountsNow(): Record<number, number> | null {
    const c = this.rangeCounts?.range === this.state.range ? this.rangeCounts?.counts : null;
    return c ? Object.fromEntries(c) : null;
  }

  /** Sample ticks of the last frame: row, client x, samples under the tick. */
  sampleTicksNow(): { row: number; x: number; count: number }[] {
    const r = this.canvas.getBoundingClientRect();
    return this.sampleTicks.map((t) => ({ row: t.row, x: r.left + t.x, count: t.count }));
  }

  /** The wakeup arrows drawn now (none when hidden or too many). */
  arrowsNow(): Arrow[] {
    return this.arrowsOn && this.arrows && !this.arrows.more ? this.arrows.list.slice() : [];
  }

  frameTimes(): number[] {
    return this.frameLog.slice();
  }

  /** When each newer end of the trace was first on screen (for the live latency). */
  drawnEnds(): { wall: number; end: number }[] {
    return this.drawnLog.slice();
  }

  /** Client x of time t (for tests). */
  timeToClientX(t: number): number {
    const r = this.canvas.getBoundingClientRect();
    return r.left + LABEL_W + (t - this.from) * this.scale();
  }

  /**
   * Client y of a row's bar (`part` = 'bar') or marks ('mark'), scrolling
   * the row into view first; null if the row is not shown.
   */
  rowClientY(id: number, part: 'bar' | 'mark' | 'sample' = 'bar'): number | null {
    const i = this.lineOfRow.get(id);
    if (i === undefined) return null;
    this.scrollToLine(i);
    const row = this.lines[i]!.row!;
    const bands = this.bands(row);
    const band =
      part === 'sample' && bands.sampleH
        ? [bands.sampleY!, bands.sampleH]
        : part === 'mark' && bands.markH
          ? [bands.markY, bands.markH]
          : [bands.barY, bands.barH];
    const r = this.canvas.getBoundingClientRect();
    return r.top + AXIS_H + i * ROW_H - this.scrollY + band[0]! + band[1]! / 2;
  }

  scrollToLine(i: number): void {
    const top = i * ROW_H;
    const h = this.plotH();
    if (top < this.scrollY || top + ROW_H > this.scrollY + h) {
      this.scrollY = clamp(top - h / 2, 0, this.maxScrollY());
      this.scroller.scrollTop = this.scrollY;
      this.viewMoved(false);
    }
  }

  // --- Geometry -------------------------------------------------------------------

  private plotW(): number {
    return Math.max(1, this.cssW - LABEL_W);
  }

  private plotH(): number {
    return Math.max(1, this.cssH - AXIS_H);
  }

  private scale(): number {
    return this.plotW() / (this.to - this.from);
  }

  private xOf(t: number): number {
    return LABEL_W + (t - this.from) * this.scale();
  }

  private tOf(x: number): number {
    return this.from + (x - LABEL_W) / this.scale();
  }

  private maxScrollY(): number {
    return Math.max(0, this.lines.length * ROW_H - this.plotH());
  }

  private minSpan(): number {
    // Down to about 8 px per nanosecond.
    return Math.max(16, this.plotW() / 8);
  }

  private fullRange(): Range {
    const end = this.state.info?.end ?? 0;
    return { from: 0, to: Math.max(end + 1, this.minSpan()) };
  }

  /** The server's level for the view: the largest k with 2^k ≤ span / width. */
  private level(): number {
    const per = (this.to - this.from) / this.plotW();
    return per < 2 ? 0 : Math.floor(Math.log2(per));
  }

  private visibleLineRange(): [number, number] {
    const a = Math.floor(this.scrollY / ROW_H);
    const b = Math.min(this.lines.length, Math.ceil((this.scrollY + this.plotH()) / ROW_H));
    return [Math.max(0, a), Math.max(0, b)];
  }

  private hasState(row: Row): boolean {
    return row.kind === 'cpu' || (row.kind === 'thread' && !!this.state.info?.kernel);
  }

  private hasMarks(row: Row): boolean {
    return row.kind !== 'thread' || !this.state.info?.kernel;
  }

  /** Vertical bands inside a row for its marks and its bar. */
  private bands(row: Row): { markY: number; markH: number; barY: number; barH: number; sampleY?: number; sampleH?: number } {
    const s = this.hasState(row);
    const m = this.hasMarks(row);
    if (m && !s && this.hasSamples()) return { markY: 2, markH: 10, barY: 0, barH: 0, sampleY: 14, sampleH: 7 };
    if (s && m) return { markY: 2, markH: 7, barY: 10, barH: 10 };
    if (s) return { markY: 0, markH: 0, barY: 5, barH: 12 };
    return { markY: 5, markH: 12, barY: 0, barH: 0 };
  }

  private place(x: number, y: number): Place {
    const t = this.tOf(x);
    if (y < AXIS_H) return { area: x >= LABEL_W ? 'axis' : 'none', line: null, lineIndex: -1, t, dy: 0 };
    const yy = y - AXIS_H + this.scrollY;
    const i = Math.floor(yy / ROW_H);
    const line = this.lines[i] ?? null;
    return { area: x < LABEL_W ? 'labels' : 'plot', line, lineIndex: line ? i : -1, t, dy: yy - i * ROW_H };
  }

  // --- Scheduling ---------------------------------------------------------------------

  private resize(): void {
    const parent = this.canvas.parentElement!;
    const w = parent.clientWidth;
    const h = parent.clientHeight;
    this.dpr = window.devicePixelRatio || 1;
    this.cssW = w;
    this.cssH = h;
    this.canvas.width = Math.max(1, Math.round(w * this.dpr));
    this.canvas.height = Math.max(1, Math.round(h * this.dpr));
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    if (this.following) this.fitAll(false);
    this.viewMoved(false);
  }

  /** Something drawn changed: redraw at the next frame. */
  invalidate(): void {
    this.dirty = true;
    if (!this.rafPending) {
      this.rafPending = true;
      requestAnimationFrame(() => {
        this.rafPending = false;
        if (this.dirty) this.draw();
      });
    }
  }

  /** The view or the rows moved: redraw now, fetch once things settle. */
  private viewMoved(record: boolean): void {
    this.invalidate();
    const now = performance.now();
    if (this.fetchTimer === null) this.fetchFirstAsk = now;
    else clearTimeout(this.fetchTimer);
    const wait = Math.max(0, Math.min(FETCH_DEBOUNCE_MS, this.fetchFirstAsk + FETCH_MAX_WAIT_MS - now));
    this.fetchTimer = window.setTimeout(() => {
      this.fetchTimer = null;
      this.fetch();
    }, wait);
    if (record) {
      if (this.historyTimer !== null) clearTimeout(this.historyTimer);
      this.historyTimer = window.setTimeout(() => this.commitHistory(), HISTORY_SETTLE_MS);
    }
    if (this.constructed) this.cb.viewChanged();
  }

  private commitHistory(): void {
    if (this.historyTimer === null) return;
    clearTimeout(this.historyTimer);
    this.historyTimer = null;
    const cur = this.history[this.historyIndex];
    if (cur && Math.abs(cur.from - this.from) < 1 && Math.abs(cur.to - this.to) < 1) return;
    this.history.splice(this.historyIndex + 1);
    this.history.push({ from: this.from, to: this.to });
    if (this.history.length > 200) this.history.shift();
    this.historyIndex = this.history.length - 1;
    this.cb.viewChanged();
  }

  /** Starts the history with the first view. */
  startHistory(): void {
    this.history = [{ from: this.from, to: this.to }];
    this.historyIndex = 0;
  }

  private fetch(): void {
    const info = this.state.info;
    if (!info) return;
    const k = this.level();
    const res = 2 ** k;
    const span = TILE * res;
    const rows = this.visibleRows();
    const needs: Need[] = [];
    if (rows.length) {
      const last = Math.floor(Math.max(0, Math.min(this.to, info.end + 1) - 1) / span);
      const a = Math.floor(Math.max(0, this.from) / span);
      const b = Math.min(Math.floor(Math.max(0, this.to - 1) / span), last);
      const mid = (this.from + this.to) / 2;
      for (let tile = a; tile <= b; tile++) {
        needs.push({ k, tile, rows, priority: Math.abs((tile + 0.5) * span - mid) });
      }
      // One tile on each side, after the rest: panning a little needs no wait.
      for (const tile of [a - 1, b + 1]) {
        if (tile >= 0 && tile <= last) needs.push({ k, tile, rows, priority: Number.MAX_SAFE_INTEGER });
      }
    }
    this.cache.want(needs, this.state.filterId, this.state.generation, info.end, info.state !== 'building');
    if (this.hasSamples()) this.fetchSamples(needs, info.end, info.state !== 'building');
    this.wantedEnd = Math.min(info.end, this.to);
    this.fetchArrows();
    this.fetchRangeCounts();
    this.overlay?.viewChanged(Math.max(0, Math.floor(this.from)), Math.ceil(this.to), this.plotW());
  }

  /** The trace has samples (`reef:sample`, a class of libreef's traces). */
  private hasSamples(): boolean {
    return !!this.state.info?.classes.includes('reef:sample');
  }

  /** The samples' own marks: the filter made once, asked again until built, then its tiles. */
  private fetchSamples(needs: Need[], end: number, complete: boolean): void {
    const s = this.samples;
    if (!s.ready) {
      if (s.asking) return;
      s.asking = true;
      makeFilter('$evt.$name == "reef:sample"', [], [])
        .then((f) => {
          if (f.id !== s.id) s.cache.clear();
          s.id = f.id;
          s.ready = f.state !== 'building';
          // Its tiles while it builds would be incomplete: drawn once built.
          if (!s.ready) window.setTimeout(() => this.viewMoved(false), 300);
          else this.viewMoved(false);
        })
        .catch((e: unknown) => {
          if (!isAbort(e)) console.warn('samples filter:', e);
        })
        .finally(() => {
          s.asking = false;
        });
      return;
    }
    const rows = needs.map((n) => ({
      ...n,
      rows: n.rows.filter((id) => {
        const r = this.state.rowById.get(id);
        return !!r && this.hasMarks(r) && !this.hasState(r);
      }),
    }));
    s.cache.want(rows, s.id, this.state.generation, end, complete);
  }

  /** The overlay's geometry in client coordinates (for tests). */
  clientGeometry(): OverlayGeometry {
    const r = this.canvas.getBoundingClientRect();
    const g = this.geometry();
    return {
      xOf: (t) => r.left + g.xOf(t),
      rowBox: (id) => {
        const b = g.rowBox(id);
        return b && { y: r.top + b.y, h: b.h };
      },
      plotLeft: r.left + g.plotLeft,
      plotRight: r.left + g.plotRight,
    };
  }

  private geometry(): OverlayGeometry {
    return {
      xOf: (t) => this.xOf(t),
      rowBox: (id) => {
        const i = this.lineOfRow.get(id);
        if (i === undefined) return null;
        return { y: AXIS_H + i * ROW_H - this.scrollY, h: ROW_H };
      },
      plotLeft: LABEL_W,
      plotRight: LABEL_W + this.plotW(),
    };
  }

  private fetchArrows(): void {
    this.arrowsController?.abort();
    this.arrowsController = null;
    if (!this.arrowsOn || !this.state.info?.kernel) {
      this.arrows = null;
      return;
    }
    const from = Math.max(0, Math.floor(this.from));
    const to = Math.ceil(this.to);
    if (this.arrows && this.arrows.from === from && this.arrows.to === to) return;
    // At most one arrow per 8 px or so: when more are due, the view is too
    // wide for them to mean anything and none are drawn.
    const width = Math.max(1, Math.min(1000, Math.round(this.plotW() / 8)));
    this.fetchLatest('arrowsController', 'arrows', async (signal) => {
      const a = await getArrows(from, to, width, signal);
      this.arrows = { from, to, list: a.arrows, more: a.more };
    });
  }

  /**
   * Runs `load` with a new AbortController kept in `slot` (the previous
   * request of that slot is aborted), logs its failures other than aborts,
   * and redraws when it settles.
   */
  private fetchLatest(
    slot: 'arrowsController' | 'countsController',
    what: string,
    load: (signal: AbortSignal) => Promise<void>,
  ): void {
    this[slot]?.abort();
    const c = new AbortController();
    this[slot] = c;
    load(c.signal)
      .catch((e: unknown) => {
        if (!isAbort(e)) console.warn(`${what}:`, e);
      })
      .finally(() => {
        if (this[slot] === c) this[slot] = null;
        this.invalidate();
      });
  }

  /** Exact event counts per visible row in the range selection. */
  private fetchRangeCounts(): void {
    const r = this.state.range;
    if (!r) {
      this.rangeCounts = null;
      return;
    }
    const filter = this.state.filterId;
    const gen = this.state.generation;
    const rows = this.visibleRows().filter((id) => {
      const row = this.state.rowById.get(id);
      return row && this.hasMarks(row);
    });
    const rc = this.rangeCounts;
    if (
      rc &&
      rc.range === r &&
      rc.filter === filter &&
      rc.gen === gen &&
      rc.counts &&
      rows.every((id) => rc.counts!.has(id))
    )
      return;
    const entry: NonNullable<Timeline['rangeCounts']> = { range: r, filter, gen, counts: null };
    this.rangeCounts = entry;
    this.fetchLatest('countsController', 'counts', async (signal) => {
      entry.counts = await exactCounts(rows, Math.max(0, Math.floor(r.from)), Math.ceil(r.to), filter, signal);
    });
  }

  // --- Drawing ------------------------------------------------------------------------

  private draw(): void {
    const t0 = performance.now();
    this.dirty = false;
    const ctx = this.ctx;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, this.cssW, this.cssH);

    const [a, b] = this.visibleLineRange();
    const k = this.level();
    this.sampleTicks = [];
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, AXIS_H, this.plotW(), this.plotH());
    ctx.clip();
    for (let i = a; i < b; i++) {
      const line = this.lines[i]!;
      const y = AXIS_H + i * ROW_H - this.scrollY;
      if (i % 2) {
        ctx.fillStyle = '#f6f7f9';
        ctx.fillRect(LABEL_W, y, this.plotW(), ROW_H);
      }
      if (line.row) this.drawRow(line.row, y, k);
    }
    this.overlay?.draw(ctx, this.geometry());
    if (!this.cache.busy() && this.fetchTimer === null) {
      const last = this.drawnLog[this.drawnLog.length - 1];
      if (!last || last.end < this.wantedEnd) {
        this.drawnLog.push({ wall: Date.now(), end: this.wantedEnd });
        if (this.drawnLog.length > 10000) this.drawnLog.splice(0, 5000);
      }
    }
    this.drawSelectedEvent();
    if (this.arrowsOn) this.drawArrows();
    this.drawRange(a, b);
    ctx.restore();

    this.drawLabels(a, b);
    this.drawAxis();

    const dt = performance.now() - t0;
    this.frameLog.push(dt);
    if (this.frameLog.length > FRAME_LOG) this.frameLog.shift();
  }

  /** The segments that cover the view for a row, from the best cached level. */
  private segments(rowId: number, k: number, cache = this.cache, filter = this.state.filterId): Segment[] {
    const res = 2 ** k;
    const span = TILE * res;
    const end = Math.min(this.to, (this.state.info?.end ?? 0) + 1);
    const a = Math.floor(Math.max(0, this.from) / span);
    const b = Math.floor(Math.max(0, end - 1) / span);
    const out: Segment[] = [];
    const push = (bk: Bucket[], r: number, lo: number, hi: number): void => {
      lo = Math.max(lo, this.from);
      hi = Math.min(hi, end);
      if (hi <= lo || !bk.length) return;
      const prev = out[out.length - 1];
      if (prev && prev.b === bk && prev.hi === lo) prev.hi = hi;
      else out.push({ b: bk, res: r, lo, hi, endV: null });
    };
    for (let tile = a; tile <= b; tile++) {
      const lo = tile * span;
      const hi = lo + span;
      const d = cache.get(filter, k, tile)?.get(rowId);
      if (d) {
        push(d.b, d.res, lo, hi);
        continue;
      }
      // A coarser level scaled, or else a finer one.
      let found = false;
      for (let kk = k + 1; kk <= k + 12 && !found; kk++) {
        const pt = Math.floor(tile / 2 ** (kk - k));
        const pd = cache.get(filter, kk, pt)?.get(rowId);
        if (pd) {
          push(pd.b, pd.res, lo, hi);
          found = true;
        }
      }
      for (let kk = k - 1; kk >= Math.max(0, k - 3) && !found; kk--) {
        const n = 2 ** (k - kk);
        const parts = [];
        for (let c = 0; c < n; c++) {
          const cd = cache.get(filter, kk, tile * n + c)?.get(rowId);
          if (!cd) break;
          parts.push(cd);
        }
        if (parts.length === n) {
          const cspan = TILE * 2 ** kk;
          parts.forEach((cd, c) => push(cd.b, cd.res, lo + c * cspan, lo + (c + 1) * cspan));
          found = true;
        }
      }
    }
    // The value where each segment ends: the next one's value at its start.
    for (let i = 0; i + 1 < out.length; i++) {
      const n = out[i + 1]!;
      if (n.lo === out[i]!.hi) {
        const bi = bucketAt(n.b, n.res, n.lo);
        out[i]!.endV = bi >= 0 ? n.b[bi]![B_V] : null;
      }
    }
    return out;
  }

  private stateColour(row: Row, v: number): string | null {
    if (row.kind === 'cpu') {
      if (v < 0) return null;
      if (v === 0) return IDLE_COLOUR;
      const r = this.state.rowByTid.get(v);
      return colourFor(r && r.pid !== undefined && r.pid !== null ? r.pid : v);
    }
    return THREAD_STATES[v]?.colour ?? null;
  }

  private drawRow(row: Row, y: number, k: number): void {
    const ctx = this.ctx;
    const bands = this.bands(row);
    const segs = this.segments(row.id, k);
    const scale = this.scale();
    const from = this.from;
    if (bands.barH) {
      const by = y + bands.barY;
      const bh = bands.barH;
      // Runs of one colour are merged into one rectangle, on whole pixels.
      let runColour: string | null = null;
      let runX0 = 0;
      let runX1 = 0;
      const busy: number[] = [];
      const flush = (): void => {
        if (runColour !== null && runX1 > runX0) {
          if (ctx.fillStyle !== runColour) ctx.fillStyle = runColour;
          ctx.fillRect(runX0, by, runX1 - runX0, bh);
        }
      };
      const paint = (t0: number, t1: number, colour: string | null): void => {
        const x0 = Math.round(LABEL_W + (t0 - from) * scale);
        const x1 = Math.round(LABEL_W + (t1 - from) * scale);
        if (x1 <= x0) return;
        if (colour === runColour && x0 <= runX1) {
          runX1 = Math.max(runX1, x1);
          return;
        }
        flush();
        runColour = colour;
        runX0 = x0;
        runX1 = x1;
      };
      for (const s of segs) {
        const b = s.b;
        const res = s.res;
        const narrow = res * scale < 2;
        let i = Math.max(0, bucketAt(b, res, s.lo));
        for (; i < b.length; i++) {
          const bk = b[i]!;
          const bs = bk[B_J] * res;
          if (bs >= s.hi) break;
          const be = bs + res;
          const next = i + 1 < b.length ? b[i + 1]![B_J] * res : s.hi;
          // Inside the bucket: its value at its start. After it, up to the
          // next bucket returned, the buckets are plain: the value is the
          // bucket's own if nothing changed in it, else the one the next
          // returned bucket starts with.
          paint(Math.max(bs, s.lo), Math.min(be, s.hi), this.stateColour(row, bk[B_V]));
          if (next > be) {
            const gv = bk[B_CHANGES] === 0 ? bk[B_V] : i + 1 < b.length ? b[i + 1]![B_V] : (s.endV ?? bk[B_V]);
            paint(Math.max(be, s.lo), Math.min(next, s.hi), this.stateColour(row, gv));
          }
          if (narrow && bk[B_CHANGES] > 1 && bs >= s.lo) busy.push(LABEL_W + (bs + res / 2 - from) * scale);
        }
      }
      flush();
      if (busy.length) {
        // Several changes within a pixel: a thin dark tick under the bar.
        ctx.fillStyle = 'rgba(0,0,0,0.35)';
        let last = -1;
        for (const x of busy) {
          const px = Math.floor(x);
          if (px === last) continue;
          last = px;
          ctx.fillRect(px, by + bh - 3, 1, 3);
        }
      }
    }
    if (bands.markH) this.drawMarks(segs, y + bands.markY, bands.markH);
    if (bands.sampleH && this.samples.ready && this.samples.id !== null) {
      this.drawSamples(row.id, this.segments(row.id, k, this.samples.cache, this.samples.id), y + bands.sampleY!, bands.sampleH);
    }
  }

  /**
   * A row's samples: a dark tick per pixel holding some, its height and
   * darkness growing with how many (relative to the most in one pixel of
   * the view's rows).
   */
  private drawSamples(rowId: number, segs: Segment[], sy: number, sh: number): void {
    const ctx = this.ctx;
    const scale = this.scale();
    const xs: number[] = [];
    const counts: number[] = [];
    for (const s of segs) {
      const b = s.b;
      const res = s.res;
      let i = Math.max(0, bucketAt(b, res, s.lo));
      for (; i < b.length; i++) {
        const bk = b[i]!;
        const bs = bk[B_J] * res;
        if (bs >= s.hi) break;
        if (bk[B_COUNT] === 0 || bs + res <= s.lo) continue;
        const px = Math.floor(LABEL_W + (Math.max(bs, s.lo) + Math.min(res, s.hi - bs) / 2 - this.from) * scale);
        const n = xs.length;
        if (n && xs[n - 1] === px) counts[n - 1]! += bk[B_COUNT];
        else {
          xs.push(px);
          counts.push(bk[B_COUNT]);
        }
      }
    }
    ctx.fillStyle = 'rgba(40,60,150,0.09)';
    ctx.fillRect(LABEL_W, sy, this.plotW(), sh);
    const max = Math.max(1, ...counts);
    for (let i = 0; i < xs.length; i++) {
      const f = Math.log1p(counts[i]!) / Math.log1p(max);
      const h = Math.max(2, Math.round(sh * (0.35 + 0.65 * f)));
      ctx.fillStyle = `rgba(20,28,90,${(0.5 + 0.5 * f).toFixed(2)})`;
      ctx.fillRect(xs[i]!, sy + sh - h, 1, h);
      this.sampleTicks.push({ row: rowId, x: xs[i]!, count: counts[i]! });
    }
  }

  private drawMarks(segs: Segment[], my: number, mh: number): void {
    const ctx = this.ctx;
    const scale = this.scale();
    const groups = this.state.info?.class_groups ?? [];
    const xs: number[] = [];
    const counts: number[] = [];
    const colours: string[] = [];
    for (const s of segs) {
      const b = s.b;
      const res = s.res;
      let i = Math.max(0, bucketAt(b, res, s.lo));
      for (; i < b.length; i++) {
        const bk = b[i]!;
        const bs = bk[B_J] * res;
        if (bs >= s.hi) break;
        if (bk[B_COUNT] === 0 || bs + res <= s.lo) continue;
        const px = Math.floor(LABEL_W + (Math.max(bs, s.lo) + Math.min(res, s.hi - bs) / 2 - this.from) * scale);
        const n = xs.length;
        if (n && xs[n - 1] === px) {
          counts[n - 1]! += bk[B_COUNT];
          continue;
        }
        xs.push(px);
        counts.push(bk[B_COUNT]);
        const g = groups[bk[B_FIRST]];
        colours.push(g === undefined ? '#555' : colourForName(g));
      }
    }
    for (let i = 0; i < xs.length; i++) {
      if (ctx.fillStyle !== colours[i]) ctx.fillStyle = colours[i]!;
      ctx.fillRect(xs[i]! - 1, my, 3, mh);
    }
    // Counts where several events share a mark and there is room to say so.
    ctx.font = '9px sans-serif';
    ctx.fillStyle = '#222';
    ctx.textBaseline = 'middle';
    for (let i = 0; i < xs.length; i++) {
      const c = counts[i]!;
      if (c < 2) continue;
      const text = c > 9999 ? `${Math.round(c / 1000)}k` : String(c);
      const room = (i + 1 < xs.length ? xs[i + 1]! : Infinity) - xs[i]!;
      if (room >= text.length * 5.5 + 8) ctx.fillText(text, xs[i]! + 3, my + mh / 2);
    }
  }

  private drawSelectedEvent(): void {
    const s = this.state.selected;
    if (!s) return;
    const x = Math.round(this.xOf(s.t)) + 0.5;
    if (x < LABEL_W || x > this.cssW) return;
    const ctx = this.ctx;
    ctx.strokeStyle = '#d62728';
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(x, AXIS_H);
    ctx.lineTo(x, this.cssH);
    ctx.stroke();
    const i = s.row === null ? undefined : this.lineOfRow.get(s.row);
    if (i !== undefined) {
      const y = AXIS_H + i * ROW_H - this.scrollY;
      ctx.strokeRect(x - 4, y + 1, 8, ROW_H - 2);
    }
  }

  /** Arrows join the middles of the rows' bars. */
  private arrowY(rowId: number): number | null {
    const i = this.lineOfRow.get(rowId);
    if (i === undefined) return null;
    const b = this.bands(this.lines[i]!.row!);
    return AXIS_H + i * ROW_H - this.scrollY + (b.barH ? b.barY + b.barH / 2 : ROW_H / 2);
  }

  private drawArrows(): void {
    const a = this.arrows;
    if (!a || a.more) return;
    const ctx = this.ctx;
    ctx.strokeStyle = 'rgba(20,20,20,0.8)';
    ctx.fillStyle = 'rgba(20,20,20,0.8)';
    ctx.lineWidth = 1;
    for (const ar of a.list) {
      const y1 = this.arrowY(ar.from_row);
      const y2 = this.arrowY(ar.to_row);
      if (y1 === null || y2 === null) continue;
      const x1 = this.xOf(ar.from_t);
      const x2 = this.xOf(ar.to_t);
      drawArrow(ctx, x1, y1, x2, y2);
    }
  }

  private drawRange(a: number, b: number): void {
    const r = this.state.range;
    if (!r) return;
    const ctx = this.ctx;
    const x0 = this.xOf(r.from);
    const x1 = this.xOf(r.to);
    ctx.fillStyle = 'rgba(60,120,220,0.15)';
    ctx.fillRect(x0, AXIS_H, Math.max(1, x1 - x0), this.plotH());
    ctx.strokeStyle = 'rgba(60,120,220,0.9)';
    ctx.beginPath();
    ctx.moveTo(Math.round(x0) + 0.5, AXIS_H);
    ctx.lineTo(Math.round(x0) + 0.5, this.cssH);
    ctx.moveTo(Math.round(x1) + 0.5, AXIS_H);
    ctx.lineTo(Math.round(x1) + 0.5, this.cssH);
    ctx.stroke();
    const counts = this.rangeCounts?.range === r ? this.rangeCounts.counts : null;
    if (!counts) return;
    // Per-row event counts, in the middle of the selection.
    const cx = clamp((Math.max(x0, LABEL_W) + Math.min(x1, this.cssW)) / 2, LABEL_W + 20, this.cssW - 20);
    ctx.font = 'bold 11px sans-serif';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    for (let i = a; i < b; i++) {
      const row = this.lines[i]!.row;
      if (!row) continue;
      const c = counts.get(row.id);
      if (c === undefined) continue;
      const y = AXIS_H + i * ROW_H - this.scrollY + ROW_H / 2;
      const text = formatCount(c);
      const w = ctx.measureText(text).width + 8;
      ctx.fillStyle = 'rgba(255,255,255,0.85)';
      ctx.fillRect(cx - w / 2, y - 7, w, 14);
      ctx.fillStyle = '#123';
      ctx.fillText(text, cx, y);
    }
    ctx.textAlign = 'left';
  }

  private drawLabels(a: number, b: number): void {
    const ctx = this.ctx;
    ctx.fillStyle = '#f0f2f5';
    ctx.fillRect(0, AXIS_H, LABEL_W, this.plotH());
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_H, LABEL_W, this.plotH());
    ctx.clip();
    ctx.textBaseline = 'middle';
    for (let i = a; i < b; i++) {
      const line = this.lines[i]!;
      const y = AXIS_H + i * ROW_H - this.scrollY;
      const x = 6 + line.depth * INDENT;
      if (line.collapsed !== undefined) {
        ctx.fillStyle = '#555';
        ctx.beginPath();
        if (line.collapsed) {
          ctx.moveTo(x, y + 6);
          ctx.lineTo(x + 7, y + 11);
          ctx.lineTo(x, y + 16);
        } else {
          ctx.moveTo(x, y + 8);
          ctx.lineTo(x + 8, y + 8);
          ctx.lineTo(x + 4, y + 14);
        }
        ctx.fill();
      }
      ctx.font = line.kind === 'group' || line.collapsed !== undefined ? 'bold 12px sans-serif' : '12px sans-serif';
      ctx.fillStyle = '#1d2430';
      let text = line.label;
      if (line.kind === 'group' && line.collapsed && line.children) text += ` (${line.children})`;
      const lane = line.row ? this.bands(line.row).sampleH : undefined;
      ctx.fillText(text, x + 12, y + ROW_H / 2, LABEL_W - x - (lane ? 62 : 16));
      if (lane) {
        // What the lane under the marks is.
        ctx.font = '9px sans-serif';
        ctx.fillStyle = '#2a3570';
        ctx.textAlign = 'right';
        ctx.fillText('samples ▸', LABEL_W - 5, y + ROW_H / 2 + 2);
        ctx.textAlign = 'left';
      }
    }
    ctx.restore();
    ctx.fillStyle = '#c8ccd2';
    ctx.fillRect(LABEL_W - 1, AXIS_H, 1, this.plotH());
  }

  private drawAxis(): void {
    const ctx = this.ctx;
    ctx.fillStyle = '#e9ecf0';
    ctx.fillRect(0, 0, this.cssW, AXIS_H);
    ctx.fillStyle = '#b0b6bf';
    ctx.fillRect(0, AXIS_H - 1, this.cssW, 1);
    const span = this.to - this.from;
    // Tick step: 1, 2 or 5 × 10^n ns, labels about 140 px apart.
    const raw = (span * 140) / this.plotW();
    let step = 1;
    while (step < raw) {
      const d = String(step)[0];
      step *= d === '2' ? 2.5 : 2;
    }
    step = Math.round(step);
    const digits = step >= 1e9 ? 0 : Math.max(0, 9 - Math.floor(Math.log10(step) + 1e-9));
    const minor = step / (String(step)[0] === '2' ? 4 : 5);
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, 0, this.plotW(), this.cssH);
    ctx.clip();
    ctx.font = '11px monospace';
    ctx.textBaseline = 'alphabetic';
    ctx.fillStyle = '#1d2430';
    const tod0 = this.state.originTod + this.from;
    const tod1 = this.state.originTod + this.to;
    ctx.fillStyle = '#8a919b';
    for (let tod = Math.ceil(tod0 / minor) * minor; tod < tod1; tod += minor) {
      const x = Math.round(this.xOf(tod - this.state.originTod));
      ctx.fillRect(x, AXIS_H - 5, 1, 4);
    }
    for (let tod = Math.ceil(tod0 / step) * step; tod < tod1; tod += step) {
      const x = Math.round(this.xOf(tod - this.state.originTod));
      ctx.fillStyle = '#5b6370';
      ctx.fillRect(x, AXIS_H - 11, 1, 10);
      ctx.fillStyle = 'rgba(0,0,0,0.06)';
      ctx.fillRect(x, AXIS_H, 1, this.plotH());
      ctx.fillStyle = '#1d2430';
      ctx.fillText(formatTimeOfDay(tod, digits), x + 3, AXIS_H - 14);
    }
    const r = this.state.range;
    if (r) {
      const x0 = this.xOf(r.from);
      const x1 = this.xOf(r.to);
      ctx.fillStyle = 'rgba(60,120,220,0.35)';
      ctx.fillRect(x0, 0, Math.max(1, x1 - x0), AXIS_H);
      ctx.fillStyle = '#0b3d91';
      ctx.font = 'bold 11px sans-serif';
      const text = formatDuration(r.to - r.from);
      const w = ctx.measureText(text).width;
      ctx.fillText(text, clamp((x0 + x1) / 2 - w / 2, LABEL_W + 2, this.cssW - w - 2), 12);
    }
    ctx.restore();
    // Top left: the view's start and span.
    ctx.fillStyle = '#1d2430';
    ctx.font = '11px monospace';
    ctx.fillText(formatTimeOfDay(this.state.originTod + this.from, 9), 6, 15);
    ctx.font = '11px sans-serif';
    let text = `span ${formatDurationShort(span)}`;
    if (this.arrowsOn && this.arrows?.more) text += ' · zoom in for wakeups';
    ctx.fillText(text, 6, 32, LABEL_W - 10);
  }

  // --- Interaction --------------------------------------------------------------------

  private listen(): void {
    const c = this.canvas;
    this.scroller.addEventListener('scroll', () => {
      this.scrollY = this.scroller.scrollTop;
      this.viewMoved(false);
    });
    c.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    c.addEventListener('mousedown', (e) => this.onMouseDown(e));
    window.addEventListener('mousemove', (e) => this.onMouseMove(e));
    window.addEventListener('mouseup', (e) => this.onMouseUp(e));
    c.addEventListener('mouseleave', () => {
      this.mouse = null;
      if (!this.drag) this.hideTip();
    });
    c.addEventListener('dblclick', (e) => {
      const p = this.local(e);
      if (this.place(p.x, p.y).area === 'plot') this.zoom(0.5, this.tOf(p.x));
    });
    window.addEventListener('keydown', (e) => this.onKey(e));
  }

  private local(e: MouseEvent): { x: number; y: number } {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  private onWheel(e: WheelEvent): void {
    e.preventDefault();
    const p = this.local(e);
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.plotH() : 1;
    if (p.x < LABEL_W && !e.ctrlKey) {
      // Over the labels: scroll the rows.
      this.scroller.scrollTop += e.deltaY * unit;
      return;
    }
    const dx = e.deltaX * unit;
    const dy = e.deltaY * unit;
    if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) {
      const d = e.shiftKey ? dx || dy : dx;
      const dt = d / this.scale();
      this.setView(this.from + dt, this.to + dt);
    } else {
      this.zoom(Math.exp(dy * 0.002), this.tOf(p.x));
    }
    this.hideTip();
  }

  private onMouseDown(e: MouseEvent): void {
    if (e.button !== 0) return;
    const p = this.local(e);
    const pl = this.place(p.x, p.y);
    if (pl.area === 'plot' && !e.shiftKey) {
      this.drag = { kind: 'pan', x0: p.x, from0: this.from, to0: this.to, moved: false };
      this.canvas.style.cursor = 'grabbing';
    } else if (pl.area === 'axis' || (pl.area === 'plot' && e.shiftKey)) {
      this.drag = { kind: 'range', t0: pl.t, moved: false, x0: p.x };
    } else if (pl.area === 'labels' && pl.line && pl.line.collapsed !== undefined) {
      this.toggle(pl.line.key);
    }
    e.preventDefault();
  }

  private onMouseMove(e: MouseEvent): void {
    const p = this.local(e);
    const d = this.drag;
    if (d) {
      if (Math.abs(p.x - (d.kind === 'pan' ? d.x0 : d.x0)) > 3) d.moved = true;
      if (d.kind === 'pan' && d.moved) {
        const dt = (p.x - d.x0) / this.scale();
        this.setView(d.from0 - dt, d.to0 - dt);
      } else if (d.kind === 'range' && d.moved) {
        const t = this.tOf(clamp(p.x, LABEL_W, this.cssW));
        this.state.setRange({ from: Math.min(d.t0, t), to: Math.max(d.t0, t) });
        this.viewMoved(false);
      }
      this.hideTip();
      return;
    }
    if (e.target !== this.canvas) return;
    this.mouse = p;
    this.hover(p.x, p.y, e.clientX, e.clientY);
  }

  private onMouseUp(e: MouseEvent): void {
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    this.canvas.style.cursor = '';
    const p = this.local(e);
    if (!d.moved) {
      if (d.kind === 'range') this.state.setRange(null);
      else this.click(p.x, p.y);
      this.viewMoved(false);
    }
  }

  private onKey(e: KeyboardEvent): void {
    const target = e.target as HTMLElement | null;
    if (target && (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA' || target.isContentEditable)) return;
    if (e.altKey && e.key === 'ArrowLeft') {
      this.back();
      e.preventDefault();
      return;
    }
    if (e.altKey && e.key === 'ArrowRight') {
      this.forward();
      e.preventDefault();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const around = this.mouse && this.mouse.x >= LABEL_W ? this.tOf(this.mouse.x) : undefined;
    switch (e.key.toLowerCase()) {
      case 'w':
        this.zoom(1 / 1.5, around);
        break;
      case 's':
        this.zoom(1.5, around);
        break;
      case 'a':
        this.pan(-0.2);
        break;
      case 'd':
        this.pan(0.2);
        break;
      default:
        return;
    }
    this.hideTip();
    e.preventDefault();
  }

  private toggle(key: string): void {
    if (this.collapsed.has(key)) this.collapsed.delete(key);
    else this.collapsed.add(key);
    this.setRows();
  }

  /** The non-empty bucket nearest to x on a row, within a few pixels. */
  private markAt(row: Row, x: number): MarkHit | null {
    const segs = this.segments(row.id, this.level());
    let best: MarkHit | null = null;
    let bestD = 5;
    const scale = this.scale();
    for (const s of segs) {
      const res = s.res;
      const lo = this.tOf(x - 5);
      const hi = this.tOf(x + 5);
      let i = Math.max(0, bucketAt(s.b, res, Math.max(s.lo, lo)));
      for (; i < s.b.length; i++) {
        const bk = s.b[i]!;
        const bs = bk[B_J] * res;
        if (bs >= Math.min(s.hi, hi)) break;
        if (bk[B_COUNT] === 0) continue;
        const cx = LABEL_W + (Math.max(bs, s.lo) + Math.min(res, s.hi - bs) / 2 - this.from) * scale;
        const d = Math.abs(cx - x);
        if (d < bestD) {
          bestD = d;
          best = { row, from: bs, to: bs + res, count: bk[B_COUNT] };
        }
      }
    }
    return best;
  }

  private arrowAt(x: number, y: number): Arrow | null {
    const a = this.arrows;
    if (!this.arrowsOn || !a || a.more) return null;
    for (const ar of a.list) {
      const y1 = this.arrowY(ar.from_row);
      const y2 = this.arrowY(ar.to_row);
      if (y1 === null || y2 === null) continue;
      const x1 = this.xOf(ar.from_t);
      const x2 = this.xOf(ar.to_t);
      if (distToSegment(x, y, x1, y1, x2, y2) < 3.5) return ar;
    }
    return null;
  }

  private hover(x: number, y: number, cx: number, cy: number): void {
    const p = this.place(x, y);
    if (p.area !== 'plot' || !p.line) {
      this.hideTip();
      return;
    }
    const oh = this.overlay?.hit(x, y, this.geometry());
    if (oh) {
      this.showTip(oh.key, cx, cy, oh.rows);
      return;
    }
    const ar = this.arrowAt(x, y);
    if (ar) {
      const lat = ar.to_t - ar.from_t;
      this.showTip(`a:${ar.tid}:${ar.from_t}`, cx, cy, [
        ['wakeup', this.state.threadLabel(ar.tid)],
        ['tid', String(ar.tid)],
        ['woken', formatTimeOfDay(this.state.originTod + ar.from_t)],
        ['switched in', formatTimeOfDay(this.state.originTod + ar.to_t)],
        ['latency', formatDuration(lat)],
      ]);
      return;
    }
    const row = p.line.row;
    if (!row) {
      this.hideTip();
      return;
    }
    const bands = this.bands(row);
    const inMarks = bands.markH > 0 && (bands.barH === 0 || p.dy < bands.barY);
    if (inMarks) {
      const m = this.markAt(row, x);
      if (m) {
        this.markTip(m, cx, cy);
        return;
      }
    }
    if (bands.barH > 0 && p.dy >= bands.barY - 2) {
      this.barTip(row, Math.floor(p.t), x, cx, cy);
      return;
    }
    this.hideTip();
  }

  private click(x: number, y: number): void {
    const p = this.place(x, y);
    if (p.area !== 'plot' || !p.line?.row) return;
    const row = p.line.row;
    const m = this.hasMarks(row) ? this.markAt(row, x) : null;
    if (!m) return;
    this.tipBusy = true;
    getEvent(row.id, m.from, m.to, this.state.filterId)
      .then((ev) => {
        if (ev) this.cb.markClicked(ev);
      })
      .catch((e: unknown) => console.warn('event:', e))
      .finally(() => {
        this.tipBusy = false;
      });
  }

  // --- Tooltips ---------------------------------------------------------------------------

  private hideTip(): void {
    this.tip = null;
    this.tooltip.style.display = 'none';
    this.tooltip.dataset['state'] = 'hidden';
    if (this.tipTimer !== null) {
      clearTimeout(this.tipTimer);
      this.tipTimer = null;
    }
  }

  private placeTip(cx: number, cy: number): void {
    const t = this.tooltip;
    const w = t.offsetWidth;
    const h = t.offsetHeight;
    let left = cx + 14;
    let top = cy + 16;
    if (left + w > window.innerWidth - 4) left = Math.max(4, cx - w - 14);
    if (top + h > window.innerHeight - 4) top = Math.max(4, cy - h - 10);
    t.style.left = `${left}px`;
    t.style.top = `${top}px`;
  }

  /** Shows a table of key/value lines, or keeps the current tip if `key` did not change. */
  private showTip(key: string, cx: number, cy: number, rows: [string, string][] | null, pre?: string, done = true): number {
    if (this.tip?.key === key) {
      this.placeTip(cx, cy);
      return -1;
    }
    const token = ++this.tipToken;
    this.tip = { key, token };
    this.fillTip(rows, pre, done);
    this.placeTip(cx, cy);
    return token;
  }

  private fillTip(rows: [string, string][] | null, pre?: string, done = true): void {
    const t = this.tooltip;
    t.textContent = '';
    if (rows) {
      const table = document.createElement('table');
      for (const [k, v] of rows) {
        const tr = table.insertRow();
        tr.insertCell().textContent = k;
        tr.insertCell().textContent = v;
      }
      t.appendChild(table);
    }
    if (pre !== undefined) {
      const p = document.createElement('pre');
      p.className = 'tip-line';
      p.textContent = pre;
      t.appendChild(p);
    }
    t.style.display = 'block';
    t.dataset['state'] = done ? 'done' : 'loading';
  }

  private markTip(m: MarkHit, cx: number, cy: number): void {
    const key = `m:${m.row.id}:${m.from}:${m.to}:${this.state.filterId ?? 0}`;
    const extra: [string, string][] = m.count > 1 ? [['events here', `${formatCount(m.count)} (the first one below)`]] : [];
    const token = this.showTip(key, cx, cy, [[m.row.label, formatTimeOfDay(this.state.originTod + m.from)], ...extra], '…', false);
    if (token < 0) return;
    this.later(() => {
      getEvent(m.row.id, m.from, m.to, this.state.filterId)
        .then((ev) => {
          if (this.tip?.token !== token) return;
          this.fillTip(
            [[m.row.label, ev ? formatTimeOfDay(this.state.originTod + ev.t) : ''], ...extra],
            ev ? ev.line : '(no event)',
          );
        })
        .catch((e: unknown) => {
          if (this.tip?.token === token) this.fillTip([['error', String(e)]]);
        })
        .finally(() => {
          this.tipBusy = false;
        });
    });
  }

  private barTip(row: Row, t: number, x: number, cx: number, cy: number): void {
    const key = `b:${row.id}:${Math.round(x)}:${this.from}:${this.to}`;
    const token = this.showTip(key, cx, cy, [[row.label, '…']], undefined, false);
    if (token < 0) return;
    this.later(() => {
      barDetails(this.state, row, t)
        .then((rowsText) => {
          if (this.tip?.token !== token) return;
          if (!rowsText) this.hideTip();
          else this.fillTip(rowsText);
        })
        .catch((e: unknown) => {
          if (this.tip?.token === token) this.fillTip([['error', String(e)]]);
        })
        .finally(() => {
          this.tipBusy = false;
        });
    });
  }

  /** Runs a tooltip's fetch once the mouse rests a moment. */
  private later(f: () => void): void {
    if (this.tipTimer !== null) clearTimeout(this.tipTimer);
    this.tipTimer = window.setTimeout(() => {
      this.tipTimer = null;
      this.tipBusy = true;
      f();
    }, 80);
  }
}

// --- Helpers ------------------------------------------------------------------------------

/** Index of the last bucket starting at or before t (−1 if none). */
function bucketAt(b: Bucket[], res: number, t: number): number {
  let lo = 0;
  let hi = b.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (b[m]![B_J] * res <= t) lo = m + 1;
    else hi = m;
  }
  return lo - 1;
}


/** Widest window asked when refining (buckets per request). */
const REFINE_W = 4096;

/**
 * The last time s in [lo, hi) where row's value changes (value(s) ≠
 * value(s−1)), or null: a coarse window, then finer ones into the last
 * bucket with changes, down to 1 ns buckets.
 */
async function lastChange(row: number, lo: number, hi: number): Promise<number | null> {
  if (hi <= lo) return null;
  const w = Math.min(hi - lo, REFINE_W);
  const a = await getWindow(lo, hi, w, [row], null);
  const b = a.rows[0]?.b ?? [];
  for (let i = b.length - 1; i >= 0; i--) {
    const bk = b[i]!;
    if (bk[B_CHANGES] === 0) continue;
    const bs = bk[B_J] * a.res;
    if (a.res === 1) {
      if (bs >= lo && bs < hi) return bs;
      continue;
    }
    const r = await lastChange(row, Math.max(lo, bs), Math.min(hi, bs + a.res));
    if (r !== null) return r;
  }
  return null;
}

/** The first time s in [lo, hi) where row's value changes, or null. */
async function firstChange(row: number, lo: number, hi: number): Promise<number | null> {
  if (hi <= lo) return null;
  const w = Math.min(hi - lo, REFINE_W);
  const a = await getWindow(lo, hi, w, [row], null);
  const b = a.rows[0]?.b ?? [];
  for (const bk of b) {
    if (bk[B_CHANGES] === 0) continue;
    const bs = bk[B_J] * a.res;
    if (bs + a.res <= lo) continue;
    if (a.res === 1) {
      if (bs >= lo && bs < hi) return bs;
      continue;
    }
    const r = await firstChange(row, Math.max(lo, bs), Math.min(hi, bs + a.res));
    if (r !== null) return r;
  }
  return null;
}

/** value(t) of some rows, exactly (a 1 ns window). */
async function valuesAt(rows: number[], t: number): Promise<Map<number, number>> {
  const a = await getWindow(t, t + 1, 1, rows, null);
  return new Map(a.rows.map((r) => [r.id, r.b[0]?.[B_V] ?? -1]));
}

/**
 * The tooltip of a state bar at time t: thread, process, CPU, the state,
 * and the exact start and duration of the span of that value around t.
 */
async function barDetails(state: State, row: Row, t: number): Promise<[string, string][] | null> {
  const info = state.info;
  if (!info || t < 0) return null;
  const v = (await valuesAt([row.id], t)).get(row.id) ?? -1;
  if (row.kind === 'thread' && (v === -1 || v === 6)) return null;
  if (row.kind === 'cpu' && v === -1) return null;
  const end = info.end + 1;
  const [s, e] = await Promise.all([lastChange(row.id, 0, t + 1), firstChange(row.id, t + 1, end)]);
  const start = s ?? 0;
  const stop = e ?? end;
  const tod = (x: number): string => formatTimeOfDay(state.originTod + x);
  const out: [string, string][] = [];
  if (row.kind === 'cpu') {
    const th = v === 0 ? null : state.rowByTid.get(v);
    out.push(['thread', v === 0 ? 'idle' : (th?.label ?? `tid ${v}`)]);
    if (th?.process) out.push(['process', th.process]);
    out.push(['CPU', row.cpu !== undefined ? String(row.cpu) : row.label]);
    out.push(['state', v === 0 ? 'idle' : 'running']);
  } else {
    out.push(['thread', row.label]);
    if (row.process) out.push(['process', row.process]);
    if (v >= 1 && v <= 3) {
      // Which CPU runs it: the cpu row whose value is this tid.
      const cpus = state.rows.filter((r) => r.kind === 'cpu');
      const vals = cpus.length ? await valuesAt(cpus.map((r) => r.id), t) : new Map<number, number>();
      const cpu = cpus.find((r) => vals.get(r.id) === row.tid);
      if (cpu) out.push(['CPU', cpu.cpu !== undefined ? String(cpu.cpu) : cpu.label]);
    }
    out.push(['state', THREAD_STATES[v]?.name ?? String(v)]);
  }
  out.push(['start', tod(start)]);
  out.push(['duration', e === null ? `${formatDuration(stop - start)} (to the end)` : formatDuration(stop - start)]);
  out.push(['at', tod(t)]);
  return out;
}

/**
 * Exact event counts per row in [lo, hi): a window's buckets wholly inside
 * are summed; the (at most two) buckets cut by the ends are refined with
 * finer windows, down to 1 ns.
 */
export async function exactCounts(
  rows: number[],
  lo: number,
  hi: number,
  filter: number | null,
  signal?: AbortSignal,
): Promise<Map<number, number>> {
  const counts = new Map<number, number>(rows.map((r) => [r, 0]));
  const go = async (ids: number[], a: number, b: number): Promise<void> => {
    if (b <= a || !ids.length) return;
    const w = Math.min(b - a, 16384);
    const ans = await getWindow(a, b, w, ids, filter, signal);
    const res = ans.res;
    const left = new Set<number>();
    const right = new Set<number>();
    for (const r of ans.rows) {
      for (const bk of r.b) {
        if (bk[B_COUNT] === 0) continue;
        const bs = bk[B_J] * res;
        const be = bs + res;
        if (bs >= a && be <= b) counts.set(r.id, (counts.get(r.id) ?? 0) + bk[B_COUNT]);
        else if (bs < a) left.add(r.id);
        else right.add(r.id);
      }
    }
    const firstEnd = (Math.floor(a / res) + 1) * res;
    const lastStart = Math.floor((b - 1) / res) * res;
    if (firstEnd >= b) {
      // One bucket holds the whole range (cannot happen with res ≤ (b−a)/w, kept for safety).
      await go([...new Set([...left, ...right])], a, b);
      return;
    }
    await Promise.all([go([...left], a, Math.min(firstEnd, b)), go([...right], Math.max(lastStart, a), b)]);
  };
  await go(rows, lo, hi);
  return counts;
}
