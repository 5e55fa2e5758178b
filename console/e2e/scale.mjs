// The console's pages at scale (bench/console_browser.py): each page loaded `repeats` times in one chromium
// session, timing navigation start -> the first row of its table shown, and counting the API calls of each load.
// usage: node e2e/scale.mjs '<plan JSON>'  (base, session, repeats, pages: [{ name, url }])
import { launch, watch, WIDE } from "./lib.mjs";

const plan = JSON.parse(process.argv[2]);
const browser = await launch();
const results = {};
try {
  const context = await browser.newContext({ viewport: WIDE });
  await context.addCookies([{ name: "sb_session", value: plan.session, url: plan.base, httpOnly: true, sameSite: "Strict" }]);
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const seen = watch(page);
  for (const { name, url } of plan.pages) {
    const times = [];
    let calls = [];
    for (let i = 0; i < plan.repeats; i += 1) {
      const started = Date.now();
      const before = seen.api.length;
      await page.goto(url);
      await page.locator('.table-block[aria-busy="false"] tbody tr').first().waitFor();
      times.push(Date.now() - started);
      await page.waitForLoadState("networkidle");
      calls = seen.api.slice(before);
    }
    // And the next page of the same table: one keyset page more.
    const next = Date.now();
    const before = seen.api.length;
    await page.getByRole("button", { name: "Next" }).click();
    await page.getByText("Page 2").waitFor();
    await page.locator('.table-block[aria-busy="false"] tbody tr').first().waitFor();
    results[name] = { times, calls, nextMs: Date.now() - next, nextCalls: seen.api.length - before };
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(results));
