// The view's state in the URL's fragment, so that a link shows what its
// author saw: `v=FROM,TO` (the visible range), `sel=FROM,TO` (the range
// selection), `f=EXPR` (the filter expression), `hr=ID,...` and
// `hc=ID,...` (rows and event classes hidden, by their /api ids),
// `acts=JSON` (activities and periods, see activity.ts). Times are ns from
// the first event.

import type { Range } from './state';

function params(): Map<string, string> {
  const m = new Map<string, string>();
  for (const p of location.hash.replace(/^#/, '').split('&')) {
    if (!p) continue;
    const i = p.indexOf('=');
    if (i > 0) m.set(p.slice(0, i), decodeURIComponent(p.slice(i + 1)));
  }
  return m;
}

/** Sets (or, with null, removes) parameters of the fragment, keeping the others and their order. */
export function setHashParams(values: Record<string, string | null>): void {
  const m = params();
  for (const [k, v] of Object.entries(values)) {
    if (v === null || v === '') m.delete(k);
    else m.set(k, v);
  }
  const hash = [...m].map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
  const url = `${location.pathname}${location.search}${hash ? `#${hash}` : ''}`;
  if (url !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(null, '', url);
}

export function getHashParam(name: string): string | null {
  return params().get(name) ?? null;
}

function range(s: string | null): Range | null {
  const m = /^(\d+),(\d+)$/.exec(s ?? '');
  if (!m) return null;
  const from = Number(m[1]);
  const to = Number(m[2]);
  return Number.isSafeInteger(from) && Number.isSafeInteger(to) && to > from ? { from, to } : null;
}

function ids(s: string | null): number[] {
  return (s ?? '')
    .split(',')
    .filter((x) => /^\d+$/.test(x))
    .map(Number);
}

export interface UrlState {
  view: Range | null;
  range: Range | null;
  filter: string;
  hideRows: number[];
  hideClasses: number[];
}

export function readUrlState(): UrlState {
  return {
    view: range(getHashParam('v')),
    range: range(getHashParam('sel')),
    filter: getHashParam('f') ?? '',
    hideRows: ids(getHashParam('hr')),
    hideClasses: ids(getHashParam('hc')),
  };
}

export function writeUrlState(s: UrlState): void {
  const r = (x: Range | null): string | null => (x ? `${Math.floor(x.from)},${Math.ceil(x.to)}` : null);
  setHashParams({
    v: r(s.view),
    sel: r(s.range),
    f: s.filter || null,
    hr: s.hideRows.length ? [...s.hideRows].sort((a, b) => a - b).join(',') : null,
    hc: s.hideClasses.length ? [...s.hideClasses].sort((a, b) => a - b).join(',') : null,
  });
}
