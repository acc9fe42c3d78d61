// bench/live/page.mjs URL: keeps `reef view --live`'s page open in headless
// Chromium (follow mode, as it opens) until the program has ended and the
// trace was indexed again, then prints one JSON line: how far behind the
// newest drawn time was the wall clock at each frame that drew a newer
// end (ms: the latency from trace call to screen, including the auto-flush
// and the index's lag), the frames' drawing times, and the page's final
// event count.
import { launchBrowser } from '../../tests/view/e2e-lib.mjs';

const url = process.argv[2];
const browser = await launchBrowser();
try {
  const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
  await page.goto(url);
  await page.waitForFunction(() => window.reefView && window.reefView.info() && window.reefView.info().live, null, { timeout: 60000 });
  const ended = await page
    .waitForFunction(
      () => {
        const i = window.reefView.info();
        return (i.live.state === 'ended' && !i.live.reindexing && i.state !== 'building' && i.epoch >= 1) || i.state === 'error';
      },
      null,
      { timeout: 900000, polling: 500 },
    )
    .then(() => true);
  const r = await page.evaluate(() => ({
    drawn: window.reefView.drawnEnds(),
    frames: window.reefView.frameTimes(),
    info: window.reefView.info(),
  }));
  const origin = BigInt(r.info.origin_ns);
  const lags = r.drawn.map((d) => d.wall - Number((origin + BigInt(Math.floor(d.end))) / 1000000n)).sort((a, b) => a - b);
  const frames = r.frames.slice().sort((a, b) => a - b);
  const q = (a, p) => (a.length ? a[Math.min(a.length - 1, Math.floor(p * a.length))] : null);
  console.log(
    JSON.stringify({
      ended,
      events: r.info.events,
      error: r.info.error,
      drawn: lags.length,
      lag_ms: { median: q(lags, 0.5), p90: q(lags, 0.9), max: lags[lags.length - 1] ?? null },
      frame_ms: { median: q(frames, 0.5), p90: q(frames, 0.9) },
    }),
  );
} finally {
  await browser.close();
}
