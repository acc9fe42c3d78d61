// Typed wrappers around `reef view`'s HTTP API (docs/view-api.md): the only
// thing the page talks to. Every time is an integer number of nanoseconds
// relative to the origin (the first event); JavaScript numbers hold them
// exactly up to 2^53 ns (about 104 days), far beyond any trace's length.

export type TraceState = 'building' | 'ready' | 'error';

export interface Progress {
  done: number;
  total: number;
}

export interface Info {
  traces: { name: string; path: string }[];
  kernel: boolean;
  /** Nanoseconds from the clock's origin, as a string (too large for a number); null before the first event. */
  origin_ns: string | null;
  end: number;
  events: number;
  classes: string[];
  class_groups: string[];
  state: TraceState;
  progress: Progress;
  error: string | null;
  finest: number;
  rows: number;
  /** Bumped when the server replaces its index (a live trace, indexed again once ended). */
  epoch: number;
  /** A trace received live (`reef view --live`). */
  live?: LiveStatus;
}

export interface LiveStatus {
  /** failed: an LTTng relay vanished or misbehaved; what was received is shown. */
  state: 'receiving' | 'dropped' | 'ended' | 'failed';
  /** `libreef` (REEF_LISTEN) or `lttng-live` (an lttng-relayd session). */
  source: 'libreef' | 'lttng-live';
  addr: string;
  dir: string;
  /** Kept after reef view exits (-o). */
  kept: boolean;
  connections: number;
  /** Why the last connection dropped. */
  message: string | null;
  packets: number;
  bytes: number;
  streams: number;
  /** The newest time received, and the one the index reached (ns from the first event). */
  received_to: number | null;
  indexed_to: number | null;
  /** The ended trace is being indexed again from scratch. */
  reindexing: boolean;
}

/** The WebSocket on which the server pushes /api/info's answer as it changes. */
export function liveSocket(): WebSocket {
  const u = new URL('api/live', window.location.href);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return new WebSocket(u.href);
}

export type RowKind = 'cpu' | 'thread' | 'stream';

export interface Row {
  id: number;
  kind: RowKind;
  label: string;
  cpu?: number;
  tid?: number;
  pid?: number | null;
  process?: string;
  stream?: number;
}

/** One bucket summary: [j, count, first, v, changes, on]. */
export type Bucket = [number, number, number, number, number, number];
export const B_J = 0;
export const B_COUNT = 1;
export const B_FIRST = 2;
export const B_V = 3;
export const B_CHANGES = 4;
export const B_ON = 5;

export interface WindowAnswer {
  res: number;
  k: number;
  rows: { id: number; b: Bucket[] }[];
}

export interface EventLine {
  t: number;
  /** Its index among the list's events at time t: `from=t&skip=skip` designates it. */
  skip: number;
  /** null for an event on no row. */
  row: number | null;
  line: string;
}

export interface EventsAnswer {
  events: EventLine[];
  total: number;
  before: number;
}

export interface FilterAnswer {
  id: number;
  state: 'building' | 'ready' | 'error';
  progress?: Progress;
}

export interface StatsAnswer {
  events: number;
  duration_ns?: number;
  rate_per_s?: number;
  event_names?: { name: string; count: number; rate_per_s?: number }[];
  [key: string]: unknown;
}

export interface Arrow {
  tid: number;
  from_row: number;
  from_t: number;
  to_row: number;
  to_t: number;
}

export interface ArrowsAnswer {
  arrows: Arrow[];
  more: boolean;
}

/** An answer other than 2xx: `message` is the server's `error` text. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** For an invalid expression: the byte offset of the error in it. */
    readonly position: number | null,
    /** Which of the request's expressions that is (`begin`, `end`, `key`), when there are several. */
    readonly expr: string | null = null,
    /** That expression's text (a period definition). */
    readonly text: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** True for the rejection of a request that was aborted on purpose. */
export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === 'AbortError';
}

// Requests in flight, for `window.reefView.ready()`.
let inFlight = 0;
const listeners: (() => void)[] = [];
export function requestsInFlight(): number {
  return inFlight;
}
/** Called whenever a request ends (to let the page re-check readiness). */
export function onRequestDone(f: () => void): void {
  listeners.push(f);
}

type Params = Record<string, string | number | boolean | undefined | null>;

function query(params: Params): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === false) continue;
    parts.push(`${k}=${encodeURIComponent(v === true ? '1' : String(v))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

async function get<T>(path: string, params: Params, signal?: AbortSignal): Promise<T> {
  inFlight++;
  try {
    const res = await fetch(`api/${path}${query(params)}`, { signal });
    const text = await res.text();
    if (!res.ok) {
      let message = text || `${res.status} ${res.statusText}`;
      let position: number | null = null;
      let expr: string | null = null;
      let exprText: string | null = null;
      try {
        const body = JSON.parse(text) as { error?: unknown; position?: unknown; expr?: unknown; text?: unknown };
        if (typeof body.error === 'string') message = body.error;
        if (typeof body.position === 'number') position = body.position;
        if (typeof body.expr === 'string') expr = body.expr;
        if (typeof body.text === 'string') exprText = body.text;
      } catch {
        // not JSON: keep the raw text
      }
      throw new ApiError(res.status, message, position, expr, exprText);
    }
    return JSON.parse(text) as T;
  } finally {
    inFlight--;
    for (const f of listeners) f();
  }
}

export function getInfo(signal?: AbortSignal): Promise<Info> {
  return get<Info>('info', {}, signal);
}

export function getRows(signal?: AbortSignal): Promise<Row[]> {
  return get<Row[]>('rows', {}, signal);
}

export function getWindow(
  from: number,
  to: number,
  width: number,
  rows: number[] | null,
  filter: number | null,
  signal?: AbortSignal,
): Promise<WindowAnswer> {
  return get<WindowAnswer>(
    'window',
    { from, to, width, rows: rows ? rows.join(',') : undefined, filter },
    signal,
  );
}

export function getEvents(
  from: number,
  count: number,
  skip: number,
  back: boolean,
  filter: number | null,
  signal?: AbortSignal,
): Promise<EventsAnswer> {
  return get<EventsAnswer>('events', { from, count, skip: skip || undefined, back, filter }, signal);
}

/** The first mark of `row` in [from, to), or null (404). */
export async function getEvent(
  row: number,
  from: number,
  to: number,
  filter: number | null,
  signal?: AbortSignal,
): Promise<EventLine | null> {
  try {
    return await get<EventLine>('event', { row, from, to, filter }, signal);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

/**
 * The first event of the list (of `filter`) matching `expr` at or after
 * position (from, skip), or with `back` the last one strictly before it; null if none.
 */
export async function search(
  expr: string,
  from: number,
  skip: number,
  back: boolean,
  filter: number | null,
  signal?: AbortSignal,
): Promise<EventLine | null> {
  const a = await get<EventLine | { found: false }>('search', { expr, from, skip, back, filter }, signal);
  return 'found' in a && a.found === false ? null : (a as EventLine);
}

export function makeFilter(
  expr: string,
  hideClasses: number[],
  hideRows: number[],
  signal?: AbortSignal,
): Promise<FilterAnswer> {
  return get<FilterAnswer>(
    'filter',
    {
      expr,
      hide_classes: hideClasses.length ? hideClasses.join(',') : undefined,
      hide_rows: hideRows.length ? hideRows.join(',') : undefined,
    },
    signal,
  );
}

export function getStats(
  from: number,
  to: number,
  filter: number | null,
  signal?: AbortSignal,
): Promise<StatsAnswer> {
  return get<StatsAnswer>('stats', { from, to, filter }, signal);
}

export function getArrows(from: number, to: number, width: number, signal?: AbortSignal): Promise<ArrowsAnswer> {
  return get<ArrowsAnswer>('arrows', { from, to, width }, signal);
}

// --- Analyses (LAMI 1.0) -------------------------------------------------------------------

export interface LamiColumn {
  title: string;
  class: string;
  unit?: string;
}

export interface LamiTableClass {
  title: string;
  'column-descriptions': LamiColumn[];
}

/** A typed cell: `{"class": "duration", "value": 1200}`, `{"class": "process", "name": …, "tid": …}`, … */
export interface LamiCell {
  class: string;
  value?: number | string;
  name?: string;
  tid?: number;
  pid?: number;
  id?: number;
  nr?: number;
  hard?: boolean;
}

export interface LamiTable {
  /** A table class's name, or an inline class: the named one with a fuller title. */
  class: string | { inherit: string; title: string };
  data: LamiCell[][];
}

export interface AnalysisAnswer {
  results: LamiTable[];
  'table-classes': Record<string, LamiTableClass>;
  /** The trace is damaged after the start: the tables hold the events before. */
  error?: string;
}

export interface AnalysisOptions {
  limit?: number;
  total?: boolean;
  per_tid?: boolean;
  per_prio?: boolean;
}

export function getAnalysis(
  name: string,
  from: number,
  to: number,
  opts: AnalysisOptions,
  signal?: AbortSignal,
): Promise<AnalysisAnswer> {
  return get<AnalysisAnswer>('analysis', { name, from, to, ...opts }, signal);
}

// --- Activities ------------------------------------------------------------------------------

/** `reef activities`' definition (an empty key: the thread, else the stream), or `reef periods`' definitions. */
export type ActivityDefinition =
  | { kind: 'activities'; begin: string; end: string; key: string }
  | { kind: 'periods'; periods: string[] };

export interface DurationStats {
  count: number;
  min_ns: number;
  avg_ns: number;
  max_ns: number;
  stdev_ns: number | null;
  total_ns: number;
}

export interface Activity {
  /** The period's name (activities: empty). */
  name: string;
  begin: number;
  end: number;
  duration: number;
  group: string;
  /** The rows of the begin and end events (null: on no row). */
  rows: [number | null, number | null];
}

export interface ActivitiesAnswer {
  /** Per name (activities: one, named ""): every interval's statistics. */
  totals: (DurationStats & { name: string })[];
  unfinished: number;
  unmatched_ends: number;
  unkeyed: number;
  truncated: boolean;
  /** When truncated: the last end kept (ns from the first event); later intervals are missing. */
  kept_until: number | null;
  count: number;
  range: DurationStats | null;
  histogram: { lower_us: number; upper_us: number; count: number }[] | null;
  activities: Activity[];
  more: boolean;
  error?: string;
}

/** /api/activities or /api/periods. */
/** `/api/latency`: the rows of a kernel analysis' log (`schedlog`, `irqlog`) as intervals. */
export function getLatency(
  log: string,
  from: number,
  to: number,
  opts: { limit?: number; sort?: 'begin' | 'duration'; bins?: number },
  signal?: AbortSignal,
): Promise<ActivitiesAnswer> {
  return get<ActivitiesAnswer>('latency', { log, from, to, ...opts }, signal);
}

export function getActivities(
  def: ActivityDefinition,
  from: number,
  to: number,
  opts: { limit?: number; sort?: 'begin' | 'duration'; bins?: number; name?: string },
  signal?: AbortSignal,
): Promise<ActivitiesAnswer> {
  if (def.kind === 'periods') return get<ActivitiesAnswer>('periods', { periods: def.periods.join('\n'), from, to, ...opts }, signal);
  return get<ActivitiesAnswer>('activities', { begin: def.begin, end: def.end, key: def.key || undefined, from, to, ...opts }, signal);
}

// --- Profiles (the flame chart) ----------------------------------------------------------------

/** A frame of /api/profile's call tree: its weight with its callees (`total`) and its own (`self`). */
export interface ProfileFrame {
  name: string;
  total: number;
  self: number;
  children: ProfileFrame[];
}

export interface ProfileAnswer {
  from: number;
  to: number;
  row: number | null;
  /** What the weights count: samples, function self time (ns), events by where they were emitted; null: nothing. */
  measure: 'samples' | 'time' | 'events' | null;
  unit: string | null;
  total: number;
  samples: number;
  function_events: number;
  unmatched_exits: number;
  unfinished: number;
  /** Objects whose file was not found (their addresses show as offsets). */
  missing_objects: string[];
  frames: number;
  /** Frames left out (the smallest, beyond the answer's limit). */
  pruned: number;
  root: ProfileFrame;
  error: string | null;
}

export function getProfile(from: number, to: number, row: number | null, signal?: AbortSignal): Promise<ProfileAnswer> {
  return get<ProfileAnswer>('profile', { from, to, row }, signal);
}
