// A cache of /api/window answers cut in fixed tiles, so that panning reuses
// what was fetched and only asks for the new part, and zooming can draw a
// coarser or finer level scaled while the right one loads.
//
// A tile of level k is TILE buckets of res = 2^k ns: tile i covers
// [i·TILE·res, (i+1)·TILE·res). Asking /api/window for exactly that range
// with width = TILE makes the server choose the same k (its rule: the
// largest k with 2^k ≤ (to−from)/width), so tiles never overlap or disagree.
// Entries are per (filter, k, tile, row): scrolling the rows vertically
// only fetches the rows that were not seen yet.

import { getWindow, isAbort, type Bucket } from './api';

export const TILE = 1024;
/** At most this many window requests in flight at once. */
const MAX_IN_FLIGHT = 4;
/** Rows per request (keeps URLs short). */
const ROWS_PER_REQUEST = 128;
/** Row-tiles kept before the oldest are dropped. */
const MAX_ENTRIES = 40000;

export interface TileData {
  b: Bucket[];
  /**
   * The buckets' resolution: the tile's own 2^k, or coarser when the
   * server answered at its index's finest level rather than decode a
   * window holding too many marks (docs/view-api.md, /api/window).
   */
  res: number;
  /** The generation (see State) the answer belongs to; older ones are stale... */
  gen: number;
  /**
   * ...unless final: the index was complete, or the tile ended before the
   * last event indexed (the index grows in time order, and a value at t
   * only depends on the events up to t).
   */
  final: boolean;
}

interface Pending {
  /** The tile's key. */
  tkey: string;
  rows: number[];
  gen: number;
  final: boolean;
  controller: AbortController;
}

export interface Need {
  k: number;
  tile: number;
  rows: number[];
  /** Lower first. */
  priority: number;
}

export class TileCache {
  /** `${filter}|${k}|${tile}` → row → data. */
  private tiles = new Map<string, Map<number, TileData>>();
  private entries = 0;
  private pending = new Set<Pending>();
  private queue: { need: Need; filter: number | null; gen: number; final: boolean }[] = [];

  constructor(private onData: () => void) {}

  static key(filter: number | null, k: number, tile: number): string {
    return `${filter ?? 0}|${k}|${tile}`;
  }

  get(filter: number | null, k: number, tile: number): Map<number, TileData> | undefined {
    return this.tiles.get(TileCache.key(filter, k, tile));
  }

  busy(): boolean {
    return this.pending.size > 0 || this.queue.length > 0;
  }

  clear(): void {
    for (const p of this.pending) p.controller.abort();
    this.pending.clear();
    this.queue = [];
    this.tiles.clear();
    this.entries = 0;
  }

  /**
   * Make sure what `needs` lists gets fetched (at generation `gen`; `end`:
   * the last event indexed, `complete`: the index is built): stale or
   * missing row-tiles are requested, requests no longer needed are aborted.
   */
  want(needs: Need[], filter: number | null, gen: number, end: number, complete: boolean): void {
    const needed = new Map<string, Set<number>>();
    for (const need of needs) needed.set(TileCache.key(filter, need.k, need.tile), new Set(need.rows));
    // Abort what is no longer wanted.
    for (const p of this.pending) {
      const rows = needed.get(p.tkey);
      if ((p.gen < gen && !p.final) || !rows || !p.rows.some((r) => rows.has(r))) {
        p.controller.abort();
        this.pending.delete(p);
      }
    }
    this.queue = [];
    for (const need of needs) {
      const tkey = TileCache.key(filter, need.k, need.tile);
      const have = this.tiles.get(tkey);
      const covered = new Set<number>();
      for (const p of this.pending) if (p.tkey === tkey) for (const r of p.rows) covered.add(r);
      const missing = need.rows.filter((r) => {
        if (covered.has(r)) return false;
        const d = have?.get(r);
        return !d || (d.gen < gen && !d.final);
      });
      const tileEnd = (need.tile + 1) * TILE * 2 ** need.k;
      const final = complete || tileEnd <= end;
      for (let i = 0; i < missing.length; i += ROWS_PER_REQUEST) {
        this.queue.push({ need: { ...need, rows: missing.slice(i, i + ROWS_PER_REQUEST) }, filter, gen, final });
      }
    }
    this.queue.sort((a, b) => a.need.priority - b.need.priority);
    this.pump();
  }

  private pump(): void {
    while (this.pending.size < MAX_IN_FLIGHT && this.queue.length) {
      const q = this.queue.shift()!;
      const tkey = TileCache.key(q.filter, q.need.k, q.need.tile);
      const p: Pending = { tkey, rows: q.need.rows, gen: q.gen, final: q.final, controller: new AbortController() };
      this.pending.add(p);
      const res = 2 ** q.need.k;
      const from = q.need.tile * TILE * res;
      getWindow(from, from + TILE * res, TILE, q.need.rows, q.filter, p.controller.signal)
        .then((a) => {
          if (!this.pending.has(p)) return;
          if (a.k < q.need.k) {
            // Finer than asked: the server's rule says this cannot be;
            // keep nothing rather than draw buckets at the wrong scale.
            console.warn(`window: asked for k=${q.need.k}, got k=${a.k}`);
            return;
          }
          let m = this.tiles.get(tkey);
          if (!m) {
            m = new Map();
            this.tiles.set(tkey, m);
          }
          for (const r of a.rows) {
            if (!m.has(r.id)) this.entries++;
            m.set(r.id, { b: r.b, res: a.res, gen: q.gen, final: q.final });
          }
          this.evict();
        })
        .catch((e: unknown) => {
          if (!isAbort(e)) console.warn('window request failed:', e);
        })
        .finally(() => {
          this.pending.delete(p);
          this.pump();
          this.onData();
        });
    }
  }

  private evict(): void {
    // Map iteration order is insertion order: drop the oldest tiles first.
    for (const [key, m] of this.tiles) {
      if (this.entries <= MAX_ENTRIES) break;
      this.entries -= m.size;
      this.tiles.delete(key);
    }
  }
}
