// End-to-end tests of `reef view`'s page in headless Chromium, against
// babeltrace2's text read independently by the test.
//
//   node tests/view/e2e.mjs [SUITE-NAME-SUBSTRING...]   (from the repository; builds nothing)
//
// The binary under test is $REEF_BIN (default: target/release/reef). The
// suites: kernelTrace, unevenTrace, coarseIndex, demoTrace, brokenTrace;
// with arguments, only those whose name contains one of them run.
//
// Needs: $REEF_BIN built with web/dist, chromium (/usr/bin/chromium),
// babeltrace2 (scripts/install-deps.sh), web/node_modules
// (scripts/build-web.sh), and examples/build/trace (bash scripts/demo.sh).
// One line per check; exit status 0 only if every check passed.
// Screenshots: tests/view/screenshots/, and docs/view.png (the README's
// picture: the kernel trace with a CPU bar's tooltip).

import { chmodSync, closeSync, cpSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ROOT,
  assert,
  assertEq,
  bt2Events,
  check,
  exists,
  glob,
  listLines,
  listTotal,
  openPage,
  runSuites,
  sameLine,
  settle,
  shot,
  startServer,
  tooltipAt,
  withDelta,
} from './e2e-lib.mjs';

const KERNEL = '../shared/conformance/kernel-traces/bug446190';
const UNEVEN = '../shared/conformance/kernel-traces/uneven-streams';
const DEMO = 'examples/build/trace';

const view = (page) => page.evaluate(() => window.reefView.view());
const setView = async (page, from, to) => {
  await page.evaluate(([f, t]) => window.reefView.setView(f, t), [from, to]);
  await settle(page);
};
const xOf = (page, t) => page.evaluate((t) => window.reefView.timeToClientX(t), t);
const yOf = (page, row, part) => page.evaluate(([r, p]) => window.reefView.rowClientY(r, p), [row, part]);
const rowsOf = (page) => page.evaluate(() => window.reefView.allRows());
const cpuRowIds = (rows) => new Map(rows.filter((r) => r.kind === 'cpu').map((r) => [r.cpu, r.id]));

/** The time of day the list shows for a bt2 event: `HH:MM:SS.nnnnnnnnn`. */
const todOf = (ev) => /^\[([^\]]*)\]/.exec(ev.line)[1];

/** "12 ns", "1.234 µs", "5.000001 ms", "2.000000003 s" → ns. */
function parseDuration(s) {
  const m = /^(\d+)(?:\.(\d+))? (ns|µs|ms|s)/.exec(s);
  if (!m) throw new Error(`cannot read the duration ${JSON.stringify(s)}`);
  const unit = { ns: 1, µs: 1e3, ms: 1e6, s: 1e9 }[m[3]];
  const digits = { ns: 0, µs: 3, ms: 6, s: 9 }[m[3]];
  return Number(m[1]) * unit + Number((m[2] ?? '').padEnd(digits, '0') || 0);
}

/** Spans of a CPU's value: between consecutive sched_switch on it that change next_tid. */
function cpuSpans(evs, cpu) {
  const sw = evs.filter((e) => e.name === 'sched_switch' && e.cpu === cpu);
  const spans = [];
  for (let i = 1; i + 1 < sw.length; i++) {
    const [p, s, n] = [sw[i - 1], sw[i], sw[i + 1]];
    if (p.fields.next_tid === s.fields.next_tid || s.fields.next_tid === n.fields.next_tid) continue;
    if (p.t === s.t || s.t === n.t) continue;
    spans.push({ cpu, tid: Number(s.fields.next_tid), start: s, end: n, d: n.t - s.t });
  }
  return spans;
}

/** Events alone on their CPU within ±gap ns, without empty strings. */
function isolatedEvents(evs, gap) {
  const byCpu = new Map();
  for (const e of evs) {
    if (!byCpu.has(e.cpu)) byCpu.set(e.cpu, []);
    byCpu.get(e.cpu).push(e);
  }
  const out = [];
  for (const list of byCpu.values()) {
    for (let i = 1; i + 1 < list.length; i++) {
      const e = list[i];
      if (e.t - list[i - 1].t >= gap && list[i + 1].t - e.t >= gap && !e.line.includes('""')) out.push(e);
    }
  }
  return out.sort((a, b) => a.t - b.t);
}

/** Up to n items spread over a list. */
const spread = (list, n) => (list.length <= n ? list : Array.from({ length: n }, (_, k) => list[Math.floor(((k + 0.5) * list.length) / n)]));

async function compareFirstLines(page, evs, n, subList = null) {
  await page.evaluate(() => {
    document.getElementById('event-list').scrollTop = 0;
  });
  await settle(page);
  const lines = await listLines(page);
  const want = (subList ?? evs).slice(0, n);
  assert(lines.length >= Math.min(n, want.length), `only ${lines.length} lines shown`);
  want.forEach((ev, i) => {
    const expected = subList ? withDelta(ev, i ? want[i - 1] : null) : ev.line;
    assert(sameLine(lines[i].text, expected), `line ${i}: ${JSON.stringify(lines[i].text)} ≠ bt2 ${JSON.stringify(expected)}`);
    assertEq(lines[i].t, ev.t, `line ${i} data-t`);
  });
  return `${want.length} lines`;
}

/** Scrolls the list to its end: the last lines equal the expected last ones. */
async function compareLastLines(page, expected, n) {
  await page.evaluate(() => {
    const b = document.getElementById('event-list');
    b.scrollTop = b.scrollHeight;
  });
  await settle(page);
  await page.waitForTimeout(100);
  await settle(page);
  const lines = await listLines(page);
  const tail = lines.slice(-n);
  const want = expected.slice(-n);
  assertEq(tail.length, want.length, 'lines at the end');
  tail.forEach((l, i) => assert(sameLine(l.text, want[i]), `line ${l.index}: ${JSON.stringify(l.text)} ≠ ${JSON.stringify(want[i])}`));
  assertEq(tail[tail.length - 1].index, expected.length - 1, 'index of the last line');
}

/** Checks the thread a CPU bar shows (and its exact span) through the bar's tooltip. */
async function checkCpuBar(page, cpuRow, span) {
  const pad = span.d / 2;
  await setView(page, span.start.t - pad, span.end.t + pad);
  const T = span.start.t + Math.floor(span.d / 2);
  const tip = await tooltipAt(page, await xOf(page, T), await yOf(page, cpuRow, 'bar'));
  const thread = tip.cells.thread ?? '';
  if (span.tid === 0) assertEq(thread, 'idle', `cpu ${span.cpu} at ${T}: thread`);
  else assert(thread.endsWith(`(${span.tid})`), `cpu ${span.cpu} at ${T}: thread ${JSON.stringify(thread)}, bt2 next_tid ${span.tid}`);
  assertEq(tip.cells.CPU, String(span.cpu), 'CPU');
  assertEq(tip.cells.start, todOf(span.start), 'start');
  assertEq(parseDuration(tip.cells.duration ?? ''), span.d, 'duration (ns)');
  return `cpu ${span.cpu}: ${thread}`;
}

/** Hovers the mark of a bt2 event on its CPU row: the tooltip shows its line. */
async function checkMark(page, row, ev, halfSpan = 1500) {
  await setView(page, ev.t - halfSpan, ev.t + halfSpan);
  const tip = await tooltipAt(page, await xOf(page, ev.t), await yOf(page, row, 'mark'));
  assert(tip.line !== null, `no event line in the tooltip: ${tip.text}`);
  assert(sameLine(tip.line, ev.line), `tooltip ${JSON.stringify(tip.line)} ≠ bt2 ${JSON.stringify(ev.line)}`);
}

/**
 * Hovers the mark of the bucket holding `ev` at the level the view is drawn
 * at: the tooltip shows the first of the row's events in that bucket
 * (`rowEvents`, in bt2's order).
 */
async function checkBucketMark(page, row, rowEvents, ev) {
  const { res } = await page.evaluate(() => window.reefView.level());
  const j = Math.floor(ev.t / res);
  const first = rowEvents.find((e) => e.t >= j * res && e.t < (j + 1) * res);
  const tip = await tooltipAt(page, await xOf(page, (j + 0.5) * res), await yOf(page, row, 'mark'));
  assert(tip.line !== null, `no event line in the tooltip: ${tip.text}`);
  assert(sameLine(tip.line, first.line), `tooltip ${JSON.stringify(tip.line)} ≠ bt2 ${JSON.stringify(first.line)}`);
  return `bucket of ${res} ns`;
}

async function noErrors(errors) {
  assert(errors.length === 0, errors.slice(0, 5).join(' | '));
}

// --- The kernel trace: every feature -----------------------------------------------------------

async function kernelTrace(browser) {
  const evs = bt2Events(join(ROOT, KERNEL));
  const server = await startServer([KERNEL]);
  const { page, errors } = await openPage(browser, server.url);
  try {
    const rows = await rowsOf(page);
    const cpuRow = cpuRowIds(rows);
    const tag = 'bug446190';

    await check(`${tag}: CPU rows are bt2's cpu_ids`, async () => {
      const want = [...new Set(evs.map((e) => e.cpu))].sort((a, b) => a - b);
      const got = [...cpuRow.keys()].sort((a, b) => a - b);
      assertEq(JSON.stringify(got), JSON.stringify(want), 'cpus');
      const shown = await page.evaluate(() => window.reefView.rows());
      for (const id of cpuRow.values()) assert(shown.includes(id), `CPU row ${id} not drawn`);
      return got.join(',');
    });
    await shot(page, 'kernel-overview');

    await check(`${tag}: the list's first lines are bt2's`, () => compareFirstLines(page, evs, 20));
    await check(`${tag}: the list's last lines are bt2's (scrolled to the end)`, () =>
      compareLastLines(page, evs.map((e) => e.line), 10),
    );

    const spans = [...cpuRow.keys()].flatMap((c) => {
      const s = cpuSpans(evs, c).filter((x) => x.d >= 50000);
      const busy = s.filter((x) => x.tid !== 0);
      const idle = s.filter((x) => x.tid === 0);
      return [...spread(busy, 1), ...spread(idle, 1)];
    });
    for (const span of spans.slice(0, 6)) {
      await check(`${tag}: the CPU ${span.cpu} bar at ${todOf(span.start)}+ shows bt2's next_tid ${span.tid}, start, duration`, () =>
        checkCpuBar(page, cpuRow.get(span.cpu), span),
      );
    }
    await shot(page, 'kernel-bar-tooltip');
    await check(`${tag}: the README's picture is saved (docs/view.png)`, async () => {
      const path = join(ROOT, 'docs/view.png');
      await page.screenshot({ path });
      assert(statSync(path).size > 10000, `${path}: ${statSync(path).size} bytes`);
      return path;
    });

    const marks = spread(isolatedEvents(evs, 3000), 4);
    for (const ev of marks) {
      await check(`${tag}: the mark of event #${ev.i} (${ev.name}) has bt2's line as tooltip`, () =>
        checkMark(page, cpuRow.get(ev.cpu), ev),
      );
    }
    await shot(page, 'kernel-mark-tooltip');

    const clicked = marks[marks.length - 1];
    await check(`${tag}: clicking a mark selects its line in the list`, async () => {
      await checkMark(page, cpuRow.get(clicked.cpu), clicked);
      await page.mouse.click(await xOf(page, clicked.t), await yOf(page, cpuRow.get(clicked.cpu), 'mark'));
      await settle(page);
      const sel = (await listLines(page)).filter((l) => l.selected);
      assertEq(sel.length, 1, 'selected lines');
      assert(sameLine(sel[0].text, clicked.line), `selected ${JSON.stringify(sel[0].text)}`);
      assertEq(sel[0].index, clicked.i, 'index in the list');
    });

    await check(`${tag}: clicking a list line centres the timeline on it, same zoom`, async () => {
      const before = await view(page);
      const lines = await listLines(page);
      const target = lines.find((l) => !l.selected && l.t !== clicked.t && Math.abs(l.t - clicked.t) > 2000);
      assert(target, 'no other line on screen');
      await page.click(`#event-list .ev-line[data-index="${target.index}"]`);
      await settle(page);
      const after = await view(page);
      assert(Math.abs((after.from + after.to) / 2 - target.t) <= 1, `centre ${(after.from + after.to) / 2}, line at ${target.t}`);
      assert(Math.abs(after.to - after.from - (before.to - before.from)) <= 1, 'the span changed');
      const sel = (await listLines(page)).filter((l) => l.selected);
      assertEq(sel[0]?.index, target.index, 'selected line');
    });

    // Navigation, from the whole trace.
    await page.click('#reset');
    await settle(page);
    const box = await page.evaluate(() => {
      const r = document.getElementById('timeline').getBoundingClientRect();
      return { left: r.left, top: r.top, width: r.width, height: r.height };
    });
    const plotX = box.left + 230 + (box.width - 230) * 0.3;
    const plotY = box.top + 120;
    const tAt = (v, x) => v.from + ((x - box.left - 230) / (box.width - 230)) * (v.to - v.from);

    await check(`${tag}: key W zooms in around the mouse`, async () => {
      const v0 = await view(page);
      await page.mouse.move(plotX, plotY);
      await page.keyboard.press('w');
      await settle(page);
      const v1 = await view(page);
      const r = (v1.to - v1.from) / (v0.to - v0.from);
      assert(Math.abs(r - 1 / 1.5) < 0.01, `span ratio ${r}`);
      const px = (v0.to - v0.from) / (box.width - 230);
      assert(Math.abs(tAt(v0, plotX) - tAt(v1, plotX)) < 2 * px, 'the time under the mouse moved');
      return `span ${v0.to - v0.from} → ${Math.round(v1.to - v1.from)} ns`;
    });

    await check(`${tag}: the wheel zooms in around the mouse`, async () => {
      const v0 = await view(page);
      await page.mouse.move(plotX, plotY);
      for (let k = 0; k < 5; k++) await page.mouse.wheel(0, -200);
      await settle(page);
      const v1 = await view(page);
      assert(v1.to - v1.from < (v0.to - v0.from) / 2, `span ${v0.to - v0.from} → ${v1.to - v1.from}`);
      const px = (v0.to - v0.from) / (box.width - 230);
      assert(Math.abs(tAt(v0, plotX) - tAt(v1, plotX)) < 2 * px, 'the time under the mouse moved');
      return `span → ${Math.round(v1.to - v1.from)} ns`;
    });

    await check(`${tag}: after zooming, the statistics of the view count bt2's events in it`, async () => {
      const v = await view(page);
      const from = Math.max(0, Math.floor(v.from));
      const to = Math.ceil(v.to);
      const want = evs.filter((e) => e.t >= from && e.t < to).length;
      const text = await page.evaluate(() => document.querySelector('#stats .stats-events')?.textContent ?? '');
      assertEq(text, `events: ${want.toLocaleString('en-US')}`, 'statistics');
      return `${want} events`;
    });

    await check(`${tag}: after zooming, hovered marks still show bt2's lines`, async () => {
      const v = await view(page);
      const inView = evs.filter((e) => e.t > v.from + (v.to - v.from) * 0.1 && e.t < v.to - (v.to - v.from) * 0.1);
      assert(inView.length > 0, 'no event in the view');
      const out = [];
      for (const ev of spread(inView, 3)) {
        out.push(await checkBucketMark(page, cpuRow.get(ev.cpu), evs.filter((e) => e.cpu === ev.cpu), ev));
      }
      const v2 = await view(page);
      assert(v2.from === v.from && v2.to === v.to, 'hovering moved the view');
      return out[0];
    });

    await check(`${tag}: dragging pans`, async () => {
      const v0 = await view(page);
      await page.mouse.move(plotX, plotY);
      await page.mouse.down();
      for (let k = 1; k <= 10; k++) await page.mouse.move(plotX + k * 20, plotY);
      await page.mouse.up();
      await settle(page);
      const v1 = await view(page);
      const dt = (200 * (v0.to - v0.from)) / (box.width - 230);
      assert(Math.abs(v0.from - v1.from - dt) < dt * 0.02 + 1, `moved ${v0.from - v1.from}, expected ${dt}`);
      assert(Math.abs(v1.to - v1.from - (v0.to - v0.from)) < 1, 'the span changed');
    });

    await check(`${tag}: keys D, A pan; S zooms out; Alt+Left/Right go back and forward`, async () => {
      await page.mouse.move(box.left + 100, box.top + 5); // off the plot: keys act around the centre
      await page.waitForTimeout(500);
      const v0 = await view(page);
      const span = v0.to - v0.from;
      await page.keyboard.press('d');
      await settle(page);
      const v1 = await view(page);
      assert(Math.abs(v1.from - v0.from - 0.2 * span) < 2, `D moved ${v1.from - v0.from}`);
      await page.keyboard.press('a');
      await settle(page);
      const v2 = await view(page);
      assert(Math.abs(v2.from - v0.from) < 2, `A: ${v2.from} vs ${v0.from}`);
      await page.waitForTimeout(500);
      await page.keyboard.press('s');
      await settle(page);
      const v3 = await view(page);
      assert(Math.abs((v3.to - v3.from) / span - 1.5) < 0.01, 'S: span');
      await page.waitForTimeout(500);
      await page.keyboard.press('Alt+ArrowLeft');
      await settle(page);
      const v4 = await view(page);
      assert(Math.abs(v4.from - v2.from) < 2 && Math.abs(v4.to - v2.to) < 2, `back: ${JSON.stringify(v4)} vs ${JSON.stringify(v2)}`);
      await page.keyboard.press('Alt+ArrowRight');
      await settle(page);
      const v5 = await view(page);
      assert(Math.abs(v5.from - v3.from) < 2 && Math.abs(v5.to - v3.to) < 2, 'forward');
      await page.click('#back');
      await settle(page);
      const v6 = await view(page);
      assert(Math.abs(v6.from - v2.from) < 2, 'the back button');
    });

    await check(`${tag}: shift+drag selects a range: its duration, and per CPU row bt2's event counts`, async () => {
      await setView(page, 0, 2_000_000_000);
      const x1 = box.left + 230 + (box.width - 230) * 0.25;
      const x2 = box.left + 230 + (box.width - 230) * 0.6;
      await page.keyboard.down('Shift');
      await page.mouse.move(x1, plotY);
      await page.mouse.down();
      for (let k = 1; k <= 8; k++) await page.mouse.move(x1 + ((x2 - x1) * k) / 8, plotY);
      await page.mouse.up();
      await page.keyboard.up('Shift');
      await settle(page);
      const r = await page.evaluate(() => window.reefView.range());
      assert(r && r.to > r.from, 'no range selected');
      const from = Math.max(0, Math.floor(r.from));
      const to = Math.ceil(r.to);
      const info = await page.evaluate(() => document.getElementById('selection-info').textContent);
      assert(info.includes('selection:'), `selection info: ${info}`);
      const counts = await page.evaluate(() => window.reefView.rangeCounts());
      assert(counts, 'no counts');
      for (const [cpu, id] of cpuRow) {
        const want = evs.filter((e) => e.cpu === cpu && e.t >= from && e.t < to).length;
        assertEq(counts[id], want, `CPU ${cpu} count`);
      }
      await shot(page, 'kernel-range-selection');
      await page.click('#zoom-selection');
      await settle(page);
      const v = await view(page);
      assert(Math.abs(v.from - r.from) < 1 && Math.abs(v.to - r.to) < 1, `zoom to selection: ${JSON.stringify(v)}`);
      return Object.values(counts).join('/');
    });

    await check(`${tag}: wakeup arrows are drawn, with a tooltip, and the button hides them`, async () => {
      // A wakeup whose thread is switched in next on another event.
      let pair = null;
      for (let i = 0; i < evs.length && !pair; i++) {
        const w = evs[i];
        if (w.name !== 'sched_wakeup') continue;
        const tid = w.fields.tid;
        for (let j = i + 1; j < evs.length; j++) {
          const e = evs[j];
          if ((e.name === 'sched_wakeup' || e.name === 'sched_waking') && e.fields.tid === tid) break;
          if (e.name === 'sched_switch' && e.fields.next_tid === tid) {
            if (e.t - w.t > 3000 && e.t - w.t < 50000 && e.cpu !== w.cpu) pair = { w, s: e, tid: Number(tid) };
            break;
          }
        }
      }
      assert(pair, 'no wakeup in the trace');
      const d = pair.s.t - pair.w.t;
      await setView(page, pair.w.t - d, pair.s.t + d);
      const arrows = await page.evaluate(() => window.reefView.arrows());
      const a = arrows.find((x) => x.tid === pair.tid && x.to_t === pair.s.t);
      assert(a, `no arrow for tid ${pair.tid} switched in at ${pair.s.t}: ${JSON.stringify(arrows.slice(0, 5))}`);
      assertEq(a.from_t, pair.w.t, 'wakeup time');
      const xm = ((await xOf(page, a.from_t)) + (await xOf(page, a.to_t))) / 2;
      const y1 = await yOf(page, a.from_row, 'bar');
      const y2 = await yOf(page, a.to_row, 'bar');
      const tip = await tooltipAt(page, xm, (y1 + y2) / 2);
      assert(tip.cells.tid === String(pair.tid), `arrow tooltip: ${tip.text}`);
      assertEq(parseDuration(tip.cells.latency), d, 'latency');
      await shot(page, 'kernel-arrow');
      await page.click('#toggle-arrows');
      await settle(page);
      assertEq((await page.evaluate(() => window.reefView.arrows())).length, 0, 'arrows after hiding');
      await page.click('#toggle-arrows');
      await settle(page);
      assert((await page.evaluate(() => window.reefView.arrows())).length > 0, 'arrows after showing again');
    });

    // Filters.
    const filters = [
      ['$evt.$name == "sched_switch"', (e) => e.name === 'sched_switch'],
      ['$name =* "sched_*" && prev_tid == 0', (e) => glob('sched_*', e.name) && e.fields.prev_tid === '0'],
    ];
    for (const [expr, pred] of filters) {
      await check(`${tag}: filter ${expr}: the list is bt2's lines kept by the same predicate`, async () => {
        const kept = evs.filter(pred);
        await page.fill('#filter-expr', expr);
        await page.click('#filter-apply');
        await page.waitForFunction(() => window.reefView.filterId() !== null, null, { timeout: 30000 });
        await settle(page);
        assertEq(await listTotal(page), kept.length, 'total');
        await compareFirstLines(page, evs, 20, kept);
        await compareLastLines(page, kept.map((e, i) => withDelta(e, i ? kept[i - 1] : null)), 5);
        return `${kept.length} events`;
      });
    }
    await setView(page, 0, 1e9);
    await shot(page, 'kernel-filtered');

    await check(`${tag}: an invalid filter shows the error with a caret at its position`, async () => {
      const expr = '$evt.$name == "sched_switch" && (prev_tid >';
      await page.fill('#filter-expr', expr);
      await page.click('#filter-apply');
      await page.waitForSelector('#filter-error:not([hidden])');
      const text = await page.evaluate(() => document.getElementById('filter-error').textContent);
      const ans = await page.evaluate(async (e) => (await fetch(`api/filter?expr=${encodeURIComponent(e)}`)).json(), expr);
      assert(typeof ans.position === 'number', `the server gave no position: ${JSON.stringify(ans)}`);
      const lines = text.split('\n');
      assertEq(lines[0], expr, 'first line');
      assertEq(lines[1], `${' '.repeat(ans.position)}^`, 'caret line');
      assert(lines.slice(2).join('\n').includes(ans.error), 'message');
      // Chromium logs the 400 answer the page asked for on purpose.
      const before = errors.length;
      for (let i = errors.length - 1; i >= 0; i--) if (/status of 400/.test(errors[i])) errors.splice(i, 1);
      assert(before - errors.length <= 2, `${before - errors.length} failed requests`);
      return `position ${ans.position}`;
    });
    await shot(page, 'kernel-filter-error');

    await check(`${tag}: clearing the filter brings every event back`, async () => {
      await page.click('#filter-clear');
      await page.waitForFunction(() => window.reefView.filterId() === null);
      await settle(page);
      assertEq(await listTotal(page), evs.length, 'total');
      await compareFirstLines(page, evs, 5);
    });

    await check(`${tag}: unchecking a CPU hides its row and its events`, async () => {
      const cpu = [...cpuRow.keys()][0];
      await page.click('#filters details:nth-of-type(1) summary');
      await page.uncheck(`#filters details:nth-of-type(1) input[value="${cpuRow.get(cpu)}"]`);
      await page.waitForFunction(() => window.reefView.filterId() !== null, null, { timeout: 30000 });
      await settle(page);
      const shown = await page.evaluate(() => window.reefView.rows());
      assert(!shown.includes(cpuRow.get(cpu)), 'the row is still drawn');
      const kept = evs.filter((e) => e.cpu !== cpu);
      assertEq(await listTotal(page), kept.length, 'total');
      await compareFirstLines(page, evs, 10, kept);
      await page.check(`#filters details:nth-of-type(1) input[value="${cpuRow.get(cpu)}"]`);
      await page.waitForFunction(() => window.reefView.filterId() === null, null, { timeout: 30000 });
      await settle(page);
      assertEq(await listTotal(page), evs.length, 'total after checking it again');
      return `CPU ${cpu}`;
    });

    await check(`${tag}: search next/previous select bt2's matching lines and centre the timeline`, async () => {
      const expr = '$evt.$name == "sched_switch" && next_tid != 0';
      const matches = evs.filter((e) => e.name === 'sched_switch' && e.fields.next_tid !== '0');
      await compareFirstLines(page, evs, 1);
      await page.click('#event-list .ev-line[data-index="0"]');
      await settle(page);
      await page.fill('#search-expr', expr);
      const selected = async () => (await listLines(page)).find((l) => l.selected);
      for (const [button, k] of [
        ['#search-next', 0],
        ['#search-next', 1],
        ['#search-next', 2],
        ['#search-prev', 1],
      ]) {
        await page.click(button);
        await settle(page);
        const s = await selected();
        assert(s, `${button}: nothing selected`);
        assert(sameLine(s.text, matches[k].line), `${button}: ${JSON.stringify(s.text)} ≠ match ${k} ${JSON.stringify(matches[k].line)}`);
        const v = await view(page);
        assert(Math.abs((v.from + v.to) / 2 - matches[k].t) <= 1 || v.from <= 0, 'the timeline is not centred on it');
      }
      await page.fill('#search-expr', '$evt.$name == "no_such_event"');
      await page.click('#search-next');
      await settle(page);
      const status = await page.evaluate(() => document.getElementById('search-status').textContent);
      assert(status.includes('not found'), `status: ${status}`);
    });

    await check(`${tag}: clicking a process's label collapses and expands its threads`, async () => {
      const byPid = new Map();
      for (const r of rows) if (r.kind === 'thread' && r.pid !== undefined && r.pid !== null) byPid.set(r.pid, [...(byPid.get(r.pid) ?? []), r]);
      const entry = [...byPid.entries()].find(([pid, ts]) => ts.length >= 2 && ts.some((t) => t.tid === pid));
      assert(entry, 'no process with several threads');
      const [pid, threads] = entry;
      const main = threads.find((t) => t.tid === pid);
      const child = threads.find((t) => t !== main);
      assert((await yOf(page, child.id, 'bar')) !== null, 'the thread is not shown at first');
      const y2 = await yOf(page, main.id, 'bar');
      await page.mouse.click(box.left + 20, y2);
      await settle(page);
      assertEq(await yOf(page, child.id, 'bar'), null, 'the thread after collapsing');
      await page.mouse.click(box.left + 20, await yOf(page, main.id, 'bar'));
      await settle(page);
      assert((await yOf(page, child.id, 'bar')) !== null, 'the thread after expanding');
      return `${main.process ?? main.label}: ${threads.length} threads`;
    });

    await check(`${tag}: frame times while panning with the mouse (median ≤ 16 ms)`, async () => {
      await page.click('#reset');
      await settle(page);
      await page.mouse.move(plotX, plotY);
      await page.mouse.down();
      for (let k = 1; k <= 60; k++) await page.mouse.move(plotX + (k % 20) * 15, plotY);
      await page.mouse.up();
      await settle(page);
      const ft = (await page.evaluate(() => window.reefView.frameTimes())).slice(-60).sort((a, b) => a - b);
      const median = ft[Math.floor(ft.length / 2)];
      assert(median <= 16, `median ${median} ms`);
      return `median ${median.toFixed(2)} ms over ${ft.length} frames`;
    });

    await check(`${tag}: no console error or exception in the page`, () => noErrors(errors));
  } finally {
    await page.close();
    server.stop();
  }
}

// --- A second kernel trace: rows, list, a bar, a mark -------------------------------------------------

async function unevenTrace(browser) {
  const evs = bt2Events(join(ROOT, UNEVEN));
  const server = await startServer([UNEVEN]);
  const { page, errors } = await openPage(browser, server.url);
  const tag = 'uneven-streams';
  try {
    const cpuRow = cpuRowIds(await rowsOf(page));
    await check(`${tag}: CPU rows are bt2's cpu_ids`, async () => {
      const want = [...new Set(evs.map((e) => e.cpu))].sort((a, b) => a - b);
      assertEq(JSON.stringify([...cpuRow.keys()].sort((a, b) => a - b)), JSON.stringify(want), 'cpus');
    });
    await check(`${tag}: the list's first lines are bt2's`, () => compareFirstLines(page, evs, 20));
    await shot(page, 'uneven-overview');
    const spans = [...cpuRow.keys()].flatMap((c) => spread(cpuSpans(evs, c).filter((x) => x.d >= 20000 && x.tid !== 0), 1));
    for (const span of spans.slice(0, 3)) {
      await check(`${tag}: the CPU ${span.cpu} bar shows bt2's next_tid ${span.tid}`, () => checkCpuBar(page, cpuRow.get(span.cpu), span));
    }
    for (const ev of spread(isolatedEvents(evs, 3000), 2)) {
      await check(`${tag}: the mark of event #${ev.i} (${ev.name}) has bt2's line as tooltip`, () => checkMark(page, cpuRow.get(ev.cpu), ev));
    }
    await shot(page, 'uneven-mark-tooltip');
    await check(`${tag}: no console error or exception in the page`, () => noErrors(errors));
  } finally {
    await page.close();
    server.stop();
  }
}

// --- An index coarser than the view: the server answers at its finest level ----------------------

/**
 * With a tiny index budget and a low decoding threshold, the whole-trace
 * view asks for a level finer than the index, and the server answers at
 * its finest level instead of decoding (docs/view-api.md, /api/window).
 * The page must draw those buckets: every CPU's bar is painted from its
 * first sched_switch (bt2) to the end, as read back from the canvas.
 */
async function coarseIndex(browser) {
  const evs = bt2Events(join(ROOT, KERNEL));
  const server = await startServer(['--index-memory', '0.01', '--decode-marks', '10', KERNEL]);
  const { page, errors } = await openPage(browser, server.url);
  const tag = 'bug446190, coarse index';
  try {
    await check(`${tag}: the server answers the page's whole-trace tiles at a coarser level than asked`, async () => {
      const { k } = await page.evaluate(() => window.reefView.level());
      const got = await page.evaluate(async (kk) => {
        const span = 1024 * 2 ** kk;
        const r = await fetch(`api/window?from=0&to=${span}&width=1024&rows=0`);
        return (await r.json()).k;
      }, k);
      assert(got > k, `asked k=${k}, answered k=${got}: the case is not exercised`);
      return `asked k=${k}, answered k=${got}`;
    });
    await check(`${tag}: every CPU's bar is drawn from its first sched_switch to the end`, async () => {
      const rows = (await rowsOf(page)).filter((r) => r.kind === 'cpu');
      const end = evs[evs.length - 1].t;
      const out = [];
      for (const r of rows) {
        const first = evs.find((e) => e.name === 'sched_switch' && e.cpu === r.cpu);
        const x0 = Math.ceil(await xOf(page, first.t)) + 2;
        const x1 = Math.floor(await xOf(page, end)) - 2;
        const y = Math.round(await yOf(page, r.id, 'bar'));
        const painted = await page.evaluate(
          ([a, b, yy]) => {
            const c = document.getElementById('timeline');
            const box = c.getBoundingClientRect();
            const dpr = c.width / box.width;
            const d = c.getContext('2d').getImageData(Math.round((a - box.left) * dpr), Math.round((yy - box.top) * dpr), Math.round((b - a) * dpr), 1).data;
            let n = 0;
            for (let i = 0; i < d.length; i += 4) {
              const bg = (d[i] === 255 && d[i + 1] === 255 && d[i + 2] === 255) || (d[i] === 0xf6 && d[i + 1] === 0xf7 && d[i + 2] === 0xf9);
              if (!bg) n++;
            }
            return n / (d.length / 4);
          },
          [x0, x1, y],
        );
        assert(painted > 0.99, `CPU ${r.cpu}: ${(painted * 100).toFixed(1)} % of its bar painted`);
        out.push(`CPU ${r.cpu} ${(painted * 100).toFixed(1)} %`);
      }
      return out.join(', ');
    });
    await shot(page, 'kernel-coarse-index');
    await check(`${tag}: no console error or exception in the page`, () => noErrors(errors));
  } finally {
    await page.close();
    server.stop();
  }
}

// --- The demo trace (libreef): stream/thread rows ---------------------------------------------------

async function demoTrace(browser) {
  const tag = 'demo';
  if (!exists(join(ROOT, DEMO))) {
    await check(`${tag}: ${DEMO} exists (bash scripts/demo.sh)`, () => assert(false, 'missing'));
    return;
  }
  const evs = bt2Events(join(ROOT, DEMO));
  const server = await startServer([DEMO]);
  const { page, errors } = await openPage(browser, server.url);
  try {
    const rows = await rowsOf(page);
    await check(`${tag}: rows are streams or threads, no CPU`, async () => {
      assert(rows.length > 0, 'no rows');
      assert(rows.every((r) => r.kind !== 'cpu'), 'a CPU row');
      return `${rows.length} ${rows[0].kind} rows`;
    });
    await check(`${tag}: the list's first lines are bt2's`, () => compareFirstLines(page, evs, 20));
    await check(`${tag}: the statistics of the whole trace count bt2's events`, async () => {
      const text = await page.evaluate(() => document.querySelector('#stats .stats-events')?.textContent ?? '');
      assertEq(text, `events: ${evs.length.toLocaleString('en-US')}`, 'statistics');
    });
    await shot(page, 'demo-overview');
    await check(`${tag}: a mark's tooltip is bt2's line`, async () => {
      // An event alone at its time among the first lines; its row is the
      // one the list gives. At 1 ns buckets its mark is its own.
      const lines = await listLines(page);
      const k = lines.findIndex((l, i) => i > 0 && lines.filter((m) => m.t === l.t).length === 1);
      assert(k > 0, 'no event alone at its time');
      const ev = evs[lines[k].index];
      assert(sameLine(lines[k].text, ev.line), 'list line');
      await setView(page, ev.t - 400, ev.t + 400);
      assertEq((await page.evaluate(() => window.reefView.level())).res, 1, 'resolution');
      return checkBucketMark(page, lines[k].row, [ev], ev);
    });
    await shot(page, 'demo-mark-tooltip');
    await check(`${tag}: no console error or exception in the page`, () => noErrors(errors));
  } finally {
    await page.close();
    server.stop();
  }
}

// --- A malformed trace: the error, and what was decoded before it --------------------------------------

async function brokenTrace(browser) {
  const tag = 'malformed';
  const dir = mkdtempSync(join(tmpdir(), 'reef-e2e-'));
  try {
    const trace = join(dir, 'trace');
    cpSync(join(ROOT, KERNEL), trace, { recursive: true });
    // Garbage in the middle of a stream: an undeclared event id.
    const victim = join(trace, 'channel0_1');
    chmodSync(victim, 0o644);
    const fd = openSync(victim, 'r+');
    writeSync(fd, Buffer.alloc(256, 0xff), 0, 256, Math.floor(statSync(victim).size / 2));
    closeSync(fd);
    const server = await startServer([trace]);
    const { page, errors } = await openPage(browser, server.url);
    try {
      await check(`${tag}: the error is shown, and the events decoded before it are listed`, async () => {
        const info = await page.evaluate(() => window.reefView.info());
        assertEq(info.state, 'error', 'state');
        const shown = await page.evaluate(() => {
          const e = document.getElementById('error');
          return e.hidden ? null : document.getElementById('error-text').textContent;
        });
        assertEq(shown, info.error, 'the error banner');
        assert((await listTotal(page)) > 0, 'no events listed');
        const full = bt2Events(join(ROOT, KERNEL));
        const lines = await listLines(page);
        assert(sameLine(lines[0].text, full[0].line), `first line ${lines[0].text}`);
        return info.error;
      });
      await shot(page, 'malformed');
      // The failed request the error banner reports is not a page error.
      await check(`${tag}: no console error or exception in the page`, () => noErrors(errors));
    } finally {
      await page.close();
      server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// --- Main ---------------------------------------------------------------------------------------------

await runSuites(kernelTrace, unevenTrace, coarseIndex, demoTrace, brokenTrace);
