// Helpers of the end-to-end tests of `reef view`'s page (tests/view/e2e.mjs):
// starting the server, reading babeltrace2's text independently, driving
// headless Chromium through playwright-core, reporting checks.

import { execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const SCREENSHOTS = join(ROOT, 'tests/view/screenshots');
export const REEF = process.env.REEF_BIN || join(ROOT, 'target/release/reef');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
/** bt2 and reef read times in the same zone. */
export const ENV = { ...process.env, TZ: 'UTC' };

const require = createRequire(join(ROOT, 'web/package.json'));

// --- Reporting ---------------------------------------------------------------------------

let passed = 0;
let failed = 0;

/** Runs one check: prints `ok   name` or `FAIL name: why`; never throws. */
export async function check(name, f) {
  try {
    const detail = await f();
    passed++;
    console.log(`ok   ${name}${detail ? ` (${detail})` : ''}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export function summary() {
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0;
}

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

export function assertEq(actual, expected, what) {
  if (actual !== expected) {
    throw new Error(`${what}: got ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
  }
}

// --- babeltrace2 ------------------------------------------------------------------------------

/**
 * The events of a trace as babeltrace2 prints them: `line` (default
 * options), `ns` (BigInt, from --clock-seconds), `t` (ns from the first
 * event, a Number), `name`, `cpu` (cpu_id or null), `fields` (name → text
 * of the value, first occurrence).
 */
export function bt2Events(trace) {
  const run = (args) =>
    execFileSync('babeltrace2', [...args, trace], { env: ENV, maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .split('\n')
      .filter((l) => l.length);
  const lines = run([]);
  const secs = run(['--clock-seconds']);
  if (lines.length !== secs.length) throw new Error('babeltrace2: outputs of different lengths');
  let origin = null;
  return lines.map((line, i) => {
    const m = /^\[(\d+)\.(\d{9})\]/.exec(secs[i]);
    if (!m) throw new Error(`babeltrace2 --clock-seconds: cannot read ${secs[i]}`);
    const ns = BigInt(m[1]) * 1000000000n + BigInt(m[2]);
    if (origin === null) origin = ns;
    const h = /^\[[^\]]*\] \([^)]*\) (\S+) (\S+): /.exec(line);
    const cpu = /\{ cpu_id = (\d+) \}/.exec(line);
    const fields = {};
    for (const f of line.matchAll(/(\w+) = ("(?:[^"\\]|\\.)*"|[^,}\s]+)/g)) {
      if (!(f[1] in fields)) fields[f[1]] = f[2];
    }
    return { i, line, ns, t: Number(ns - origin), name: h ? h[2] : '', cpu: cpu ? +cpu[1] : null, fields };
  });
}

/**
 * The same line with the delta column recomputed for a sub-list (deltas
 * are from the previous event of the list: `reef print --filter`'s text).
 */
export function withDelta(ev, prev) {
  let delta = '(+?.?????????)';
  if (prev) {
    const d = ev.ns - prev.ns;
    delta = `(+${d / 1000000000n}.${String(d % 1000000000n).padStart(9, '0')})`;
  }
  return ev.line.replace(/^(\[[^\]]*\] )\([^)]*\)/, `$1${delta}`);
}

/**
 * babeltrace2 2.0.4 prints a stale string where a trace holds an empty one:
 * two lines are the same when they only differ there (reef's string empty).
 */
export function sameLine(reef, bt) {
  if (reef === bt) return true;
  const str = /"(?:[^"\\]|\\.)*"/g;
  const rs = reef.match(str) ?? [];
  const bs = bt.match(str) ?? [];
  if (rs.length !== bs.length) return false;
  if (reef.split(str).join('\u0000') !== bt.split(str).join('\u0000')) return false;
  return rs.every((s, i) => s === bs[i] || s === '""');
}

/** Whether a glob (`*`) matches a string, as the filter language does. */
export function glob(pattern, s) {
  const re = new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return re.test(s);
}

// --- The server ----------------------------------------------------------------------------------

/** Starts `reef view --port 0 ARGS...` (cwd: the repository); resolves to { url, stop() }. */
export function startServer(args) {
  return new Promise((resolveP, reject) => {
    const child = spawn(REEF, ['view', '--port', '0', ...args], { cwd: ROOT, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`reef view printed no URL in 30 s: ${err}`)), 30000);
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolveP({
          url: out.slice(0, nl).trim(),
          stderr: () => err,
          stop: () => {
            child.kill('SIGTERM');
          },
        });
      }
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`reef view exited (${code}) before printing its URL: ${err}`));
    });
  });
}

// --- The browser ---------------------------------------------------------------------------------

export async function launchBrowser() {
  const { chromium } = require('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * A page on `url` whose console errors and uncaught exceptions are
 * collected (`errors`), waited until the index is built and drawn.
 */
export async function openPage(browser, url) {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console error: ${m.text()}`);
  });
  page.on('requestfailed', (r) => {
    // Requests the page aborts on purpose (stale windows) are not errors.
    if (!/ERR_ABORTED/.test(r.failure()?.errorText ?? '')) errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  await page.goto(url);
  await page.waitForFunction(() => window.reefView && window.reefView.info() && window.reefView.info().state !== 'building', null, {
    timeout: 60000,
  });
  await settle(page);
  return { page, errors };
}

/** Waits until the page has nothing in flight and everything drawn. */
export async function settle(page, timeout = 30000) {
  await page.waitForTimeout(50);
  await page.waitForFunction(() => window.reefView.ready(), null, { timeout, polling: 20 });
}

export async function shot(page, name) {
  if (!existsSync(SCREENSHOTS)) mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

/** Hovers at client (x, y), waits for the tooltip to be filled; its text and the line it shows. */
export async function tooltipAt(page, x, y) {
  await page.mouse.move(x - 3, y);
  await page.mouse.move(x, y);
  await page.waitForFunction(() => document.getElementById('tooltip').dataset.state === 'done', null, { timeout: 20000 });
  await settle(page);
  return page.evaluate(() => {
    const t = document.getElementById('tooltip');
    const cells = {};
    for (const tr of t.querySelectorAll('tr')) cells[tr.cells[0].textContent] = tr.cells[1].textContent;
    return { text: t.textContent, cells, line: t.querySelector('.tip-line')?.textContent ?? null, visible: t.style.display !== 'none' };
  });
}

/** The event list's lines on screen: { text, t, row, selected }. */
export function listLines(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('#event-list .ev-line')].map((e) => ({
      text: e.textContent,
      t: Number(e.dataset.t),
      row: e.dataset.row === '' ? null : Number(e.dataset.row),
      index: Number(e.dataset.index),
      selected: e.classList.contains('selected'),
    })),
  );
}

/** The total the list's status line gives ("a–b of N events"). */
export async function listTotal(page) {
  const s = await page.evaluate(() => document.querySelector('.list-status').textContent);
  const m = /of ([\d,]+) events/.exec(s);
  return m ? Number(m[1].replace(/,/g, '')) : 0;
}

/** Exported for the screenshots' check: whether a file exists. */
export function exists(path) {
  return existsSync(path);
}

/**
 * Runs each suite with one browser, reports an exception that escapes one
 * as a failed check, exits 0 only if every check passed. The suites run are
 * those whose name (the function's name) contains one of the command line's
 * arguments, all of them without arguments; none matching is a failure.
 */
export async function runSuites(...suites) {
  return runSelected(process.argv.slice(2), suites);
}

/** Names a suite (for the filter of runSuites). */
export function named(name, suite) {
  Object.defineProperty(suite, 'name', { value: name });
  return suite;
}

/** runSuites with the filters given (for a script whose arguments are not filters). */
export async function runSelected(filters, suites) {
  const chosen = suites.filter((s) => filters.length === 0 || filters.some((f) => s.name.includes(f)));
  if (chosen.length === 0) {
    await check(`a suite matches ${filters.join(' ')} (suites: ${suites.map((s) => s.name).join(', ')})`, () => {
      throw new Error('none');
    });
    process.exit(1);
  }
  const browser = await launchBrowser();
  try {
    for (const suite of chosen) await suite(browser);
  } catch (e) {
    await check('the test ran to its end', () => {
      throw e;
    });
  } finally {
    await browser.close();
  }
  process.exit(summary() ? 0 : 1);
}
