// Loads the page in the system chromium (headless) through playwright-core and prints window.runCalls' result.
// usage: node drive.mjs PAGE_URL API_URL GATEWAY_URL TOKEN TAG
import { chromium } from "playwright-core";

const [pageUrl, api, gateway, token, tag] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
try {
  const page = await browser.newPage();
  const consoleLines = [];
  page.on("console", (msg) => consoleLines.push(msg.text()));
  await page.goto(pageUrl);
  await page.waitForFunction(() => document.title === "ready");
  const results = await page.evaluate(
    ([a, g, t, x]) => window.runCalls(a, g, t, x),
    [api, gateway, token, tag],
  );
  console.log(JSON.stringify({ results, console: consoleLines }));
} finally {
  await browser.close();
}
