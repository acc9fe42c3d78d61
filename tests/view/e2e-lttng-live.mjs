// End-to-end test of `reef view net://...` in headless Chromium: the page
// of a view following an LTTng live session shows the events as they
// arrive, then the whole session once it ended.
//
// Run by tests/lttng-live/run.sh, which owns the daemons, the session and
// the traced program:
//
//   node tests/view/e2e-lttng-live.mjs VIEW_URL READY_FILE EXPECTED
//   node tests/view/e2e-lttng-live.mjs VIEW_URL READY_FILE failed
//
// Opens VIEW_URL, writes READY_FILE once the page shows the live header
// (the script then starts the program), waits for events to appear and
// grow (two growing observations), then for the session's end (the
// directory indexed again: epoch >= 1) and checks the page's count is
// EXPECTED. With `failed` (the script then kills the relay): the header
// and a banner say the relay was lost, and the page still shows the
// events received. One line per check; exit status 0 only if every check
// passed. Screenshots: tests/view/screenshots/lttng-live-*.png.

import { writeFileSync } from 'node:fs';
import { assert, assertEq, check, runSelected, settle, shot } from './e2e-lib.mjs';

const [url, readyFile, expectedArg] = process.argv.slice(2);
if (!url || !readyFile || !expectedArg) {
  console.error('usage: node tests/view/e2e-lttng-live.mjs VIEW_URL READY_FILE EXPECTED');
  process.exit(2);
}
const expected = Number(expectedArg);
const failedMode = expectedArg === 'failed';

async function suite(browser) {
  const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console error: ${m.text()}`);
  });
  await page.goto(url);
  await page.waitForFunction(() => window.reefView && window.reefView.info() && window.reefView.info().live, null, { timeout: 30000 });
  writeFileSync(readyFile, 'ready\n');
  const info = () => page.evaluate(() => window.reefView.info());

  if (failedMode) {
    await check('the relay killed: the header and a banner say so, the events received stay shown', async () => {
      await page.waitForFunction(() => window.reefView.info().events > 0, null, { timeout: 30000, polling: 50 });
      await page.waitForFunction(() => window.reefView.info().live.state === 'failed', null, { timeout: 30000, polling: 50 });
      await page.waitForFunction(() => !window.reefView.info().live.reindexing && window.reefView.info().state === 'ready', null, { timeout: 30000, polling: 50 });
      await settle(page);
      const [header, banner, bannerShown] = await page.evaluate(() => [
        document.getElementById('live').textContent,
        document.getElementById('error-text').textContent,
        !document.getElementById('error').hidden,
      ]);
      assert(/^relay net:\/\/\S+ lost \(.+\): showing what was received/.test(header), `header: ${header}`);
      assert(bannerShown && banner.includes('the live session stopped'), `banner (${bannerShown ? 'shown' : 'hidden'}): ${banner}`);
      const i = await info();
      assert(i.events > 0 && (await page.evaluate(() => window.reefView.rows().length)) > 0, `${i.events} events`);
      await shot(page, 'lttng-live-failed');
      console.log(`   header: ${header}`);
    });
    await check('no error in the page', async () => assertEq(errors.join('\n'), '', 'errors'));
    return;
  }

  await check('the page shows the session live: the header names it, events appear and grow while the program runs', async () => {
    const i0 = await info();
    assertEq(i0.live.source, 'lttng-live', 'live.source');
    assert(/^net:\/\//.test(i0.live.addr), `live.addr ${i0.live.addr}`);
    await page.waitForFunction(() => window.reefView.info().events > 0, null, { timeout: 30000, polling: 50 });
    const seen = [(await info()).events];
    for (let k = 0; k < 2; k++) {
      await page.waitForFunction((n) => window.reefView.info().events > n, seen[seen.length - 1], { timeout: 20000, polling: 50 });
      seen.push((await info()).events);
    }
    const i = await info();
    assertEq(i.live.state, 'receiving', 'live.state while the program runs');
    assert(i.events < expected, `${i.events} events on the page before the program's end (of ${expected})`);
    const header = await page.evaluate(() => document.getElementById('live').textContent);
    assert(header.includes('live from net://'), `header: ${header}`);
    await settle(page);
    await shot(page, 'lttng-live-receiving');
    console.log(`   events on the page while the program ran: ${seen.join(' < ')}; header: ${header}`);
  });

  await check('once the session ended, the page shows the whole session', async () => {
    await page.waitForFunction(
      () => {
        const i = window.reefView.info();
        return i.live.state === 'ended' && !i.live.reindexing && i.state === 'ready' && i.epoch >= 1;
      },
      null,
      { timeout: 90000, polling: 100 },
    );
    await settle(page);
    const i = await info();
    assertEq(i.events, expected, 'events on the page');
    const header = await page.evaluate(() => document.getElementById('live').textContent);
    assert(header.startsWith('session ended'), `header: ${header}`);
    const rows = await page.evaluate(() => window.reefView.rows().length);
    assert(rows > 0, `${rows} rows`);
    await shot(page, 'lttng-live-ended');
  });

  await check('no error in the page', async () => assertEq(errors.join('\n'), '', 'errors'));
}

await runSelected([], [suite]);
