// Drawing helpers shared by the timeline and the panels: a canvas sharp
// on high-DPI screens, arrows, hit-testing a segment, a histogram.

import { el, formatCount } from './format';

/** A canvas of `w` × `h` CSS px backed by device pixels, and its context scaled to CSS px. */
export function hiDpiCanvas(id: string, cls: string, w: number, h: number): [HTMLCanvasElement, CanvasRenderingContext2D | null] {
  const canvas = el('canvas', { id, class: cls });
  const dpr = window.devicePixelRatio || 1;
  canvas.width = w * dpr;
  canvas.height = h * dpr;
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const ctx = canvas.getContext('2d');
  ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
  return [canvas, ctx];
}

/** A line from (x1, y1) to (x2, y2) with a head at its end, in the context's stroke and fill styles. */
export function drawArrow(ctx: CanvasRenderingContext2D, x1: number, y1: number, x2: number, y2: number, dash: number[] = []): void {
  ctx.setLineDash(dash);
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x2, y2);
  ctx.stroke();
  ctx.setLineDash([]);
  const ang = Math.atan2(y2 - y1, x2 - x1);
  ctx.beginPath();
  ctx.moveTo(x2, y2);
  ctx.lineTo(x2 - 7 * Math.cos(ang - 0.4), y2 - 7 * Math.sin(ang - 0.4));
  ctx.lineTo(x2 - 7 * Math.cos(ang + 0.4), y2 - 7 * Math.sin(ang + 0.4));
  ctx.closePath();
  ctx.fill();
}

/** Distance from (px, py) to the segment (x1, y1)–(x2, y2). */
export function distToSegment(px: number, py: number, x1: number, y1: number, x2: number, y2: number): number {
  const dx = x2 - x1;
  const dy = y2 - y1;
  const l2 = dx * dx + dy * dy;
  const u = l2 ? Math.max(0, Math.min(1, ((px - x1) * dx + (py - y1) * dy) / l2)) : 0;
  return Math.hypot(px - (x1 + u * dx), py - (y1 + u * dy));
}

/** A histogram of durations (bins in µs) as bars, each with its count in `data-count`. */
export function histogram(id: string, title: string, bins: { lower_us: number; upper_us: number; count: number }[]): HTMLElement {
  const box = el('div', { class: 'act-hist', id });
  if (!bins.length) return box;
  const max = Math.max(...bins.map((b) => b.count), 1);
  const plot = el('div', { class: 'act-bars' });
  for (const b of bins) {
    const bar = el('div', { class: 'act-bar', title: `${b.lower_us.toFixed(3)} – ${b.upper_us.toFixed(3)} µs: ${formatCount(b.count)}` });
    bar.style.height = `${b.count ? Math.max(1, (60 * b.count) / max) : 0}px`;
    bar.dataset['count'] = String(b.count);
    plot.appendChild(bar);
  }
  const axis = el('div', { class: 'act-axis' });
  axis.append(el('span', {}, `${bins[0]!.lower_us.toFixed(3)} µs`), el('span', {}, `${bins[bins.length - 1]!.upper_us.toFixed(3)} µs`));
  box.append(el('div', { class: 'act-hist-title' }, title), plot, axis);
  return box;
}
