// End-to-end tests of `reef view`'s profiles in headless Chromium, on
// traces recorded here (tests/view/profile/record.sh): a libreef trace
// sampled at 1 kHz with two threads (tests/profile/tenfunc.c's ten
// functions on the main one, side_burn() on the other) and a
// -finstrument-functions one (tests/profile/calls.c).
//
// - Samples are ticks in a lane of their own on their thread's row: per
//   row, the ticks' counts add up to babeltrace2's `reef:sample` events of
//   that row's `tid`, over the whole trace and zoomed in (where each tick
//   is a few samples at most); the lane's pixels are drawn.
// - The Profile tab over a selected range: the frames drawn are the call
//   tree /api/profile gives for that range (names, each frame's width its
//   share of the whole within half a pixel), whose numbers tests/view/api/
//   profile.py compares with `reef profile --folded`; one row chosen: its
//   thread's functions only; hover shows name, total and share; a click
//   makes a frame fill the width.
// - The entry/exit trace: main, a, b, c with widths from function time.
//
//   node tests/view/e2e-profile.mjs [SUITE-NAME-SUBSTRING...]   (from the repository; records the traces)
//
// The binary under test is $REEF_BIN (default: target/release/reef). The
// suites: sampled, calls; with arguments, only those whose name contains
// one of them run.
//
// Needs what tests/view/e2e.mjs needs and a C compiler. One line per
// check; exit status 0 only if every check passed. Screenshots:
// tests/view/screenshots/profile-*.png.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REEF, ROOT, assert, assertEq, check, openPage, runSuites, settle, shot, startServer } from './e2e-lib.mjs';

const WORK = mkdtempSync(join(tmpdir(), 'reef-e2e-profile-'));
execFileSync('bash', [join(ROOT, 'tests/view/profile/record.sh'), WORK, '2'], {
  env: { ...process.env, REEF_BIN: REEF },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const SAMPLED = join(WORK, 'sampled');
const CALLS = join(WORK, 'calls');

/** babeltrace2's samples: ns from the first event and the `tid` context. */
function bt2Samples(trace) {
  const out = execFileSync('babeltrace2', ['--clock-seconds', trace], { maxBuffer: 1 << 28 }).toString();
  let first = null;
  const samples = [];
  for (const line of out.split('\n')) {
    const m = /^\[(\d+)\.(\d{9})\] \S+ \S+ (\S+): \{ tid = (\d+)/.exec(line);
    if (!m) continue;
    const ns = BigInt(m[1]) * 1000000000n + BigInt(m[2]);
    if (first === null) first = ns;
    if (m[3] === 'reef:sample') samples.push({ t: Number(ns - first), tid: Number(m[4]) });
  }
  return samples;
}

async function api(page, path) {
  return page.evaluate(async (p) => {
    const r = await fetch(p);
    return r.json();
  }, path);
}

/** Row id → tid, from each row's first event (its `tid` context). */
async function rowTids(page, end) {
  const out = new Map();
  for (const row of await page.evaluate(() => window.reefView.allRows())) {
    const ev = await api(page, `api/event?row=${row.id}&from=0&to=${end + 1}`);
    const m = /\{ tid = (\d+)/.exec(ev.line ?? '');
    if (m) out.set(row.id, Number(m[1]));
  }
  return out;
}

/** Per row, the sample ticks drawn now: their count. */
async function tickCounts(page) {
  const ticks = await page.evaluate(() => window.reefView.sampleTicks());
  const out = new Map();
  for (const t of ticks) out.set(t.row, (out.get(t.row) ?? 0) + t.count);
  return { ticks, out };
}

/** Every frame of an answer's tree with its path (the root's left out). */
function treeFrames(root) {
  const out = [];
  const walk = (n, path) => {
    for (const c of n.children) {
      const p = [...path, c.name];
      out.push({ path: p.join(';'), total: c.total, self: c.self });
      walk(c, p);
    }
  };
  walk(root, []);
  return out;
}

/** The drawn frames against the answer: same frames (those wide enough), widths as shares. */
function compareFrames(drawn, answer) {
  const root = drawn.find((f) => f.path.length === 0);
  assert(root, 'no root frame drawn');
  const want = new Map(treeFrames(answer.root).map((f) => [f.path, f]));
  const seen = new Set();
  for (const f of drawn) {
    if (!f.path.length) continue;
    const key = f.path.join(';');
    const w = want.get(key);
    assert(w, `drawn frame ${key} is not in the answer`);
    assertEq(f.total, w.total, `${key}: total`);
    const expect = (root.w * w.total) / answer.total;
    assert(Math.abs(f.w - expect) <= 0.5, `${key}: width ${f.w.toFixed(2)} px, expected ${expect.toFixed(2)} (share ${w.total}/${answer.total})`);
    seen.add(key);
  }
  for (const [key, w] of want) {
    if ((root.w * w.total) / answer.total >= 1) assert(seen.has(key), `${key} (${w.total}) not drawn`);
  }
  return seen.size;
}

async function sampled(browser) {
  const server = await startServer([SAMPLED]);
  const { page, errors } = await openPage(browser, server.url);
  try {
    const info = await page.evaluate(() => window.reefView.info());
    const bt = bt2Samples(SAMPLED);
    const tids = await rowTids(page, info.end);
    await check('rows: one per thread, each with a tid', () => {
      assertEq(tids.size, 2, 'rows with a tid');
      assertEq(new Set(tids.values()).size, 2, 'distinct tids');
    });
    await check('sample ticks per row over the whole trace = babeltrace2 reef:sample of its tid', async () => {
      await settle(page, 60000);
      const { out } = await tickCounts(page);
      for (const [row, tid] of tids) {
        assertEq(out.get(row) ?? 0, bt.filter((s) => s.tid === tid).length, `row ${row} (tid ${tid})`);
      }
      return [...tids].map(([r, t]) => `row ${r}: ${out.get(r)}`).join(', ');
    });
    await check('the sample lane is drawn where the ticks are', async () => {
      const { ticks } = await tickCounts(page);
      const row = [...tids.keys()][0];
      const y = await page.evaluate((id) => window.reefView.rowClientY(id, 'sample'), row);
      const xs = ticks.filter((t) => t.row === row).slice(0, 20).map((t) => t.x);
      assert(xs.length > 0, 'no tick');
      const dark = await page.evaluate(
        ({ xs, y }) => {
          const c = document.getElementById('timeline');
          const r = c.getBoundingClientRect();
          const dpr = window.devicePixelRatio || 1;
          const ctx = c.getContext('2d');
          return xs.map((x) => {
            // The lane's lowest pixels: ticks grow from the bottom.
            const d = ctx.getImageData(Math.round((x - r.left) * dpr), Math.round((y + 2 - r.top) * dpr), 1, 1).data;
            return d[0] + d[1] + d[2] < 600;
          });
        },
        { xs, y },
      );
      assert(dark.every(Boolean), `pixels under ticks: ${dark}`);
    });
    await shot(page, 'profile-timeline');
    // Zoomed in: a few samples per tick at most, counts still exact.
    const mid = Math.floor(info.end / 2);
    await page.evaluate(([a, b]) => window.reefView.setView(a, b), [mid, mid + 20_000_000]);
    await settle(page, 60000);
    await check('zoomed to 20 ms: ticks per row = babeltrace2 samples in the view', async () => {
      const { k, res } = await page.evaluate(() => window.reefView.level());
      const v = await page.evaluate(() => window.reefView.view());
      const lo = Math.floor(v.from / res) * res;
      const hi = Math.ceil(v.to / res) * res;
      const { ticks, out } = await tickCounts(page);
      for (const [row, tid] of tids) {
        const want = bt.filter((s) => s.tid === tid && s.t >= lo && s.t < hi).length;
        assertEq(out.get(row) ?? 0, want, `row ${row} (tid ${tid})`);
      }
      const most = Math.max(...ticks.map((t) => t.count));
      assert(most <= 3, `a tick holds ${most} samples`);
      return `k=${k}, ${ticks.length} ticks`;
    });
    await shot(page, 'profile-timeline-zoomed');
    await page.evaluate(() => window.reefView.setView(0, window.reefView.info().end + 1));
    // A range selected, the Profile tab.
    const from = Math.floor(info.end * 0.2);
    const to = Math.floor(info.end * 0.8);
    await page.evaluate(([a, b]) => window.reefView.setRange(a, b), [from, to]);
    await page.evaluate(() => window.reefView.showTab('profile'));
    await settle(page, 60000);
    const whole = await api(page, `api/profile?from=${from}&to=${to}`);
    await check('Profile tab: the frames drawn are /api/profile of the selection, widths as shares', async () => {
      const shown = await page.evaluate(() => window.reefView.flameAnswer());
      assertEq(shown.from, from, 'from');
      assertEq(shown.to, to, 'to');
      assertEq(JSON.stringify(shown.root), JSON.stringify(whole.root), 'the tree');
      const n = compareFrames(await page.evaluate(() => window.reefView.flameFrames()), whole);
      const names = new Set(treeFrames(whole.root).map((f) => f.path.split(';').pop()));
      for (const f of ['f50', 'f20', 'f15', 'side_burn']) assert(names.has(f), `${f} missing`);
      return `${n} frames, ${whole.total} samples`;
    });
    await check('hover: function, total, share', async () => {
      const frames = await page.evaluate(() => window.reefView.flameFrames());
      const f = frames.filter((x) => x.name === 'f50').sort((a, b) => b.w - a.w)[0];
      assert(f, 'no f50 frame');
      await page.mouse.move(f.x + f.w / 2, f.y + 9);
      const tip = await page.evaluate(() => {
        const t = document.getElementById('flame-tip');
        return t.hidden ? '' : t.textContent;
      });
      const share = ((100 * f.total) / whole.total).toFixed(2);
      assert(tip.startsWith('f50\n') && tip.includes(`total ${f.total} samples (${share} %)`), `tooltip: ${JSON.stringify(tip)}`);
      await shot(page, 'profile-flame');
      return tip.replace(/\n/g, ' | ');
    });
    await check('click: the frame fills the width', async () => {
      const frames = await page.evaluate(() => window.reefView.flameFrames());
      const f = frames.find((x) => x.name === 'main');
      assert(f, 'no main frame');
      await page.mouse.click(f.x + f.w / 2, f.y + 9);
      const after = await page.evaluate(() => window.reefView.flameFrames());
      const root = after.find((x) => x.path.length === 0);
      const m = after.find((x) => x.path.join(';') === f.path.join(';') && x.depth === f.depth);
      assert(m && Math.abs(m.w - root.w) < 0.01, `main: ${m?.w} of ${root.w}`);
      const f50 = after.find((x) => x.name === 'f50' && x.depth === f.depth + 1);
      assert(f50, 'no f50 under main');
      const mainTotal = f.total;
      assert(Math.abs(f50.w - (root.w * f50.total) / mainTotal) <= 0.5, `f50 width ${f50.w} vs ${(root.w * f50.total) / mainTotal}`);
      await shot(page, 'profile-flame-zoomed');
    });
    await check('one row: its thread only (side_burn), as /api/profile?row=', async () => {
      let row = null;
      for (const id of tids.keys()) {
        const a = await api(page, `api/profile?from=${from}&to=${to}&row=${id}`);
        if (treeFrames(a.root).some((f) => f.path.endsWith('side_burn'))) row = id;
      }
      assert(row !== null, 'no row with side_burn');
      await page.evaluate((id) => window.reefView.profileRow(id), row);
      await settle(page, 60000);
      const a = await api(page, `api/profile?from=${from}&to=${to}&row=${row}`);
      const drawn = await page.evaluate(() => window.reefView.flameFrames());
      compareFrames(drawn, a);
      // The thread loops in side() calling side_burn(): a sample may land
      // in side() itself, never in the main thread's functions.
      const selfs = treeFrames(a.root).filter((f) => f.self > 0);
      const leaves = new Set(selfs.map((f) => f.path.split(';').pop()));
      assert([...leaves].every((f) => f === 'side_burn' || f === 'side'), `leaves ${[...leaves]}`);
      const burn = selfs.filter((f) => f.path.endsWith('side_burn')).reduce((n, f) => n + f.self, 0);
      assert(burn >= 0.99 * a.total, `side_burn ${burn} of ${a.total}`);
      assert(!drawn.some((f) => f.name === 'f50'), 'f50 drawn for the side thread');
      await shot(page, 'profile-flame-row');
      return `${a.total} samples`;
    });
    await check('no console error or exception in the page', () => assertEq(errors.join('\n'), '', 'errors'));
  } finally {
    await page.close();
    server.stop();
  }
}

async function calls(browser) {
  const server = await startServer([CALLS]);
  const { page, errors } = await openPage(browser, server.url);
  try {
    await page.evaluate(() => window.reefView.showTab('profile'));
    await settle(page, 60000);
    await check('entry/exit trace: function time, frames main > a > b, c as /api/profile', async () => {
      const shown = await page.evaluate(() => window.reefView.flameAnswer());
      assertEq(shown.measure, 'time', 'measure');
      const v = await page.evaluate(() => window.reefView.view());
      const a = await api(page, `api/profile?from=${shown.from}&to=${shown.to}`);
      assertEq(shown.from, Math.max(0, Math.floor(v.from)), 'the visible range');
      const n = compareFrames(await page.evaluate(() => window.reefView.flameFrames()), a);
      const paths = treeFrames(a.root).map((f) => f.path).sort().join(' ');
      assertEq(paths, 'main main;a main;a;b main;a;c main;c', 'paths');
      await shot(page, 'profile-calls');
      return `${n} frames, ${a.total} ns`;
    });
    await check('entry/exit: no console error or exception in the page', () => assertEq(errors.join('\n'), '', 'errors'));
  } finally {
    await page.close();
    server.stop();
  }
}

// runSuites exits the process.
process.on('exit', () => rmSync(WORK, { recursive: true, force: true }));
await runSuites(sampled, calls);
