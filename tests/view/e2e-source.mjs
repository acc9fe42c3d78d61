// End-to-end test of `reef view` on a file read by a source plugin, in
// headless Chromium: one row per stream the source declared, the list's
// first and last lines and their count. The oracle is babeltrace2's text of the file's `reef convert`
// copy (which tests/plugins checks against the generator of the file).
//
//   node tests/view/e2e-source.mjs TAG PLUGIN FILE CONVERTED-DIR
//
// Run by tests/plugins. The binary under test is $REEF_BIN (default:
// target/release/reef). Screenshots: tests/view/screenshots/source-TAG-*.png.

import { readdirSync } from 'node:fs';
import { assert, assertEq, bt2Events, check, launchBrowser, listLines, listTotal, openPage, sameLine, settle, shot, startServer, summary } from './e2e-lib.mjs';

const [tag, plugin, file, ctf] = process.argv.slice(2);
if (!ctf) {
  console.error('usage: node tests/view/e2e-source.mjs TAG PLUGIN FILE CONVERTED-DIR');
  process.exit(2);
}

const evs = bt2Events(ctf);
const browser = await launchBrowser();
const server = await startServer(['--plugin', plugin, file]);
try {
  const { page, errors } = await openPage(browser, server.url);
  await shot(page, `source-${tag}-overview`);
  const rows = await page.evaluate(() => window.reefView.allRows());

  await check(`${tag}: a row per stream the source declared`, () => {
    const files = readdirSync(ctf).filter((f) => f !== 'metadata' && f !== 'index');
    const labels = rows.map((r) => r.label).join(' | ');
    assertEq(rows.length, files.length, `rows (${labels}) for the streams ${files.join(', ')}`);
    for (const r of rows) assertEq(r.kind, 'stream', `row ${JSON.stringify(r.label)}'s kind`);
    return `${rows.length} rows: ${labels.slice(0, 120)}`;
  });

  await check(`${tag}: the list's first lines are bt2's`, async () => {
    await page.evaluate(() => {
      document.getElementById('event-list').scrollTop = 0;
    });
    await settle(page);
    const lines = await listLines(page);
    const n = Math.min(20, evs.length);
    assert(lines.length >= n, `only ${lines.length} lines shown`);
    for (let i = 0; i < n; i++) {
      assert(sameLine(lines[i].text, evs[i].line), `line ${i}: ${JSON.stringify(lines[i].text)} ≠ bt2 ${JSON.stringify(evs[i].line)}`);
      assertEq(lines[i].t, evs[i].t, `line ${i} data-t`);
    }
    return `${n} lines`;
  });

  await check(`${tag}: the list counts bt2's events`, async () => {
    const total = await listTotal(page);
    assertEq(total, evs.length, 'events in the list');
    return `${total} events`;
  });

  await check(`${tag}: the list's last lines are bt2's (scrolled to the end)`, async () => {
    await page.evaluate(() => {
      const b = document.getElementById('event-list');
      b.scrollTop = b.scrollHeight;
    });
    await settle(page);
    await page.waitForTimeout(100);
    await settle(page);
    const lines = await listLines(page);
    const want = evs.slice(-5).map((e) => e.line);
    const got = lines.slice(-5).map((l) => l.text);
    want.forEach((w, i) => assert(sameLine(got[i], w), `last line ${i}: ${JSON.stringify(got[i])} ≠ bt2 ${JSON.stringify(w)}`));
    await shot(page, `source-${tag}-end`);
    return '5 lines';
  });

  await check(`${tag}: no console error or exception in the page`, () => {
    assert(errors.length === 0, errors.slice(0, 5).join(' | '));
  });
} finally {
  server.stop();
  await browser.close();
}
process.exit(summary() ? 0 : 1);
