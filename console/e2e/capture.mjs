// The captured-exchanges pages in one browser session against `serve --demo` (tests/console/test_console_capture.py),
// signed in as the bootstrap operator (who holds capture everywhere), after the test turned capture on for the demo
// tenant and made a buffered and a streamed chat call. For each page loaded afresh: its API calls, an axe-core scan
// and screenshots at 1280 and 390 px; then the flows: list and filter, an exchange's bodies, a refusal, the policies.
// usage: node e2e/capture.mjs '<plan JSON>'  (base, tenantId, chatModel, keyId, marker, screenshots)
import { flowRunner, launch, pageLoader, watch, WIDE } from "./lib.mjs";

const plan = JSON.parse(process.argv[2]);
const results = { flows: {}, pages: {} };
const browser = await launch();
let current;
const step = flowRunner(results.flows, plan.screenshots, "capture-", () => current);
const pageLoad = pageLoader(results.pages, plan.screenshots);
const settled = '.table-block[aria-busy="false"]';

async function apply(page) {
  await page.getByRole("button", { name: "Apply" }).click();
  await page.locator(settled).waitFor();
  await page.waitForLoadState("networkidle");
}

try {
  const context = await browser.newContext({ viewport: WIDE });
  const page = await context.newPage();
  current = page;
  page.setDefaultTimeout(20_000);
  const seen = watch(page);
  const tenantPath = (path) => `/console/t/${plan.tenantId}/${path}`;
  const tenantUrl = (path) => `${plan.base}${tenantPath(path)}`;
  await page.goto(`${plan.base}/console/auth/dev?next=${encodeURIComponent(tenantPath("capture"))}`, { waitUntil: "networkidle" });
  const rows = page.locator(".table-block tbody tr");

  await step("list", async () => {
    await pageLoad(page, seen, "capture", tenantUrl("capture"), `${settled} tbody tr`);
    const nav = await page.getByRole("navigation", { name: "Console" }).getByRole("link").allInnerTexts();
    const tenantPolicy = await page.locator(".capture-switch").innerText();
    const callers = await page.locator(".table-block tbody td[data-label=Caller]").allInnerTexts();
    return { nav, tenantPolicy, count: await rows.count(), callers: [...new Set(callers)] };
  });

  await step("filter", async () => {
    // Filters are the server's: one call per Apply, and every row matches.
    const before = seen.api.length;
    await page.getByLabel("Model").fill(plan.chatModel);
    await apply(page);
    const models = await page.locator(".table-block tbody td[data-label=Model]").allInnerTexts();
    const callsForFilter = seen.api.slice(before);
    await page.getByLabel("Model").fill("no/such-model");
    await apply(page);
    const emptyText = await page.locator(".table-block .empty").innerText();
    await page.getByRole("button", { name: "Clear" }).click();
    await page.locator(`${settled} tbody tr`).first().waitFor();
    return { models: [...new Set(models)], callsForFilter, emptyText };
  });

  await step("exchange", async () => {
    // The newest exchange by its link; then its page loaded afresh, for its calls, axe and screenshots.
    await rows.first().getByRole("link").click();
    await page.locator("pre.capture-body").first().waitFor();
    const url = page.url();
    await pageLoad(page, seen, "capture-exchange", url, "pre.capture-body");
    const bodies = await page.locator("pre.capture-body").allInnerTexts();
    const usage = await page.getByRole("definition").allInnerTexts();
    return { url, request: bodies[0], response: bodies[1], usage };
  });

  await step("refusal", async () => {
    await page.goto(tenantUrl("capture/cap_0000000000000000"), { waitUntil: "networkidle" });
    return { banner: await page.getByRole("alert").innerText() };
  });

  await step("policies", async () => {
    await page.goto(tenantUrl("capture"), { waitUntil: "networkidle" });
    await page.locator(".capture-switch").waitFor();
    await page.getByLabel("Scope").selectOption({ label: "API key" });
    await page.getByLabel("Id").fill(plan.keyId);
    await page.getByRole("button", { name: "Turn capture on" }).click();
    const scope = page.locator(".capture-scopes li", { hasText: plan.keyId });
    await scope.getByText("capturing").waitFor();
    const keyOn = await scope.innerText();
    await scope.getByRole("button", { name: "Turn off" }).click();
    await scope.locator("strong", { hasText: "off" }).waitFor();
    const keyOff = await scope.innerText();
    await page.getByRole("button", { name: "Turn off for the tenant" }).click();
    await page.getByRole("button", { name: "Turn on for the tenant" }).waitFor();
    return { keyOn, keyOff, tenantPolicy: await page.locator(".capture-switch").innerText() };
  });
} finally {
  await browser.close();
}
console.log(JSON.stringify(results));
