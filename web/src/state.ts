// The page's shared state and a tiny change-notification bus, so that the
// timeline, the event list and the panels stay independent of one another.

import type { Info, Row } from './api';

/** An event chosen in the list, on the timeline or by a search. */
export interface Selected {
  t: number;
  /** Its index among the list's events at time t: (t, skip) is its position for the API. */
  skip: number;
  row: number | null;
  line: string;
  /** Its index in the (filtered) list, when known. */
  index: number | null;
}

export interface Range {
  from: number;
  to: number;
}

type Topic = 'info' | 'rows' | 'filter' | 'hidden' | 'selection' | 'view' | 'range' | 'generation';

export class State {
  info: Info | null = null;
  rows: Row[] = [];
  rowById = new Map<number, Row>();
  /** Thread rows by tid (to name the thread a CPU row runs). */
  rowByTid = new Map<number, Row>();
  /** Rows hidden by the filter panel's checkboxes (client-side and `hide_rows`). */
  hiddenRows = new Set<number>();
  /** Classes hidden by the filter panel (`hide_classes`). */
  hiddenClasses = new Set<number>();
  /** The ready filter in use (`filter=ID`), if any. */
  filterId: number | null = null;
  /**
   * Bumped whenever what the server answers may have changed (the index
   * grew while building): cached answers of older generations are stale.
   */
  generation = 0;
  selected: Selected | null = null;
  range: Range | null = null;
  /** The origin's time of day (ns) in the server's time zone: what the axis adds to times. */
  originTod = 0;
  /** Visible time range (kept here so that panels can read it). */
  view: Range = { from: 0, to: 1 };

  private subs = new Map<Topic, (() => void)[]>();

  on(topic: Topic, f: () => void): void {
    let l = this.subs.get(topic);
    if (!l) this.subs.set(topic, (l = []));
    l.push(f);
  }

  emit(topic: Topic): void {
    for (const f of this.subs.get(topic) ?? []) f();
  }

  setRows(rows: Row[]): void {
    this.rows = rows;
    this.rowById = new Map(rows.map((r) => [r.id, r]));
    this.rowByTid = new Map();
    for (const r of rows) if (r.kind === 'thread' && r.tid !== undefined) this.rowByTid.set(r.tid, r);
    this.emit('rows');
  }

  select(s: Selected | null): void {
    this.selected = s;
    this.emit('selection');
  }

  setRange(r: Range | null): void {
    this.range = r;
    this.emit('range');
  }

  /** The label of thread `tid` (for CPU rows and arrows). */
  threadLabel(tid: number): string {
    if (tid === 0) return 'idle (swapper)';
    const r = this.rowByTid.get(tid);
    return r ? r.label : `tid ${tid}`;
  }
}
