// The timeline's row tree: CPUs first, then processes with their threads,
// then streams; groups collapse. Flattened into the lines the canvas draws.

import type { Row } from './api';

export interface Line {
  /** `group`: a label-only header; `row`: a row of the API (possibly also a header). */
  kind: 'group' | 'row';
  key: string;
  label: string;
  depth: number;
  row: Row | null;
  /** Present on headers: whether the group is collapsed. */
  collapsed?: boolean;
  /** Number of lines the group hides or shows under its header. */
  children?: number;
}

function byNumber<T>(f: (x: T) => number): (a: T, b: T) => number {
  return (a, b) => f(a) - f(b);
}

/**
 * The visible lines for `rows`, leaving out `hidden` rows and the children
 * of `collapsed` groups (keys: `cpus`, `p:PID`).
 */
export function buildLines(rows: Row[], hidden: Set<number>, collapsed: Set<string>): Line[] {
  const lines: Line[] = [];
  const shown = rows.filter((r) => !hidden.has(r.id));
  const cpus = shown.filter((r) => r.kind === 'cpu').sort(byNumber((r) => r.cpu ?? r.id));
  const threads = shown.filter((r) => r.kind === 'thread');
  const streams = shown.filter((r) => r.kind === 'stream').sort(byNumber((r) => r.id));

  if (cpus.length) {
    const c = collapsed.has('cpus');
    lines.push({ kind: 'group', key: 'cpus', label: 'CPUs', depth: 0, row: null, collapsed: c, children: cpus.length });
    if (!c) for (const r of cpus) lines.push({ kind: 'row', key: `r:${r.id}`, label: r.label, depth: 1, row: r });
  }

  // Processes (threads with a known pid), and threads of unknown process,
  // ordered together by pid / tid.
  const procs = new Map<number, Row[]>();
  const loose: Row[] = [];
  for (const r of threads) {
    if (r.pid === undefined || r.pid === null) loose.push(r);
    else {
      let l = procs.get(r.pid);
      if (!l) procs.set(r.pid, (l = []));
      l.push(r);
    }
  }
  type Top = { order: number; emit: () => void };
  const tops: Top[] = [];
  for (const [pid, members] of procs) {
    members.sort(byNumber((r) => r.tid ?? r.id));
    tops.push({
      order: pid,
      emit: () => {
        const key = `p:${pid}`;
        const main = members.find((r) => r.tid === pid);
        const others = members.filter((r) => r !== main);
        const c = collapsed.has(key);
        if (main) {
          // The process's main thread heads its group, as in Trace Compass.
          lines.push({ kind: 'row', key, label: main.label, depth: 0, row: main, collapsed: others.length ? c : undefined, children: others.length });
        } else {
          const label = members[0]!.process ?? `process ${pid}`;
          lines.push({ kind: 'group', key, label, depth: 0, row: null, collapsed: c, children: others.length });
        }
        if (!c) for (const r of others) lines.push({ kind: 'row', key: `r:${r.id}`, label: r.label, depth: 1, row: r });
      },
    });
  }
  for (const r of loose) {
    tops.push({
      order: r.tid ?? r.id,
      emit: () => lines.push({ kind: 'row', key: `r:${r.id}`, label: r.label, depth: 0, row: r }),
    });
  }
  tops.sort((a, b) => a.order - b.order);
  for (const t of tops) t.emit();

  for (const r of streams) lines.push({ kind: 'row', key: `r:${r.id}`, label: r.label, depth: 0, row: r });
  return lines;
}
