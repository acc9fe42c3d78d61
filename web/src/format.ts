// Time formatting, colours and small helpers shared by the modules.

export const NS_PER_S = 1e9;
const NS_PER_DAY = 86400 * NS_PER_S;

/**
 * A time of day in nanoseconds, in the server's time zone (the one `reef
 * print` uses), read from a line's `[HH:MM:SS.nnnnnnnnn]`, so that the axis
 * and the tooltips match the event list's text whatever the browser's own
 * time zone. Falls back to UTC from `originNs`.
 */
export function originTimeOfDay(line: string, originNs: string | null): number {
  const m = /^\[(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\]/.exec(line);
  if (m) {
    const frac = (m[4] ?? '').padEnd(9, '0');
    return ((+m[1]! * 60 + +m[2]!) * 60 + +m[3]!) * NS_PER_S + +frac;
  }
  try {
    return originNs === null ? 0 : Number(BigInt(originNs) % BigInt(NS_PER_DAY));
  } catch {
    return 0;
  }
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/**
 * `tod` (ns since midnight, may exceed a day) as `HH:MM:SS` followed by
 * `digits` decimals of the second (0..9).
 */
export function formatTimeOfDay(tod: number, digits = 9): string {
  let ns = Math.round(tod) % NS_PER_DAY;
  if (ns < 0) ns += NS_PER_DAY;
  const s = Math.floor(ns / NS_PER_S);
  const frac = ns - s * NS_PER_S;
  const text = `${pad(Math.floor(s / 3600), 2)}:${pad(Math.floor(s / 60) % 60, 2)}:${pad(s % 60, 2)}`;
  if (digits <= 0) return text;
  return `${text}.${pad(frac, 9).slice(0, digits)}`;
}

/** An exact duration with a readable unit: `12 ns`, `1.234 µs`, `5.000001 ms`, `2.000000003 s`. */
export function formatDuration(ns: number): string {
  ns = Math.round(ns);
  const sign = ns < 0 ? '-' : '';
  const a = Math.abs(ns);
  if (a < 1e3) return `${sign}${a} ns`;
  if (a < 1e6) return `${sign}${fixed(a, 1e3, 3)} µs`;
  if (a < 1e9) return `${sign}${fixed(a, 1e6, 6)} ms`;
  return `${sign}${fixed(a, 1e9, 9)} s`;
}

/** a / unit with `digits` decimals, exactly (integer arithmetic, no float rounding). */
function fixed(a: number, unit: number, digits: number): string {
  const whole = Math.floor(a / unit);
  const rest = a - whole * unit;
  return `${whole}.${pad(rest, digits)}`;
}

/** A short duration for labels: at most 4 significant digits. */
export function formatDurationShort(ns: number): string {
  const a = Math.abs(ns);
  const units: [number, string][] = [
    [1e9, 's'],
    [1e6, 'ms'],
    [1e3, 'µs'],
  ];
  for (const [u, name] of units) if (a >= u) return `${+(ns / u).toPrecision(4)} ${name}`;
  return `${Math.round(ns)} ns`;
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

// --- Colours ---------------------------------------------------------------

const colourCache = new Map<number, string>();

/** A stable, well-spread colour for an integer key (a process or thread id). */
export function colourFor(key: number): string {
  let c = colourCache.get(key);
  if (c === undefined) {
    // A 32-bit integer hash (splitmix-like), then golden-ratio hue spacing.
    let h = (key | 0) ^ 0x9e3779b9;
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    h ^= h >>> 16;
    const hue = ((h >>> 0) % 360 + 360) % 360;
    const light = 42 + ((h >>> 9) % 3) * 8;
    c = `hsl(${hue}, 62%, ${light}%)`;
    colourCache.set(key, c);
  }
  return c;
}

/** A colour per string (subsystem/provider names). */
export function colourForName(name: string): string {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return colourFor(h);
}

export const IDLE_COLOUR = '#dcdcdc';

/** Thread states (docs/view-api.md) and their colours, as in Trace Compass's Control Flow. */
export const THREAD_STATES: Record<number, { name: string; colour: string | null }> = {
  [-1]: { name: 'unknown', colour: null },
  1: { name: 'running (user mode)', colour: '#2ca02c' },
  2: { name: 'in a system call', colour: '#1f6fd0' },
  3: { name: 'interrupted', colour: '#ff8c1a' },
  4: { name: 'waiting for a CPU', colour: '#e8c70b' },
  5: { name: 'blocked', colour: '#b4b8be' },
  6: { name: 'exited', colour: null },
};

// --- Misc --------------------------------------------------------------------

/** Bytes of UTF-8 before `byteOffset` → the index in the JS string. */
export function byteToCharOffset(s: string, byteOffset: number): number {
  const enc = new TextEncoder();
  let bytes = 0;
  let i = 0;
  for (const ch of s) {
    if (bytes >= byteOffset) break;
    bytes += enc.encode(ch).length;
    i += ch.length;
  }
  return i;
}

export function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x;
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  if (text !== undefined) e.textContent = text;
  return e;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`missing element #${id}`);
  return e as T;
}

/** A byte count with a binary unit: 1.5 MiB. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}
