// Drives headless Chromium through a notebook with the ragen kernel (see
// scripts/browser-test): runs every cell, waits for the live chart as an
// <img>, then for the run's end, and saves screenshots.
//
// usage: node browser-test.js BASE_URL TOKEN NOTEBOOK ARTIFACTS_DIR
'use strict';
const path = require('path');
const { chromium } = require('playwright-core');

const [base, token, notebook, artifacts] = process.argv.slice(2);
const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

async function main() {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: flags });
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const log = [];
  page.on('console', (m) => log.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => log.push(`page error: ${e.message}`));
  try {
    await page.goto(`${base}/notebooks/${notebook}?token=${token}`);
    // The classic notebook's kernel object, connected to our kernel.
    await page.waitForFunction(() => window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel &&
      Jupyter.notebook.kernel.is_connected() && Jupyter.notebook.kernel.info_reply &&
      Jupyter.notebook.kernel.info_reply.implementation === 'ragen', null, { timeout: 60000 });
    console.log('kernel connected:', await page.evaluate(() => Jupyter.notebook.kernel.name));
    await page.evaluate(() => Jupyter.notebook.execute_all_cells());

    // The training cell is the third code cell: its output area holds the
    // progress bar (HTML <progress>) and the live chart (image/png <img>).
    const area = page.locator('.code_cell').nth(2).locator('.output_area');
    await area.locator('progress').first().waitFor({ timeout: 120000 });
    const img = area.locator('img[src^="data:image/png"]').first();
    await img.waitFor({ timeout: 120000 });
    // Scroll to the cell, not the <img>: each chart update replaces the
    // image element, and one replaced mid-scroll fails the action.
    await page.locator('.code_cell').nth(2).scrollIntoViewIfNeeded();
    const live = path.join(artifacts, 'browser-live.png');
    await page.screenshot({ path: live, fullPage: true });
    console.log('live chart shown; screenshot', live);

    // The end: the bar says done, the last cell shows the run's steps.
    await page.locator('.code_cell').nth(2).getByText(/done, \d+ steps/).waitFor({ timeout: 120000 });
    const steps = page.locator('.code_cell').nth(3).locator('.output_result');
    await steps.waitFor({ timeout: 60000 });
    const text = (await steps.innerText()).trim();
    if (!/3$/.test(text)) throw new Error(`run.Steps() cell shows ${JSON.stringify(text)}, want 3`);
    const size = await img.evaluate((el) => [el.naturalWidth, el.naturalHeight]);
    if (size[0] < 100 || size[1] < 100) throw new Error(`chart image is ${size[0]}x${size[1]}`);
    const imgs = await area.locator('img').count();
    if (imgs !== 1) throw new Error(`training cell shows ${imgs} images, want one chart updated in place`);
    await page.locator('.code_cell').nth(2).scrollIntoViewIfNeeded();
    const final = path.join(artifacts, 'browser-final.png');
    await page.screenshot({ path: final, fullPage: true });
    console.log(`run ended (chart ${size[0]}x${size[1]}); screenshot`, final);
  } catch (e) {
    await page.screenshot({ path: path.join(artifacts, 'browser-failure.png'), fullPage: true }).catch(() => {});
    console.error(log.join('\n'));
    throw e;
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.error('FAIL', e.message);
  process.exit(1);
});
