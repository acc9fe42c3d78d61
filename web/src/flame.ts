// The Profile tab: the call tree of the samples (or of function time, for
// entry/exit traces) in the selected range, else the visible one, over
// every row or the chosen one, from /api/profile (`reef profile`'s own
// reading and symbolization, so the numbers are its folded stacks'),
// drawn as an icicle: the whole at the top, callees below, each frame as
// wide as its share. Hover: function, self, total, share; click: that
// frame fills the width (click the top bar to go back up).

import { getProfile, type ProfileAnswer, type ProfileFrame } from './api';
import { el, formatCount, formatDuration } from './format';
import { Serial } from './serial';
import type { State } from './state';

const FRAME_H = 18;
/** Frames narrower than this (CSS px) are not drawn. */
const MIN_W = 0.5;

/** A frame as drawn, in client coordinates (for tests). */
export interface DrawnFrame {
  name: string;
  /** Names from the top (the root's, empty, left out). */
  path: string[];
  depth: number;
  x: number;
  y: number;
  w: number;
  total: number;
  self: number;
}

interface Placed {
  f: ProfileFrame;
  path: string[];
  depth: number;
  x: number;
  w: number;
}

/** A warm colour per function name, as flame graphs have. */
function frameColour(name: string): string {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  const u = (h >>> 0) / 4294967296;
  const hue = 10 + Math.round(u * 40);
  const light = 52 + Math.round(((h >>> 8) & 0xff) / 255 * 14);
  return `hsl(${hue}, 85%, ${light}%)`;
}

export class FlameTab {
  private shown = false;
  private answer: ProfileAnswer | null = null;
  /** The frame filling the width (a path from the root), [] for the whole. */
  private focus: string[] = [];
  private placed: Placed[] = [];
  private canvas: HTMLCanvasElement;
  private tip: HTMLElement;
  private status: HTMLElement;
  private rowSelect: HTMLSelectElement;
  private summary: HTMLElement;
  private controller: AbortController | null = null;
  private serial: Serial;
  private asked: { from: number; to: number; row: number | null } | null = null;
  private timer: number | null = null;

  constructor(
    private box: HTMLElement,
    private state: State,
  ) {
    const tools = el('div', { class: 'an-tools' });
    this.rowSelect = el('select', { id: 'flame-row', title: 'Whose samples: every row, or one' });
    this.rowSelect.addEventListener('change', () => this.schedule());
    this.status = el('span', { class: 'status', id: 'flame-status' });
    tools.append(el('span', {}, 'Profile of'), this.rowSelect, this.status);
    this.summary = el('div', { class: 'flame-summary', id: 'flame-summary' });
    const wrap = el('div', { class: 'flame-wrap' });
    this.canvas = el('canvas', { id: 'flame', class: 'flame' });
    this.tip = el('div', { class: 'flame-tip', id: 'flame-tip' });
    this.tip.hidden = true;
    wrap.append(this.canvas, this.tip);
    box.append(tools, this.summary, wrap);
    this.canvas.addEventListener('mousemove', (e) => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => {
      this.tip.hidden = true;
    });
    this.canvas.addEventListener('click', (e) => this.click(e));
    window.addEventListener('resize', () => {
      if (this.shown) this.draw();
    });
    this.serial = new Serial(
      () => this.load(),
      (e) => {
        this.status.textContent = `failed: ${e instanceof Error ? e.message : String(e)}`;
      },
    );
    state.on('rows', () => this.fillRows());
    this.fillRows();
  }

  private fillRows(): void {
    const cur = this.rowSelect.value;
    this.rowSelect.textContent = '';
    this.rowSelect.append(el('option', { value: '' }, 'all rows'));
    for (const r of this.state.rows) {
      if (r.kind === 'cpu') continue;
      this.rowSelect.append(el('option', { value: String(r.id) }, r.label));
    }
    this.rowSelect.value = [...this.rowSelect.options].some((o) => o.value === cur) ? cur : '';
  }

  /** Shows the profile of row `id` (null: every row). */
  setRow(id: number | null): void {
    this.rowSelect.value = id === null ? '' : String(id);
    this.schedule();
  }

  setShown(on: boolean): void {
    this.shown = on;
    if (on) this.schedule();
  }

  /** The range or the view changed: computed again shortly, when shown. */
  schedule(): void {
    if (!this.shown) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = window.setTimeout(() => {
      this.timer = null;
      this.serial.ask();
    }, 150);
  }

  busy(): boolean {
    return this.timer !== null || this.serial.busy();
  }

  private wanted(): { from: number; to: number; row: number | null } {
    const r = this.state.range ?? this.state.view;
    const from = Math.max(0, Math.floor(r.from));
    const to = Math.max(from + 1, Math.ceil(r.to));
    const v = this.rowSelect.value;
    return { from, to, row: v === '' ? null : Number(v) };
  }

  private async load(): Promise<void> {
    if (!this.state.info) return;
    const w = this.wanted();
    const a = this.asked;
    if (a && a.from === w.from && a.to === w.to && a.row === w.row && this.answer) {
      this.draw();
      return;
    }
    this.controller?.abort();
    const c = new AbortController();
    this.controller = c;
    this.status.textContent = 'computing…';
    const ans = await getProfile(w.from, w.to, w.row, c.signal);
    if (this.controller !== c) return;
    this.asked = w;
    this.answer = ans;
    this.focus = [];
    const what = this.state.range ? 'the selection' : 'the visible range';
    this.status.textContent = `${what}: ${formatDuration(w.to - w.from)}`;
    this.showSummary();
    this.draw();
  }

  private unitText(v: number): string {
    const a = this.answer;
    if (a?.measure === 'time') return formatDuration(v);
    return `${formatCount(v)} ${a?.unit ?? ''}`.trim();
  }

  private showSummary(): void {
    const a = this.answer;
    if (!a) return;
    const parts: string[] = [];
    if (a.measure === null) parts.push('no samples, function entry/exit or events with an ip context here');
    else if (a.measure === 'samples') parts.push(`${formatCount(a.total)} samples`);
    else if (a.measure === 'time') parts.push(`function self time ${formatDuration(a.total)} (${formatCount(a.function_events)} entry/exit events)`);
    else parts.push(`${formatCount(a.total)} events by where they were emitted`);
    if (a.unmatched_exits || a.unfinished) parts.push(`${a.unmatched_exits} exits without an entry, ${a.unfinished} calls unfinished`);
    if (a.pruned) parts.push(`${a.pruned} smallest frames left out`);
    if (a.missing_objects.length) parts.push(`not found: ${a.missing_objects.join(', ')}`);
    if (a.error) parts.push(`error: ${a.error}`);
    this.summary.textContent = parts.join(' · ');
  }

  /** The frame at `focus`'s path, and the names above it. */
  private focused(): { f: ProfileFrame; path: string[] } {
    let f = this.answer!.root;
    const path: string[] = [];
    for (const n of this.focus) {
      const c = f.children.find((k) => k.name === n);
      if (!c) break;
      f = c;
      path.push(n);
    }
    return { f, path };
  }

  private draw(): void {
    const a = this.answer;
    const width = Math.max(100, this.box.clientWidth - 24);
    this.placed = [];
    if (!a) return;
    const { f: top, path: topPath } = this.focused();
    // The root bar, then the focus' ancestors (narrow context), then its subtree.
    const place = (f: ProfileFrame, path: string[], depth: number, x: number, w: number): void => {
      this.placed.push({ f, path, depth, x, w });
      let cx = x;
      for (const c of f.children) {
        const cw = f.total ? (w * c.total) / f.total : 0;
        if (cw >= MIN_W) place(c, [...path, c.name], depth + 1, cx, cw);
        cx += cw;
      }
    };
    // Ancestors of the focus, full width, one line each.
    for (let i = 0; i < topPath.length; i++) {
      let g = a.root;
      for (const n of topPath.slice(0, i)) g = g.children.find((k) => k.name === n) ?? g;
      this.placed.push({ f: g, path: topPath.slice(0, i), depth: i, x: 0, w: width });
    }
    place(top, topPath, topPath.length, 0, width);
    const depth = Math.max(1, ...this.placed.map((p) => p.depth + 1));
    const dpr = window.devicePixelRatio || 1;
    const h = depth * FRAME_H + 2;
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${h}px`;
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, h);
    ctx.font = '11px sans-serif';
    ctx.textBaseline = 'middle';
    for (const p of this.placed) {
      const y = p.depth * FRAME_H;
      const isRoot = p.path.length === 0;
      const ancestor = p.depth < topPath.length;
      ctx.fillStyle = isRoot ? '#c9ced6' : ancestor ? '#e3e6ea' : frameColour(p.f.name);
      ctx.fillRect(p.x, y, Math.max(MIN_W, p.w - 0.5), FRAME_H - 1);
      if (p.w > 24) {
        const label = isRoot ? `all (${this.unitText(a.total)})` : p.f.name;
        ctx.save();
        ctx.beginPath();
        ctx.rect(p.x, y, p.w - 2, FRAME_H);
        ctx.clip();
        ctx.fillStyle = '#1d2430';
        ctx.fillText(label, p.x + 3, y + FRAME_H / 2);
        ctx.restore();
      }
    }
  }

  private at(e: MouseEvent): Placed | null {
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left;
    const d = Math.floor((e.clientY - r.top) / FRAME_H);
    // The last drawn at that depth under x (ancestors come first).
    for (let i = this.placed.length - 1; i >= 0; i--) {
      const p = this.placed[i]!;
      if (p.depth === d && x >= p.x && x < p.x + p.w) return p;
    }
    return null;
  }

  private hover(e: MouseEvent): void {
    const p = this.at(e);
    const a = this.answer;
    if (!p || !a) {
      this.tip.hidden = true;
      return;
    }
    const share = a.total ? (100 * p.f.total) / a.total : 0;
    const name = p.path.length ? p.f.name : 'all';
    this.tip.textContent = `${name}\ntotal ${this.unitText(p.f.total)} (${share.toFixed(2)} %)\nself ${this.unitText(p.f.self)}`;
    this.tip.hidden = false;
    const r = this.canvas.getBoundingClientRect();
    const wrap = this.canvas.parentElement!.getBoundingClientRect();
    this.tip.style.left = `${Math.min(e.clientX - wrap.left + 12, r.width - 260)}px`;
    this.tip.style.top = `${e.clientY - wrap.top + 14}px`;
  }

  private click(e: MouseEvent): void {
    const p = this.at(e);
    if (!p) return;
    this.focus = p.path;
    this.draw();
  }

  /** The frames drawn, in client coordinates. */
  drawnNow(): DrawnFrame[] {
    const r = this.canvas.getBoundingClientRect();
    return this.placed.map((p) => ({
      name: p.f.name,
      path: p.path,
      depth: p.depth,
      x: r.left + p.x,
      y: r.top + p.depth * FRAME_H,
      w: p.w,
      total: p.f.total,
      self: p.f.self,
    }));
  }

  answerNow(): ProfileAnswer | null {
    return this.answer;
  }
}
