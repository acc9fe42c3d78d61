// End-to-end tests of `reef view`'s activities in headless Chromium:
// definitions typed in the side panel (an error shown where it is), kept
// in the URL; the Activities tab's list and counts equal `reef activities
// --log --json`; on screen, an activity whose begin and end events are on
// different threads (babeltrace2's `tid`) is an arrow, the others slices
// on their row (kernel IRQs: the row of the CPU their key names); the
// tooltip, the button that hides arrows, a click in the list.
//
//   node tests/view/e2e-activities.mjs [SUITE-NAME-SUBSTRING...]   (from the repository; builds nothing)
//
// The binary under test is $REEF_BIN (default: target/release/reef). The
// suites: demo, kernel; with arguments, only those whose name contains one
// of them run.
//
// Needs what tests/view/e2e.mjs needs. One line per check; exit status 0
// only if every check passed. Screenshots: tests/view/screenshots/.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENV, REEF, ROOT, assert, assertEq, bt2Events, check, openPage, runSuites, settle, shot, startServer, tooltipAt } from './e2e-lib.mjs';

const DEMO = 'examples/build/trace';
const KERNEL = '../shared/conformance/kernel-traces/bug446190';
const HANDOFF = { begin: '$evt.$name == "lock:RELEASE"', end: '$evt.$name == "lock:ACQUIRE"', key: 'mutex' };
const IRQ = { begin: '$evt.$name == "irq_handler_entry"', end: '$evt.$name == "irq_handler_exit"', key: 'irq,cpu_id' };

/** `reef activities --log --json`: the log, in the order the activities ended. */
function cliLog(trace, d) {
  const args = ['activities', '--begin', d.begin, '--end', d.end, ...(d.key ? ['--key', d.key] : []), '--log', '--stats', '--json', trace];
  const text = execFileSync(REEF, args, { cwd: ROOT, env: ENV, maxBuffer: 1 << 28 }).toString();
  // Times from the Epoch are past 2^53: kept as text, read as BigInts.
  return JSON.parse(text.replace(/"(begin_ns|end_ns)":(-?\d+)/g, '"$1":"$2"'));
}

/** A duration as the page writes it (`381 ns`, `1.234 µs`, `5.000001 ms`, `2.000000003 s`), in ns. */
function durationNs(s) {
  const m = /^(\d+)(?:\.(\d+))? (ns|µs|ms|s)$/.exec(s ?? '');
  assert(m, `not a duration: ${s}`);
  const digits = { ns: 0, µs: 3, ms: 6, s: 9 }[m[3]];
  const frac = (m[2] ?? '').padEnd(digits, '0');
  assertEq(frac.length, digits, `decimals of ${s}`);
  return Number(m[1]) * 10 ** digits + Number(frac || '0');
}

async function define(page, d) {
  await page.fill('#act-begin', d.begin);
  await page.fill('#act-end', d.end);
  await page.fill('#act-key', d.key);
  await page.click('#act-add');
  await settle(page, 60000);
}

/** The Activities tab's list: begin, end (page times), duration and group as shown. */
function listed(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('#act-list tbody tr')].map((tr) => ({
      begin: Number(tr.dataset.begin),
      end: Number(tr.dataset.end),
      duration: tr.cells[2].textContent,
      group: tr.cells[3].textContent,
      rows: tr.cells[4].textContent,
    })),
  );
}

const drawn = (page) => page.evaluate(() => window.reefView.activities());
const setView = async (page, from, to) => {
  await page.evaluate(([f, t]) => window.reefView.setView(f, t), [from, to]);
  await settle(page, 60000);
};

async function demo(browser) {
  const evs = bt2Events(join(ROOT, DEMO));
  const origin = evs[0].ns;
  const server = await startServer([DEMO]);
  let { page, errors } = await openPage(browser, server.url);
  try {
    await check('demo: an error in a definition is shown at its place, in the right field', async () => {
      await define(page, { begin: '$evt.$name == "lock:RELEASE"', end: '$evt.$name ==', key: 'mutex' });
      const err = await page.textContent('#act-error');
      assert(/end condition/.test(err), `error text: ${err}`);
      const caret = await page.textContent('#act-error .expr-caret');
      assertEq(caret.split('\n')[0], '$evt.$name ==', 'the expression shown');
      assertEq(caret.split('\n')[1].length, 13 + 1, 'the caret at the end');
      assertEq(await page.evaluate(() => document.activeElement.id), 'act-end', 'focus');
      assertEq((await drawn(page)).length, 0, 'nothing drawn');
      // The 400 the page was answered is the point of this check.
      const i = errors.findIndex((e) => /status of 400/.test(e));
      if (i >= 0) errors.splice(i, 1);
    });
    const rows0 = await page.evaluate(() => window.reefView.allRows());
    await define(page, HANDOFF);
    const cli = cliLog(DEMO, HANDOFF);
    const log = cli.log
      .map((iv) => ({ begin: Number(BigInt(iv.begin_ns) - origin), end: Number(BigInt(iv.end_ns) - origin), d: iv.duration_ns, group: iv.group }))
      .sort((a, b) => a.begin - b.begin || a.end - b.end);
    await check('demo: the definition is kept in the URL', async () => {
      const hash = decodeURIComponent(await page.evaluate(() => location.hash));
      assert(hash.includes(JSON.stringify([[HANDOFF.begin, HANDOFF.end, HANDOFF.key]])), `hash: ${hash}`);
    });
    await page.click('#tab-activities');
    await settle(page, 60000);
    await check("demo: the Activities tab lists `reef activities --log`'s activities (times, duration, group)", async () => {
      const got = await listed(page);
      const want = log.slice(0, got.length);
      assert(got.length === Math.min(1000, log.length), `${got.length} listed, log ${log.length}`);
      got.forEach((g, i) => {
        const w = want[i];
        assertEq(JSON.stringify([g.begin, g.end, g.duration, g.group]), JSON.stringify([w.begin, w.end, (w.d / 1e3).toFixed(3), w.group]), `line ${i}`);
      });
      const status = await page.textContent('#act-tab-status');
      assert(status.startsWith(`${log.length.toLocaleString('en-US')} overlapping`), `status: ${status}`);
      const stats = await page.textContent('#act-stats');
      assert(stats.includes(`whole trace: ${cli.stats[0].count.toLocaleString('en-US')} ·`), `stats: ${stats}`);
      return `${got.length} lines`;
    });
    await check('demo: longest first', async () => {
      await page.selectOption('#act-sort', 'duration');
      await settle(page, 60000);
      const got = await listed(page);
      const want = [...log].sort((a, b) => b.d - a.d || a.begin - b.begin).slice(0, got.length);
      assertEq(JSON.stringify(got.map((g) => [g.begin, g.end])), JSON.stringify(want.map((w) => [w.begin, w.end])), 'order');
      await page.selectOption('#act-sort', 'begin');
      await settle(page, 60000);
    });
    // A hand-off from one thread to another: bt2's tid of the RELEASE and the ACQUIRE differ.
    const tidAt = (name, t) => evs.find((e) => e.t === t && e.name === name)?.fields.tid;
    const crossing = log.filter((w) => tidAt('lock:RELEASE', w.begin) !== tidAt('lock:ACQUIRE', w.end));
    const a = crossing[Math.floor(crossing.length / 2)];
    await setView(page, a.begin - 2000, a.end + 2000);
    await check('demo: a hand-off between threads (bt2 tids) is an arrow, one within a thread a slice', async () => {
      const shown = await drawn(page);
      const inView = log.filter((w) => w.begin < a.end + 2000 && w.end >= a.begin - 2000);
      assertEq(shown.length, inView.length, 'activities drawn');
      for (const w of inView) {
        const s = shown.find((x) => x.begin === w.begin && x.end === w.end);
        assert(s, `activity [${w.begin}, ${w.end}] not drawn`);
        const across = tidAt('lock:RELEASE', w.begin) !== tidAt('lock:ACQUIRE', w.end);
        assertEq(s.arrow, across, `activity [${w.begin}, ${w.end}] drawn as an arrow`);
      }
      return `${inView.length} in view, ${inView.filter((w) => tidAt('lock:RELEASE', w.begin) !== tidAt('lock:ACQUIRE', w.end)).length} arrows`;
    });
    await shot(page, 'activities-handoff');
    /** The middle of the arrow of activity `a`, in client coordinates (null: not drawn). */
    const mid = async () => {
      const d = (await drawn(page)).find((x) => x.begin === a.begin && x.end === a.end);
      assert(d && d.arrow, 'the arrow is listed');
      return d.at && [(d.at[0] + d.at[2]) / 2, (d.at[1] + d.at[3]) / 2];
    };
    await check("demo: an arrow's tooltip gives the activity's group, duration and rows", async () => {
      const [x, y] = await mid();
      const tip = await tooltipAt(page, x, y);
      assertEq(tip.cells.group, a.group, 'group');
      assertEq(durationNs(tip.cells.duration), a.d, `duration ${tip.cells.duration}`);
      assert(tip.cells.from && tip.cells.to && tip.cells.from !== tip.cells.to, `rows: ${JSON.stringify(tip.cells)}`);
    });
    await check('demo: the Hide messages button hides the arrows, Show messages brings them back', async () => {
      await page.click('#toggle-messages');
      await settle(page);
      assertEq(await mid(), null, 'the arrow while hidden');
      await page.click('#toggle-messages');
      await settle(page);
      assert((await mid()) !== null, 'the arrow is back');
    });
    await check('demo: a click on an activity in the list selects it as the range', async () => {
      const line = page.locator('#act-list tbody tr').first();
      const b = Number(await line.getAttribute('data-begin'));
      const e = Number(await line.getAttribute('data-end'));
      await line.click();
      await settle(page, 60000);
      const r = await page.evaluate(() => window.reefView.range());
      assertEq(JSON.stringify(r), JSON.stringify({ from: b, to: e + 1 }), 'range');
      const v = await page.evaluate(() => window.reefView.view());
      assert(v.from <= b && v.to >= e, `view ${JSON.stringify(v)}`);
    });
    await check('demo: Export PNG saves the timeline as it is on screen', async () => {
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-png')]);
      const path = await download.path();
      const png = readFileSync(path);
      assertEq(png.subarray(1, 4).toString(), 'PNG', 'signature');
      const size = [png.readUInt32BE(16), png.readUInt32BE(20)];
      const canvas = await page.evaluate(() => [document.getElementById('timeline').width, document.getElementById('timeline').height]);
      assertEq(JSON.stringify(size), JSON.stringify(canvas), 'width and height');
      return `${size[0]}×${size[1]}, ${png.length} bytes`;
    });
    // A view to share: a range, a filter, a row hidden.
    const shared = { view: await page.evaluate(() => window.reefView.view()), range: await page.evaluate(() => window.reefView.range()) };
    const filterExpr = '$evt.$name =* "lock:*"';
    await page.fill('#filter-expr', filterExpr);
    await page.click('#filter-apply');
    await settle(page, 60000);
    const hiddenRow = (await page.evaluate(() => window.reefView.allRows())).find((r) => r.kind === 'stream').id;
    await page.evaluate(() => document.querySelectorAll('#filters details').forEach((d) => (d.open = true)));
    await page.locator(`#filters input[type=checkbox][value="${hiddenRow}"]`).first().uncheck();
    await settle(page, 60000);
    shared.filter = await page.evaluate(() => window.reefView.filterId());
    await check('demo: no console error or exception in the page', () => assertEq(errors.join('\n'), '', 'errors'));
    // The same URL in a new page: the definition, the range, the filter come back.
    await page.waitForTimeout(300);
    const url = await page.evaluate(() => location.href);
    await page.close();
    ({ page, errors } = await openPage(browser, url));
    await check('demo: a page opened on that URL has the definition back', async () => {
      await page.waitForFunction(() => window.reefView.activities().length > 0, null, { timeout: 60000 });
      await settle(page, 60000);
      const labels = await page.evaluate(() => [...document.querySelectorAll('#act-defs .act-label')].map((e) => e.textContent));
      assertEq(JSON.stringify(labels), JSON.stringify([`${HANDOFF.begin} → ${HANDOFF.end} [${HANDOFF.key}]`]), 'definitions');
    });
    await check('demo: ... and the visible range, the selection, the filter and the hidden row', async () => {
      const v = await page.evaluate(() => window.reefView.view());
      assertEq(JSON.stringify([Math.floor(v.from), Math.ceil(v.to)]), JSON.stringify([Math.floor(shared.view.from), Math.ceil(shared.view.to)]), 'view');
      assertEq(JSON.stringify(await page.evaluate(() => window.reefView.range())), JSON.stringify(shared.range), 'selection');
      assertEq(await page.inputValue('#filter-expr'), filterExpr, 'filter expression');
      assert((await page.evaluate(() => window.reefView.filterId())) !== null, 'a filter in use');
      assert(!(await page.evaluate(() => window.reefView.rows())).includes(hiddenRow), `row ${hiddenRow} shown`);
      assertEq(JSON.stringify(await page.evaluate(() => window.reefView.allRows().length)), JSON.stringify(rows0.length), 'rows');
    });
    await shot(page, 'activities-shared-link');
  } finally {
    await page.close();
    server.stop();
  }
}

async function kernel(browser) {
  const evs = bt2Events(join(ROOT, KERNEL));
  const origin = evs[0].ns;
  const server = await startServer([KERNEL]);
  const { page, errors } = await openPage(browser, server.url);
  try {
    await define(page, IRQ);
    const log = cliLog(KERNEL, IRQ)
      .log.map((iv) => ({ begin: Number(BigInt(iv.begin_ns) - origin), end: Number(BigInt(iv.end_ns) - origin), group: iv.group }))
      .sort((a, b) => a.begin - b.begin || a.end - b.end);
    const rows = await page.evaluate(() => window.reefView.allRows());
    const cpuRow = new Map(rows.filter((r) => r.kind === 'cpu').map((r) => [r.cpu, r.id]));
    // A busy stretch: the 40 activities from the middle of the log.
    const part = log.slice(Math.floor(log.length / 2), Math.floor(log.length / 2) + 40);
    await setView(page, part[0].begin, part[part.length - 1].end + 1);
    await check("kernel: each IRQ is a slice on the row of the CPU its key names (`reef activities --log`'s group)", async () => {
      const shown = await drawn(page);
      const inView = log.filter((w) => w.begin < part[part.length - 1].end + 1 && w.end >= part[0].begin);
      assertEq(shown.length, inView.length, 'activities drawn');
      for (const w of inView) {
        const s = shown.find((x) => x.begin === w.begin && x.end === w.end && !x.arrow && cpuRow.get(Number(/cpu_id = (\d+)/.exec(w.group)[1])) === x.rows[0]);
        assert(s, `activity ${JSON.stringify(w)}: no slice on its CPU's row`);
      }
      return `${inView.length} slices`;
    });
    await shot(page, 'activities-irq');
    await page.click('#tab-activities');
    await settle(page, 60000);
    await check("kernel: the Activities tab lists `reef activities --log`'s activities in the visible range", async () => {
      const got = await listed(page);
      const v = await page.evaluate(() => window.reefView.view());
      const want = log.filter((w) => w.begin < Math.ceil(v.to) && w.end >= Math.max(0, Math.floor(v.from)));
      assertEq(JSON.stringify(got.map((g) => [g.begin, g.end, g.group])), JSON.stringify(want.map((w) => [w.begin, w.end, w.group])), 'list');
      return `${got.length} lines`;
    });
    // Periods, as lttng-analyses defines them: its own outputs on this trace.
    // (times from the Epoch are past 2^53: read as text, then BigInts)
    const ref = (k) =>
      JSON.parse(readFileSync(join(ROOT, `tests/periods/lttng-analyses/irq.${k}.json`), 'utf8').replace(/(?<![\d.])(\d{16,})(?![\d.])/g, '"$1"'));
    const [stats, freq, top] = [ref('stats'), ref('freq'), ref('top')];
    await page.fill('#per-defs', stats.period);
    await page.click('#per-add');
    await settle(page, 60000);
    await page.evaluate(() => window.reefView.setView(0, window.reefView.info().end + 1));
    await settle(page, 60000);
    await page.selectOption('#act-which', { index: 1 });
    await page.selectOption('#act-sort', 'duration');
    await settle(page, 60000);
    await check("kernel: periods, longest first: lttng-periodtop's", async () => {
      const got = (await listed(page)).slice(0, top.rows.length);
      const want = top.rows.map(([b, e, d, n]) => [Number(BigInt(b) - origin), Number(BigInt(e) - origin), (d / 1e3).toFixed(3), n]);
      assertEq(JSON.stringify(got.map((g) => [g.begin, g.end, g.duration, g.group])), JSON.stringify(want), 'the longest');
    });
    await check("kernel: periods' statistics: lttng-periodstats'", async () => {
      const [name, count, min, , max] = stats.rows[0];
      const text = await page.textContent('#act-stats');
      const m = new RegExp(`whole trace, ${name}: ([\\d,]+) · min (.+?) · avg .+? · max (.+?) · stdev`).exec(text);
      assert(m, `stats: ${text}`);
      assertEq(Number(m[1].replace(/,/g, '')), count, 'count');
      assertEq(durationNs(m[2]), min, 'min');
      assertEq(durationNs(m[3]), max, 'max');
    });
    await check("kernel: periods' histogram over the whole trace: lttng-periodfreq's", async () => {
      const bars = await page.evaluate(() => [...document.querySelectorAll('#act-hist .act-bar')].map((b) => Number(b.dataset.count)));
      assertEq(JSON.stringify(bars), JSON.stringify(freq.rows.map((r) => r[2])), 'counts');
    });
    await shot(page, 'activities-periods');
    await check('kernel: no console error or exception in the page', () => assertEq(errors.join('\n'), '', 'errors'));
  } finally {
    await page.close();
    server.stop();
  }
}

await runSuites(demo, kernel);
