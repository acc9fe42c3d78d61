// End-to-end tests of `reef view --live` in headless Chromium: a libreef
// program streaming with REEF_LISTEN shows in the page as it runs (the
// header says so, follow mode keeps the newest time in view); once it
// ends, the page's event count and rows equal babeltrace2's reading of
// the `-o` directory (count, and events per thread); a connection
// dropped by a proxy between the two is shown, and the reconnection
// resumes; the latency from the trace call to the mark on screen is
// measured (printed, not asserted: bench figures, not a test's).
//
//   node tests/view/e2e-live.mjs [SUITE-NAME-SUBSTRING...]   (from the repository; builds the traced program)
//
// The binary under test is $REEF_BIN (default: target/release/reef). The
// suites: liveSuite, reconnectSuite; with arguments, only those whose name
// contains one of them run.
//
// Needs what tests/view/e2e.mjs needs, and cc. One line per check; exit
// status 0 only if every check passed. Screenshots: tests/view/screenshots/.

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV, REEF, ROOT, assert, assertEq, bt2Events, check, named, runSuites, settle, shot, startServer } from './e2e-lib.mjs';

const WORK = mkdtempSync(join(tmpdir(), 'reef-view-live-'));
process.on('exit', () => rmSync(WORK, { recursive: true, force: true }));

/** Builds tests/live/live.c against libreef and the demo schema. */
function buildProgram() {
  execFileSync('make', ['-s', '-C', join(ROOT, 'examples'), `REEF=${REEF}`, `BUILD=${join(WORK, 'examples')}`], { stdio: 'ignore' });
  const exe = join(WORK, 'live');
  execFileSync('cc', [
    '-std=c11', '-O2', `-I${join(ROOT, 'tracer/include')}`, `-I${join(WORK, 'examples/gen')}`,
    join(ROOT, 'tests/live/live.c'), join(ROOT, 'tracer/libreef.a'), '-lpthread', '-o', exe,
  ]);
  return exe;
}

/**
 * Starts the traced program listening on a free port (it waits for its
 * first client); resolves to { port, ticks (realtime ns per tick), done }.
 */
function startProgram(exe, args) {
  return new Promise((resolveP, reject) => {
    const env = { ...ENV, REEF_LISTEN: '127.0.0.1:0', REEF_LISTEN_WAIT: '30000', REEF_OUTPUT: join(WORK, `unused-${Date.now()}`) };
    const child = spawn(exe, args, { env, cwd: WORK, stdio: ['ignore', 'pipe', 'pipe'] });
    const ticks = [];
    let out = '';
    let err = '';
    const done = new Promise((r) => child.on('exit', (code) => r(code)));
    child.stdout.on('data', (d) => {
      out += d;
      let nl;
      while ((nl = out.indexOf('\n')) >= 0) {
        const m = /^tick (\d+) (\d+)$/.exec(out.slice(0, nl));
        if (m) ticks.push({ i: +m[1], ns: BigInt(m[2]), seenAt: Date.now() });
        out = out.slice(nl + 1);
      }
    });
    child.stderr.on('data', (d) => {
      err += d;
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(err);
      if (m) resolveP({ port: +m[1], ticks, done, kill: () => child.kill('SIGKILL') });
    });
    setTimeout(() => reject(new Error(`the traced program did not listen: ${err}`)), 10000);
  });
}

/** A TCP proxy from a free port to `port`, whose connections can be cut; `listen()` again after `cut()`. */
function proxy(port) {
  const socks = new Set();
  let server = null;
  let local = 0;
  const p = {
    listen: () =>
      new Promise((r) => {
        server = net.createServer((c) => {
          const up = net.connect(port, '127.0.0.1');
          socks.add(c);
          socks.add(up);
          c.pipe(up);
          up.pipe(c);
          const close = () => {
            c.destroy();
            up.destroy();
          };
          c.on('error', close);
          up.on('error', close);
          c.on('close', close);
          up.on('close', close);
        });
        server.listen(local, '127.0.0.1', () => {
          local = server.address().port;
          r(local);
        });
      }),
    /** Closes the listening socket and every connection. */
    cut: () =>
      new Promise((r) => {
        for (const s of socks) s.destroy();
        socks.clear();
        server.close(() => r());
      }),
  };
  return p;
}

async function openLive(browser, url) {
  const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console error: ${m.text()}`);
  });
  await page.goto(url);
  await page.waitForFunction(() => window.reefView && window.reefView.info() && window.reefView.info().live, null, { timeout: 30000 });
  return { page, errors };
}

const liveInfo = (page) => page.evaluate(() => window.reefView.info());

/** Waits until the program ended, the trace was indexed again and the page shows that index. */
async function waitEnded(page) {
  await page.waitForFunction(
    () => {
      const i = window.reefView.info();
      return i.live.state === 'ended' && !i.live.reindexing && i.state === 'ready' && i.epoch >= 1;
    },
    null,
    { timeout: 60000, polling: 50 },
  );
  await settle(page);
}

/** babeltrace2's events of `dir`, counted per thread (`tid` context), sorted. */
function perThread(evs) {
  const m = new Map();
  for (const e of evs) m.set(e.fields.tid, (m.get(e.fields.tid) ?? 0) + 1);
  return [...m.values()].sort((a, b) => a - b);
}

/** The page's exact event counts per row over the whole trace, sorted. */
async function pageCounts(page) {
  const info = await liveInfo(page);
  await page.evaluate((end) => window.reefView.setRange(0, end + 1), info.end);
  await page.waitForFunction(() => window.reefView.rangeCounts() !== null, null, { timeout: 30000 });
  const c = await page.evaluate(() => window.reefView.rangeCounts());
  return Object.values(c)
    .filter((n) => n > 0)
    .sort((a, b) => a - b);
}

/** The ends' on-screen times against each tick's trace call: latencies in ms. */
function latencies(ticks, drawn, originNs) {
  const out = [];
  for (const t of ticks) {
    const d = drawn.find((x) => originNs + BigInt(Math.floor(x.end)) >= t.ns);
    if (d) out.push(d.wall - Number(t.ns / 1000000n));
  }
  return out.sort((a, b) => a - b);
}

async function liveSuite(browser, exe) {
  const prog = await startProgram(exe, ['ticks', '60', '100']);
  const dir = join(WORK, 'received');
  const srv = await startServer(['--live', `127.0.0.1:${prog.port}`, '-o', dir, '--wait', '10']);
  const { page, errors } = await openLive(browser, srv.url);
  try {
    await check('the page shows the trace as it arrives, the header says live', async () => {
      await page.waitForFunction(() => window.reefView.info().events >= 10, null, { timeout: 20000, polling: 50 });
      const i = await liveInfo(page);
      assertEq(i.live.state, 'receiving', 'live state');
      assertEq(i.state, 'building', 'index state');
      const text = await page.evaluate(() => document.getElementById('live').textContent);
      assert(/live from 127\.0\.0\.1:\d+/.test(text), `header: ${text}`);
      const rows = await page.evaluate(() => window.reefView.allRows().length);
      assertEq(rows, 1, 'rows while live');
      // The page is never idle while the trace grows: no settle.
      await page.waitForTimeout(500);
      await shot(page, 'live-receiving');
    });
    await check('follow mode (on when the page opens) keeps the newest time in view as the trace grows', async () => {
      const pressed = await page.evaluate(() => document.getElementById('follow').getAttribute('aria-pressed'));
      assertEq(pressed, 'true', 'Follow button pressed');
      // Zoomed in, then Follow: the span is kept, the view slides.
      const i0 = await liveInfo(page);
      await page.evaluate((t) => window.reefView.setView(t / 4, t / 2), i0.end);
      assertEq(await page.evaluate(() => document.getElementById('follow').getAttribute('aria-pressed')), 'false', 'moving the view stops following');
      await page.click('#follow');
      const span = await page.evaluate(() => window.reefView.view().to - window.reefView.view().from);
      await page.waitForFunction((e) => window.reefView.info().end > e + 3e8, i0.end, { timeout: 10000, polling: 50 });
      await page.waitForTimeout(300);
      const [v, i] = await page.evaluate(() => [window.reefView.view(), window.reefView.info()]);
      assert(Math.abs(v.to - v.from - span) < 2, `span ${v.to - v.from}, was ${span}`);
      // The view follows within a refresh or two.
      assert(v.to >= i0.end + 3e8 && v.to <= i.end + 1, `view ${JSON.stringify(v)}, end ${i.end} (was ${i0.end})`);
    });
    const code = await prog.done;
    await check('the program ended: the page says so', async () => {
      assertEq(code, 0, 'program exit status');
      await waitEnded(page);
      const text = await page.evaluate(() => document.getElementById('live').textContent);
      assert(/program ended/.test(text), `header: ${text}`);
    });
    await check('the page shows what babeltrace2 reads from the -o directory (events, rows, events per row)', async () => {
      const evs = bt2Events(dir);
      assertEq(evs.length, 60, 'babeltrace2 events');
      const i = await liveInfo(page);
      assertEq(i.events, evs.length, 'events on the page');
      const cli = execFileSync(REEF, ['print', dir], { env: ENV }).toString().split('\n').filter((l) => l).length;
      assertEq(cli, evs.length, 'reef print lines');
      assertEq(JSON.stringify(await pageCounts(page)), JSON.stringify(perThread(evs)), 'events per row');
      await shot(page, 'live-ended');
    });
    await check('every tick reached the screen before the program ended; latency measured', async () => {
      const drawn = await page.evaluate(() => window.reefView.drawnEnds());
      const originNs = BigInt((await liveInfo(page)).origin_ns);
      const lat = latencies(prog.ticks, drawn, originNs);
      assert(lat.length >= prog.ticks.length - 1, `${lat.length} of ${prog.ticks.length} ticks drawn`);
      const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
      console.log(`   live latency, trace call to mark on screen (100 ms auto-flush): median ${q(0.5)} ms, p90 ${q(0.9)} ms, max ${lat[lat.length - 1]} ms over ${lat.length} events`);
    });
    await check('no error in the page', () => assertEq(errors.join('\n'), '', 'page errors'));
  } finally {
    srv.stop();
    prog.kill();
    await page.close();
  }
}

async function reconnectSuite(browser, exe) {
  const prog = await startProgram(exe, ['ticks', '50', '100']);
  const px = proxy(prog.port);
  const port = await px.listen();
  const dir = join(WORK, 'reconnected');
  const srv = await startServer(['--live', `127.0.0.1:${port}`, '-o', dir, '--wait', '10']);
  const { page, errors } = await openLive(browser, srv.url);
  try {
    await page.waitForFunction(() => window.reefView.info().events >= 8, null, { timeout: 20000, polling: 50 });
    await px.cut();
    await check('a dropped connection is shown', async () => {
      await page.waitForFunction(() => window.reefView.info().live.state === 'dropped', null, { timeout: 10000, polling: 50 });
      await settle(page);
      const text = await page.evaluate(() => document.getElementById('live').textContent);
      assert(/dropped/.test(text) && /reconnecting/.test(text), `header: ${text}`);
      await shot(page, 'live-dropped');
    });
    const before = (await liveInfo(page)).events;
    await page.waitForTimeout(700);
    await px.listen();
    await check('a reconnection resumes: the trace grows again', async () => {
      await page.waitForFunction(() => window.reefView.info().live.connections === 2, null, { timeout: 10000, polling: 50 });
      await page.waitForFunction((n) => window.reefView.info().events > n + 3, before, { timeout: 20000, polling: 50 });
    });
    await prog.done;
    await check('after the end, the page equals babeltrace2 on the -o directory (both connections)', async () => {
      await waitEnded(page);
      const evs = bt2Events(dir);
      const i = await liveInfo(page);
      assertEq(i.events, evs.length, 'events');
      assert(evs.length < 50 && evs.length > before, `${evs.length} events: some were recorded while disconnected`);
      assertEq(JSON.stringify(await pageCounts(page)), JSON.stringify(perThread(evs)), 'events per row');
      await shot(page, 'live-reconnected');
    });
    await check('no error in the page', () => assertEq(errors.join('\n'), '', 'page errors'));
  } finally {
    srv.stop();
    prog.kill();
    await page.close();
  }
}

const exe = buildProgram();
await runSuites(
  named('liveSuite', (b) => liveSuite(b, exe)),
  named('reconnectSuite', (b) => reconnectSuite(b, exe)),
);
