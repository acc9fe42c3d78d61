// bench/view/browse.mjs URL — opens `reef view`'s page in headless Chromium
// (Debian's /usr/bin/chromium, driven by playwright-core), waits until the
// page says it is ready, zooms in a little, pans with the keyboard (D then
// A held, with key repeats as a held key sends them) and with mouse drags
// across the timeline, then prints one JSON line: the median, p95 and max
// of the page's own frame durations (`window.reefView.frameTimes()`, the
// frames drawn while panning), and the same for requestAnimationFrame
// deltas measured meanwhile (what a 60 Hz display would show: at least
// 16.7 ms each). If the page has no frameTimes(), the rAF deltas are the
// figure (`source: "raf"`).
// Chromium is launched as the page's tests launch it (playwright-core from
// web/node_modules, Debian's chromium, the same flags).
import { launchBrowser } from '../../tests/view/e2e-lib.mjs';

const url = process.argv[2];
const PAN_MS = Number(process.env.PAN_MS || 2500);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p) => s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
  return s.length ? { n: s.length, median: at(50), p95: at(95), max: s[s.length - 1] } : { n: 0 };
};

const browser = await launchBrowser();
const out = {};
try {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const t0 = Date.now();
  await page.goto(url, { waitUntil: 'load' });
  // Ready: window.reefView.ready() true (awaited if a promise), or, with no
  // such hook, the page's requests settled.
  let hook = true;
  for (;;) {
    const r = await page.evaluate(async () => {
      const v = window.reefView;
      if (!v) return 'absent';
      if (typeof v.ready !== 'function') return 'no-ready';
      return (await v.ready()) ? 'ready' : 'wait';
    });
    if (r === 'ready') break;
    if (r === 'no-ready' || (r === 'absent' && Date.now() - t0 > 15000)) {
      hook = false;
      await page.waitForLoadState('networkidle');
      break;
    }
    if (Date.now() - t0 > 300000) throw new Error('page not ready after 300 s');
    await sleep(50);
  }
  out.page_ready_ms = Date.now() - t0;
  out.ready_hook = hook;

  // Where to point: the largest canvas (the timeline).
  const box = await page.evaluate(() => {
    let best = null;
    for (const c of document.querySelectorAll('canvas')) {
      const r = c.getBoundingClientRect();
      if (!best || r.width * r.height > best.width * best.height) best = { x: r.x, y: r.y, width: r.width, height: r.height };
    }
    return best;
  });
  const area = box || { x: 0, y: 0, width: 1600, height: 1000 };
  const cx = area.x + area.width / 2;
  const cy = area.y + Math.min(area.height / 2, 200);
  await page.mouse.move(cx, cy);

  // During the interaction, at every animation frame: the rAF delta, and
  // the frames frameTimes() gained since the previous one (it keeps the
  // last few hundred, shifting the oldest out when full).
  const hasFrames = await page.evaluate(() => typeof window.reefView?.frameTimes === 'function');
  await page.evaluate((hasFrames) => {
    const b = (window.__bench = { raf: [], frames: [], on: true });
    let last = performance.now();
    let prev = hasFrames ? Array.from(window.reefView.frameTimes()) : [];
    const same = (a, i, c, j, n) => {
      for (let k = 0; k < n; k++) if (a[i + k] !== c[j + k]) return false;
      return true;
    };
    const tick = (t) => {
      b.raf.push(t - last);
      last = t;
      if (hasFrames) {
        const cur = Array.from(window.reefView.frameTimes());
        let s = 0;
        if (cur.length > prev.length && same(prev, 0, cur, 0, prev.length)) s = cur.length - prev.length;
        else
          for (s = 0; s < cur.length; s++) if (same(prev, prev.length - cur.length + s, cur, 0, cur.length - s)) break;
        b.frames.push(...cur.slice(cur.length - s));
        prev = cur;
      }
      if (b.on) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }, hasFrames);
  const hold = async (key, ms) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      await page.keyboard.down(key); // repeated downs carry repeat: true, as a held key's
      await sleep(33);
    }
    await page.keyboard.up(key);
  };

  // Zoom in (W held: ten steps of 1.5x), so that there is room to pan.
  await hold('w', 330);
  await page.evaluate(() => {
    window.__bench.raf.length = 0;
    window.__bench.frames.length = 0;
  });
  await hold('d', PAN_MS / 2);
  await hold('a', PAN_MS / 2);
  for (let i = 0; i < 4; i++) {
    const dx = (i % 2 ? 1 : -1) * area.width * 0.3;
    await page.mouse.move(cx, cy);
    await page.mouse.down();
    await page.mouse.move(cx + dx, cy, { steps: 40 });
    await page.mouse.up();
    await sleep(100);
  }
  const got = await page.evaluate(() => {
    window.__bench.on = false;
    return { raf: window.__bench.raf.slice(1), frames: window.__bench.frames };
  });
  const rs = stats(got.raf);
  out.raf_frames = rs.n;
  out.raf_median_ms = rs.median;
  out.raf_p95_ms = rs.p95;
  out.raf_max_ms = rs.max;
  const fs = hasFrames ? stats(got.frames) : rs;
  out.source = hasFrames ? 'frameTimes' : 'raf';
  out.frames = fs.n;
  out.median_ms = fs.median;
  out.p95_ms = fs.p95;
  out.max_ms = fs.max;
  out.view_after = await page.evaluate(() => window.reefView?.view?.());
  if (errors.length) out.page_errors = errors.slice(0, 5);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
