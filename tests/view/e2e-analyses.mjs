// End-to-end tests of `reef view`'s Analyses tab in headless Chromium: on
// the shared kernel traces, every table the page shows equals the one
// lttng-analyses 0.6.1 computed (tests/analyses/references/, made by
// tests/analyses/make-references.sh): titles, column titles, and every
// cell, shown rounded and exact in its tooltip. Over the whole trace for
// the six analyses, and over a selected range for the three that have a
// reference for one.
//
//   node tests/view/e2e-analyses.mjs [SUITE-NAME-SUBSTRING...]   (from the repository; builds nothing)
//
// The binary under test is $REEF_BIN (default: target/release/reef). The
// suites: kernelTrace bug446190, kernelTrace uneven-streams, demoTrace;
// with arguments, only those whose name contains one of them run.
//
// Needs what tests/view/e2e.mjs needs. One line per check; exit status 0
// only if every check passed. Screenshots: tests/view/screenshots/.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, assert, assertEq, bt2Events, check, named, openPage, runSuites, settle, shot, startServer } from './e2e-lib.mjs';

const TRACES = '../shared/conformance/kernel-traces';
const REFS = join(ROOT, 'tests/analyses/references');
const ref = (name) => JSON.parse(readFileSync(join(REFS, name), 'utf8'));

// The page's analyses, the reference options they were made with, and
// how the page is set to match them.
const ANALYSES = [
  { name: 'cputop', limit: 10 },
  { name: 'syscallstats' },
  { name: 'irqstats' },
  { name: 'schedstats', groups: true },
  { name: 'iolatency' },
  { name: 'memtop', limit: 10 },
];
// bug446190's range reference (make-references.sh): LAMI's --begin/--end.
const RANGE = { begin: 1412670963000000000n, end: 1412670965000000000n };
const RANGE_ANALYSES = [{ name: 'cputop', limit: 0 }, { name: 'syscallstats' }, { name: 'schedstats', groups: true }];

/** What the page should show for a reference cell (the display's rules, applied to lttng-analyses' values). */
function shown(c) {
  switch (c.class) {
    case 'duration':
      return (c.value / 1e3).toFixed(3);
    case 'ratio':
      return `${(c.value * 100).toFixed(2)} %`;
    case 'number':
      return String(c.value);
    case 'string':
      return String(c.value);
    case 'process':
      return `${c.name} (${c.tid ?? c.pid})`;
    case 'cpu':
      return `CPU ${c.id}`;
    case 'syscall':
      return c.name;
    case 'irq':
      return `${c.hard ? '' : 'softirq '}${c.nr}${c.name ? ` <${c.name}>` : ''}`;
    case 'unknown':
      return '?';
    default:
      return JSON.stringify(c);
  }
}

/** The value a cell's tooltip gives exactly (numbers), or null. */
function exactOf(c) {
  return ['duration', 'ratio', 'number'].includes(c.class) ? c.value : null;
}

/** The reference's tables: { title, columns, rows } with the metadata's titles. */
function refTables(results, metadata) {
  const classes = metadata['table-classes'];
  return results.results.map((t) => {
    const name = typeof t.class === 'string' ? t.class : t.class.inherit;
    const title = typeof t.class === 'string' ? classes[name].title : t.class.title;
    return { title, columns: classes[name]['column-descriptions'], rows: t.data };
  });
}

/** The tables on the page: title (without the row count), column titles, cells' text and tooltips. */
function pageTables(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('#an-tables .an-table')].map((s) => ({
      title: s.querySelector('h3').textContent.replace(/ — \d+ rows?$/, ''),
      columns: [...s.querySelectorAll('thead th')].map((th) => th.textContent),
      rows: [...s.querySelectorAll('tbody tr')].map((tr) => [...tr.cells].map((td) => ({ text: td.textContent, exact: td.title }))),
    })),
  );
}

/** Column titles as the page writes them: durations in µs. */
function columnTitle(c) {
  return c.class === 'duration' ? `${c.title} (µs)` : c.title;
}

function compareTables(got, want) {
  assertEq(JSON.stringify(got.map((t) => t.title)), JSON.stringify(want.map((t) => t.title)), 'table titles');
  let cells = 0;
  want.forEach((w, i) => {
    const g = got[i];
    assertEq(JSON.stringify(g.columns), JSON.stringify(w.columns.map(columnTitle)), `${w.title}: column titles`);
    assertEq(g.rows.length, w.rows.length, `${w.title}: rows`);
    w.rows.forEach((row, r) => {
      row.forEach((c, k) => {
        const cell = g.rows[r][k];
        assertEq(cell.text, shown(c), `${w.title}: row ${r}, column ${k} (${w.columns[k].title})`);
        const x = exactOf(c);
        if (x !== null) {
          const v = Number(cell.exact.split(' ')[0]);
          assert(Math.abs(v - x) <= 1e-9 * Math.max(Math.abs(x), 1e-300), `${w.title}: row ${r}, column ${k}: tooltip ${cell.exact}, lttng-analyses ${x}`);
        }
        cells++;
      });
    });
  });
  assert(cells > 0, 'no cell compared');
  return cells;
}

/** Chooses an analysis and its options on the page, then waits for its tables. */
async function runAnalysis(page, a) {
  await page.selectOption('#an-name', a.name);
  if (a.limit !== undefined) await page.fill('#an-limit', String(a.limit));
  if (a.groups) for (const id of ['#an-total', '#an-per-tid', '#an-per-prio']) await page.check(id);
  await page.click('#an-run');
  await settle(page, 60000);
  const err = await page.evaluate(() => document.querySelector('#an-tables .an-error')?.textContent ?? null);
  assert(err === null, `the page says: ${err}`);
}

async function kernelTrace(browser, trace) {
  const server = await startServer([join(TRACES, trace)]);
  const { page, errors } = await openPage(browser, server.url);
  try {
    await page.click('#tab-analyses');
    await settle(page, 60000);
    const end = await page.evaluate(() => window.reefView.info().end);
    await check(`${trace}: the Analyses tab covers the whole trace at first`, async () => {
      const v = await page.evaluate(() => window.reefView.view());
      assert(v.from <= 0 && v.to > end, `visible range ${JSON.stringify(v)}, trace [0, ${end}]`);
      const status = await page.textContent('#an-status');
      assert(/^over the visible range /.test(status), `status: ${status}`);
    });
    for (const a of ANALYSES) {
      const file = `${trace}.${a.name}.json`;
      await check(`${trace}: ${a.name}'s tables on the page are lttng-analyses' (${file})`, async () => {
        await runAnalysis(page, a);
        const want = refTables(ref(file), ref(`${a.name}.metadata.json`));
        if (!want.length) {
          // lttng-analyses found nothing to count: nor does the page.
          assertEq(JSON.stringify(await pageTables(page)), '[]', 'tables');
          assertEq(await page.textContent('#an-tables'), 'Nothing in this range.', 'text');
          return 'no table';
        }
        return `${compareTables(await pageTables(page), want)} cells`;
      });
      if (trace === 'bug446190' && (a.name === 'cputop' || a.name === 'schedstats')) await shot(page, `analyses-${a.name}`);
    }
    if (trace === 'bug446190') {
      const origin = BigInt(await page.evaluate(() => window.reefView.info().origin_ns));
      const from = Number(RANGE.begin - origin);
      const to = Number(RANGE.end - origin) + 1;
      await page.evaluate(([f, t]) => window.reefView.setRange(f, t), [from, to]);
      await settle(page, 60000);
      for (const a of RANGE_ANALYSES) {
        const file = `${trace}-range.${a.name}.json`;
        await check(`${trace}: ${a.name} over a selected range is lttng-analyses' with --begin/--end (${file})`, async () => {
          await runAnalysis(page, a);
          const status = await page.textContent('#an-status');
          assert(/^over the selection /.test(status), `status: ${status}`);
          const n = compareTables(await pageTables(page), refTables(ref(file), ref(`${a.name}.metadata.json`)));
          return `${n} cells`;
        });
      }
      await check(`${trace}: a click on a column's title sorts the rows by it, again the other way`, async () => {
        const col = 3; // schedstats per-TID: the average latency
        const values = () =>
          page.evaluate(
            (c) =>
              [...document.querySelectorAll('#an-tables .an-table')][1]
                .querySelectorAll('tbody tr')
                .values()
                .map((tr) => Number(tr.cells[c].title.split(' ')[0]))
                .toArray(),
            col,
          );
        const title = await page.evaluate(() => [...document.querySelectorAll('#an-tables .an-table')][1].querySelector('h3').textContent);
        assert(/per-TID/.test(title), `second table: ${title}`);
        const th = page.locator('#an-tables .an-table').nth(1).locator('thead th').nth(col);
        await th.click();
        const down = await values();
        assert(down.length > 2, 'rows');
        assert(down.every((v, i) => i === 0 || v <= down[i - 1]), `not descending: ${down}`);
        await th.click();
        const up = await values();
        assert(up.every((v, i) => i === 0 || v >= up[i - 1]), `not ascending: ${up}`);
        assertEq(JSON.stringify([...up].sort((x, y) => x - y)), JSON.stringify([...down].sort((x, y) => x - y)), 'the same rows');
      });
      await shot(page, 'analyses-range-sorted');
    }
    if (trace === 'bug446190') await latency(page);
    await usage(page, trace);
    await check(`${trace}: no console error or exception in the page`, () => assertEq(errors.join('\n'), '', 'errors'));
  } finally {
    await page.close();
    server.stop();
  }
}

/** A duration as the page writes it (`381 ns`, `1.234 µs`, `5.000001 ms`, `2.000000003 s`), in ns. */
function durationNs(s) {
  const m = /^(\d+)(?:\.(\d+))? (ns|µs|ms|s)$/.exec(s ?? '');
  assert(m, `not a duration: ${s}`);
  const digits = { ns: 0, µs: 3, ms: 6, s: 9 }[m[3]];
  return Number(m[1]) * 10 ** digits + Number((m[2] ?? '').padEnd(digits, '0') || '0');
}

/** The latency view's statistics line, matched: [, count, min, max]. */
async function latencyStats(page) {
  const text = await page.textContent('#an-lat-stats');
  const m = /^([\d,]+) in range · min (.+?) · avg .+? · max (.+?) · stdev/.exec(text);
  assert(m, `stats: ${text}`);
  return m;
}

/**
 * The IRQ latency view over the whole trace against lttng-analyses' own
 * outputs for the same period definition (tests/periods/lttng-analyses/:
 * lttng-periodstats, -freq, -top); the softirq view against
 * lttng-irqstats' softirq table.
 */
async function latency(page) {
  const lt = (k) =>
    JSON.parse(readFileSync(join(ROOT, `tests/periods/lttng-analyses/irq.${k}.json`), 'utf8').replace(/(?<![\d.])(\d{16,})(?![\d.])/g, '"$1"'));
  const [stats, freq, top] = [lt('stats'), lt('freq'), lt('top')];
  await page.evaluate(() => window.reefView.setView(0, window.reefView.info().end + 1));
  await page.evaluate(() => document.querySelector('#clear-selection').click());
  await settle(page, 60000);
  await page.selectOption('#an-name', 'irq-latency');
  await settle(page, 60000);
  const origin = BigInt(await page.evaluate(() => window.reefView.info().origin_ns));
  await check("bug446190: the IRQ latency view's definition is lttng-analyses' and its numbers lttng-periodstats'", async () => {
    assertEq(await page.getAttribute('#an-lat-def', 'title'), stats.period, 'definition');
    const [, count, min, , max] = stats.rows[0];
    const m = await latencyStats(page);
    assertEq(Number(m[1].replace(/,/g, '')), count, 'count');
    assertEq(durationNs(m[2]), min, 'min');
    assertEq(durationNs(m[3]), max, 'max');
    assertEq((await page.evaluate(() => window.reefView.latencyPoints())).length, count, 'points plotted');
  });
  await check("bug446190: the IRQ latency histogram is lttng-periodfreq's", async () => {
    const bars = await page.evaluate(() => [...document.querySelectorAll('#an-hist .act-bar')].map((b) => Number(b.dataset.count)));
    assertEq(JSON.stringify(bars), JSON.stringify(freq.rows.map((r) => r[2])), 'counts');
  });
  await check("bug446190: the highest point is lttng-periodtop's longest IRQ; a click selects it on the timeline", async () => {
    const pts = await page.evaluate(() => window.reefView.latencyPoints());
    const high = pts.reduce((a, b) => (b.y < a.y ? b : a));
    const [b, e] = top.rows[0];
    assertEq(JSON.stringify([high.begin, high.end]), JSON.stringify([Number(BigInt(b) - origin), Number(BigInt(e) - origin)]), 'longest');
    await page.mouse.click(high.x, high.y);
    await settle(page, 60000);
    assertEq(JSON.stringify(await page.evaluate(() => window.reefView.range())), JSON.stringify({ from: high.begin, to: high.end + 1 }), 'selection');
  });
  await shot(page, 'analyses-irq-latency');
  await page.evaluate(() => document.querySelector('#clear-selection').click());
  await page.evaluate(() => window.reefView.setView(0, window.reefView.info().end + 1));
  await settle(page, 60000);
  await page.selectOption('#an-name', 'softirq-latency');
  await settle(page, 60000);
  await check("bug446190: the softirq latency view counts what lttng-irqstats' softirq table does (count, min, max)", async () => {
    // lttng-irqstats: per softirq, [irq, count, min, avg, max, stdev]
    const soft = ref('bug446190.irqstats.json').results.find((t) => t.class === 'soft-stats').data;
    const count = soft.reduce((a, r) => a + r[1].value, 0);
    const min = Math.min(...soft.map((r) => r[2].value));
    const max = Math.max(...soft.map((r) => r[4].value));
    const m = await latencyStats(page);
    assertEq(JSON.stringify([Number(m[1].replace(/,/g, '')), durationNs(m[2]), durationNs(m[3])]), JSON.stringify([count, min, max]), 'count, min, max');
    return `${count} softirqs`;
  });
  await page.evaluate(() => window.reefView.setView(0, window.reefView.info().end + 1));
  await settle(page, 60000);
  await page.selectOption('#an-name', 'sched-latency');
  await settle(page, 60000);
  await check("bug446190: the scheduling latency view's points are lttng-schedlog's rows (wakeup, switch-in), its numbers theirs", async () => {
    // lttng-schedlog: [wakeup, switch, latency, prio, cpu, wakee, waker]
    // (times past 2^53 kept as text)
    const rows = JSON.parse(readFileSync(join(REFS, 'bug446190.schedlog.json'), 'utf8').replace(/(?<![\d.])(\d{16,})(?![\d.])/g, '"$1"')).results[0].data;
    const want = rows.map((r) => [Number(BigInt(r[0].value) - origin), Number(BigInt(r[1].value) - origin)]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const pts = await page.evaluate(() => window.reefView.latencyPoints());
    const got = pts.map((p) => [p.begin, p.end]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    assertEq(JSON.stringify(got), JSON.stringify(want), 'points');
    const m = await latencyStats(page);
    const lat = rows.map((r) => Number(r[2].value));
    assertEq(JSON.stringify([Number(m[1].replace(/,/g, '')), durationNs(m[2]), durationNs(m[3])]), JSON.stringify([rows.length, Math.min(...lat), Math.max(...lat)]), 'count, min, max');
    // The highest point is the longest latency; a click selects it.
    const high = pts.reduce((a, b) => (b.y < a.y ? b : a));
    assertEq(high.end - high.begin, Math.max(...lat), 'highest point');
    await page.mouse.click(high.x, high.y);
    await settle(page, 60000);
    assertEq(JSON.stringify(await page.evaluate(() => window.reefView.range())), JSON.stringify({ from: high.begin, to: high.end + 1 }), 'selection');
    return `${rows.length} latencies`;
  });
  await shot(page, 'analyses-sched-latency');
  await page.evaluate(() => document.querySelector('#clear-selection').click());
  await page.evaluate(() => window.reefView.setView(0, window.reefView.info().end + 1));
  await settle(page, 60000);
  await page.selectOption('#an-name', 'io-latency');
  await settle(page, 60000);
  await check("bug446190: the I/O latency view's points are the calls lttng-iolog lists (time ranges), its numbers theirs", async () => {
    // lttng-iolog: [time range, out of range?, duration, syscall, size, process, path, fd]
    const rows = JSON.parse(readFileSync(join(REFS, 'bug446190.iolog.json'), 'utf8').replace(/(?<![\d.])(\d{16,})(?![\d.])/g, '"$1"')).results[0].data;
    const want = rows.map((r) => [Number(BigInt(r[0].begin.value) - origin), Number(BigInt(r[0].end.value) - origin)]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const pts = await page.evaluate(() => window.reefView.latencyPoints());
    const got = pts.map((p) => [p.begin, p.end]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    assertEq(JSON.stringify(got), JSON.stringify(want), 'points');
    const m = await latencyStats(page);
    const d = rows.map((r) => Number(r[2].value));
    assertEq(JSON.stringify([Number(m[1].replace(/,/g, '')), durationNs(m[2]), durationNs(m[3])]), JSON.stringify([rows.length, Math.min(...d), Math.max(...d)]), 'count, min, max');
    return `${rows.length} calls`;
  });
  await shot(page, 'analyses-io-latency');
  await page.selectOption('#an-name', 'syscall-latency');
  await settle(page, 60000);
  await check("bug446190: the system call view counts what lttng-syscallstats' per-thread tables do (count, min, max over all)", async () => {
    // lttng-syscallstats: per thread, per call [syscall, count, min, avg, max, stdev, returns]
    const rows = ref('bug446190.syscallstats.json').results.filter((t) => typeof t.class !== 'string' || t.class === 'per-tid').flatMap((t) => t.data);
    const count = rows.reduce((a, r) => a + r[1].value, 0);
    const min = Math.min(...rows.map((r) => r[2].value));
    const max = Math.max(...rows.map((r) => r[4].value));
    const m = await latencyStats(page);
    assertEq(JSON.stringify([Number(m[1].replace(/,/g, '')), durationNs(m[2]), durationNs(m[3])]), JSON.stringify([count, min, max]), 'count, min, max');
    assertEq((await page.evaluate(() => window.reefView.latencyPoints())).length, count, 'points plotted');
    return `${count} calls`;
  });
}

/**
 * Busy ns of `cpu` in [a, b) from babeltrace2's sched_switch events: the
 * CPU runs `next_tid` from each switch on; idle (tid 0) and before its
 * first switch do not count.
 */
function busy(switches, a, b) {
  let sum = 0;
  for (let i = 0; i < switches.length; i++) {
    const s = switches[i];
    const end = i + 1 < switches.length ? switches[i + 1].t : Infinity;
    if (Number(s.fields.next_tid) > 0) sum += Math.max(0, Math.min(end, b) - Math.max(s.t, a));
  }
  return sum;
}

/** The CPU usage chart: every bucket's busy time per CPU is babeltrace2's, over the whole trace and a part of it. */
async function usage(page, trace) {
  const evs = bt2Events(join(ROOT, TRACES, trace));
  await page.evaluate(() => document.querySelector('#clear-selection').click());
  const end = await page.evaluate(() => window.reefView.info().end);
  for (const [label, from, to] of [
    ['the whole trace', 0, end + 1],
    ['a fifth of it', Math.floor(end * 0.4), Math.floor(end * 0.6)],
  ]) {
    await page.evaluate(([f, t]) => window.reefView.setView(f, t), [from, to]);
    await settle(page, 60000);
    await page.selectOption('#an-name', 'cpu-usage');
    await page.click('#an-run');
    await settle(page, 60000);
    await check(`${trace}: CPU usage over ${label}: each bucket's busy time per CPU is babeltrace2's sched_switch`, async () => {
      const u = await page.evaluate(() => window.reefView.cpuUsage());
      assert(u && u.cpus.length > 0, 'no CPU');
      let buckets = 0;
      for (const c of u.cpus) {
        const sw = evs.filter((e) => e.name === 'sched_switch' && e.cpu === c.cpu);
        c.on.forEach((on, i) => {
          const a = (u.j0 + i) * u.res;
          const want = busy(sw, a, a + u.res);
          assertEq(on, want, `CPU ${c.cpu}, bucket ${u.j0 + i} at res ${u.res}`);
          buckets++;
        });
      }
      const legend = await page.evaluate(() => [...document.querySelectorAll('#an-usage-legend .an-legend-item')].map((e) => Number(e.dataset.busy)));
      const total = u.cpus.reduce((x, c) => x + c.on.reduce((p, q) => p + q, 0), 0);
      assertEq(legend[0], total, 'the total in the legend');
      return `${buckets} buckets of ${u.res} ns`;
    });
    if (trace === 'bug446190' && from > 0) await shot(page, 'analyses-cpu-usage');
  }
}

/** A trace other than a kernel one has no Analyses tab. */
async function demoTrace(browser) {
  const server = await startServer(['examples/build/trace']);
  const { page } = await openPage(browser, server.url);
  try {
    await check('demo: no Analyses tab for a libreef trace', async () => {
      assert(await page.isHidden('#tab-analyses'), 'the tab is shown');
    });
  } finally {
    await page.close();
    server.stop();
  }
}

await runSuites(
  named('kernelTrace bug446190', (b) => kernelTrace(b, 'bug446190')),
  named('kernelTrace uneven-streams', (b) => kernelTrace(b, 'uneven-streams')),
  demoTrace,
);
