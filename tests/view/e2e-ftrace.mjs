// End-to-end test of `reef view` on a trace-cmd .dat file in headless
// Chromium: CPU rows, the thread a CPU bar shows, thread rows and their
// states, wakeup arrows. The oracle is babeltrace2's text of the file's
// `reef convert` copy (identical to `reef print FILE.dat`, which
// tests/kernel checks), read with ftrace's field names (`next_pid`, `pid`).
//
//   node tests/view/e2e-ftrace.mjs FILE.dat CONVERTED-DIR
//
// Run by tests/kernel (which records the file). The binary under test is
// $REEF_BIN (default: target/release/reef). Screenshots:
// tests/view/screenshots/ftrace-*.png.

import { assert, assertEq, bt2Events, check, openPage, launchBrowser, settle, shot, startServer, summary, tooltipAt } from './e2e-lib.mjs';

const [dat, ctf] = process.argv.slice(2);
if (!dat || !ctf) {
  console.error('usage: node tests/view/e2e-ftrace.mjs FILE.dat CONVERTED-DIR');
  process.exit(2);
}

const setView = async (page, from, to) => {
  await page.evaluate(([f, t]) => window.reefView.setView(f, t), [from, to]);
  await settle(page);
};
const xOf = (page, t) => page.evaluate((t) => window.reefView.timeToClientX(t), t);
const yOf = (page, row, part) => page.evaluate(([r, p]) => window.reefView.rowClientY(r, p), [row, part]);

const evs = bt2Events(ctf);
const browser = await launchBrowser();
const server = await startServer([dat]);
try {
  const { page, errors } = await openPage(browser, server.url);
  const rows = await page.evaluate(() => window.reefView.allRows());
  const cpuRow = new Map(rows.filter((r) => r.kind === 'cpu').map((r) => [r.cpu, r.id]));
  await shot(page, 'ftrace-overview');

  await check('ftrace: CPU rows are the recording\'s CPUs', () => {
    const want = [...new Set(evs.map((e) => e.cpu))].sort((a, b) => a - b);
    assertEq(JSON.stringify([...cpuRow.keys()].sort((a, b) => a - b)), JSON.stringify(want), 'cpus');
    return want.join(',');
  });

  const workers = new Map();
  for (const e of evs) {
    if (e.name === 'sched_switch' && /^"wl-(spinner|spin30|sleeper)"$/.test(e.fields.next_comm)) {
      workers.set(Number(e.fields.next_pid), JSON.parse(e.fields.next_comm));
    }
  }
  await check('ftrace: a thread row per workload thread, named by its sched_switch', () => {
    assertEq(workers.size, 3, 'workload threads in the oracle');
    for (const [tid, name] of workers) {
      const r = rows.find((x) => x.kind === 'thread' && x.tid === tid);
      assert(r, `no thread row for ${name} (${tid})`);
      assert(r.label.includes(name), `thread row ${tid}: label ${JSON.stringify(r.label)}, ${name} expected`);
    }
    return [...workers.values()].join(', ');
  });

  // A span on a CPU between two switches: the thread switched in.
  let span = null;
  for (const cpu of cpuRow.keys()) {
    const sw = evs.filter((e) => e.name === 'sched_switch' && e.cpu === cpu);
    for (let i = 0; i + 1 < sw.length && !span; i++) {
      const tid = Number(sw[i].fields.next_pid);
      if (workers.has(tid) && Number(sw[i + 1].fields.prev_pid) === tid && sw[i + 1].t - sw[i].t > 200000) {
        span = { cpu, tid, from: sw[i].t, to: sw[i + 1].t };
      }
    }
  }
  await check('ftrace: a CPU bar shows the thread ftrace switched in, and its row says running', async () => {
    assert(span, 'no span of a workload thread between two switches');
    const d = span.to - span.from;
    await page.click('#toggle-arrows'); // (arrows over the bar would take the tooltip)
    await setView(page, span.from - d / 2, span.to + d / 2);
    const T = span.from + Math.floor(d / 2);
    const tip = await tooltipAt(page, await xOf(page, T), await yOf(page, cpuRow.get(span.cpu), 'bar'));
    assert((tip.cells.thread ?? '').endsWith(`(${span.tid})`), `CPU ${span.cpu} bar: ${tip.text}`);
    const trow = rows.find((x) => x.kind === 'thread' && x.tid === span.tid).id;
    const t2 = await tooltipAt(page, await xOf(page, T), await yOf(page, trow, 'bar'));
    assert(/running|user|syscall/i.test(t2.text), `thread row of ${span.tid} at ${T}: ${t2.text}`);
    await shot(page, 'ftrace-span');
    await page.click('#toggle-arrows');
    await settle(page);
    return `CPU ${span.cpu}: ${tip.cells.thread}; thread row: ${t2.cells.state ?? t2.text.slice(0, 60)}`;
  });

  await check('ftrace: the sleeper\'s wakeup is drawn as an arrow (its latest wakeup to its switch in)', async () => {
    const sleeper = [...workers].find(([, n]) => n === 'wl-sleeper')[0];
    // The latest wakeup (sched_waking or sched_wakeup) before a switch in.
    let pair = null;
    let last = null;
    for (const e of evs) {
      if (/^sched_wak(ing|eup)$/.test(e.name) && Number(e.fields.pid) === sleeper) last = e;
      if (e.name === 'sched_switch' && Number(e.fields.next_pid) === sleeper) {
        if (last) {
          pair = { w: last, s: e };
          break;
        }
      }
    }
    assert(pair, 'no wakeup of the sleeper in the oracle');
    const d = Math.max(pair.s.t - pair.w.t, 1000);
    await setView(page, pair.w.t - d, pair.s.t + d);
    const arrows = await page.evaluate(() => window.reefView.arrows());
    const a = arrows.find((x) => x.tid === sleeper && x.to_t === pair.s.t);
    assert(a, `no arrow for ${sleeper} switched in at ${pair.s.t}: ${JSON.stringify(arrows.slice(0, 4))}`);
    assertEq(a.from_t, pair.w.t, 'wakeup time');
    await shot(page, 'ftrace-arrow');
    return `latency ${pair.s.t - pair.w.t} ns`;
  });

  await check('ftrace: no page errors', () => {
    assert(errors.length === 0, errors.slice(0, 5).join(' | '));
  });
} finally {
  server.stop();
  await browser.close();
}
process.exit(summary() ? 0 : 1);
