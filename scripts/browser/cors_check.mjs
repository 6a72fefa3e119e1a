// Opens a page in headless Chromium (Debian's, driven by playwright-core: no browser download)
// and prints what the page left in window.__result as one JSON line.
//
// Usage: node cors_check.mjs PAGE_URL
//   CHROMIUM: the browser (default /usr/bin/chromium)
//   PLAYWRIGHT_CORE: where playwright-core is installed (default: resolved normally)
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const playwrightPath = process.env.PLAYWRIGHT_CORE || "playwright-core";
const { chromium } = require(playwrightPath);

const url = process.argv[2];
if (!url) {
  console.error("usage: node cors_check.mjs PAGE_URL");
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
try {
  const page = await browser.newPage();
  const consoleLines = [];
  page.on("console", (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  await page.goto(url);
  await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 60000 });
  const result = await page.evaluate(() => window.__result);
  result.console = consoleLines;
  console.log(JSON.stringify(result));
} finally {
  await browser.close();
}
