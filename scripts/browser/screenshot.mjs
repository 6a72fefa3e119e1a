// Opens a page in headless Chromium (Debian's, driven by playwright-core: no browser download),
// waits until it shows TEXT (when given), clicks CLICK (when given) and saves a screenshot.
//
// Usage: node screenshot.mjs PAGE_URL OUT.png [TEXT] [CLICK]
//   CHROMIUM: the browser (default /usr/bin/chromium)
//   PLAYWRIGHT_CORE: where playwright-core is installed (default: resolved normally)
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || "playwright-core");

const [url, out, text, click] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: node screenshot.mjs PAGE_URL OUT.png [TEXT] [CLICK]");
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  await page.goto(url);
  if (text) await page.getByText(text).first().waitFor({ timeout: 60000 });
  if (click) {
    await page.getByText(click).first().click();
    await page.waitForTimeout(1500);
  }
  await page.screenshot({ path: out, fullPage: true });
  console.log(JSON.stringify({ saved: out, title: await page.title() }));
} finally {
  await browser.close();
}
