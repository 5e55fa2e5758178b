// The console's usage, audit and limits pages in one browser session against `serve --demo` after the chat run
// (tests/console/test_console_insight.py): the chat's calls are the usage and part of the audit trail. For each
// page loaded afresh: its API calls, an axe-core scan and screenshots at 1280 and 390 px; then each page's flow.
// usage: node e2e/insight.mjs '<plan JSON>'  (base, tenantId, chatModel, screenshots)
import { axe, flowRunner, launch, pageLoader, screenshots, watch, WIDE } from "./lib.mjs";

const plan = JSON.parse(process.argv[2]);
const results = { flows: {}, pages: {} };
const browser = await launch();
let current;
const step = flowRunner(results.flows, plan.screenshots, "insight-", () => current);
const pageLoad = pageLoader(results.pages, plan.screenshots);

try {
  const context = await browser.newContext({ viewport: WIDE });
  const page = await context.newPage();
  current = page;
  page.setDefaultTimeout(20_000);
  page.on("dialog", (dialog) => void dialog.accept());
  const seen = watch(page);
  const tenantUrl = (path) => `${plan.base}/console/t/${plan.tenantId}/${path}`;
  await page.goto(`${plan.base}/console/auth/dev?next=${encodeURIComponent(`/console/t/${plan.tenantId}/usage`)}`, { waitUntil: "networkidle" });

  await step("usage", async () => {
    await pageLoad(page, seen, "usage", tenantUrl("usage"), ".chart canvas");
    const totals = await page.getByRole("definition").allInnerTexts();
    const legend = await page.locator(".chart").first().locator(".u-legend .u-label").allInnerTexts();
    const top = await page.locator("table[aria-labelledby=top-heading] tbody tr").allInnerTexts();
    // A change of split is one call (the series), of the top list one call (the ranking).
    const before = seen.api.length;
    await page.getByLabel("Split by").selectOption("kind");
    await page.locator(".chart .u-legend", { hasText: "Responses" }).first().waitFor();
    const kinds = await page.locator(".chart").first().locator(".u-legend .u-label").allInnerTexts();
    await page.getByLabel("Top list").selectOption("key");
    await page.locator("table[aria-labelledby=top-heading] tbody tr", { hasText: "console-" }).first().waitFor();
    const topKeys = await page.locator("table[aria-labelledby=top-heading] tbody tr").allInnerTexts();
    return { totals, legend, top, kinds, topKeys, callsForChanges: seen.api.slice(before) };
  });

  await step("usageAcross", async () => {
    await pageLoad(page, seen, "usage-all", `${plan.base}/console/usage`, ".chart canvas");
    const legend = await page.locator(".chart").first().locator(".u-legend .u-label").allInnerTexts();
    const top = await page.locator("table[aria-labelledby=top-heading] tbody tr").allInnerTexts();
    return { legend, top };
  });
  await step("audit", async () => {
    const rows = page.locator(".table-block tbody tr");
    await pageLoad(page, seen, "audit", tenantUrl("audit"), '.table-block[aria-busy="false"] tbody tr');
    const first = await rows.count();
    const actions = await page.locator(".table-block tbody td[data-label=Action]").allInnerTexts();
    // Filters are the server's: one call per Apply, and every row matches.
    const before = seen.api.length;
    await page.getByLabel("Method").fill("platform.tenants.v1.ApiKeyService/CreateApiKey");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.locator('.table-block[aria-busy="false"]').waitFor();
    await page.waitForLoadState("networkidle");
    const filtered = await page.locator(".table-block tbody td[data-label=Action]").allInnerTexts();
    const callsForFilter = seen.api.slice(before);
    await page.getByLabel("Outcome").selectOption({ label: "Refused" });
    await page.getByRole("button", { name: "Apply" }).click();
    await page.locator('.table-block[aria-busy="false"]').waitFor();
    await page.waitForLoadState("networkidle");
    const refused = await page.locator(".table-block tbody td[data-label=Outcome]").allInnerTexts();
    await page.getByRole("button", { name: "Clear" }).click();
    await page.locator('.table-block[aria-busy="false"] tbody tr').first().waitFor();
    let second = 0;
    if (await page.getByRole("button", { name: "Next" }).isEnabled()) {
      await page.getByRole("button", { name: "Next" }).click();
      await page.getByText("Page 2").waitFor();
      await page.locator('.table-block[aria-busy="false"]').waitFor();
      second = await rows.count();
    }
    return { first, actions: [...new Set(actions)], filtered, callsForFilter, refused, second };
  });

  await step("auditAcross", async () => {
    await pageLoad(page, seen, "audit-all", `${plan.base}/console/audit`, '.table-block[aria-busy="false"] tbody tr');
    const tenants = await page.locator(".table-block tbody td[data-label=Tenant]").allInnerTexts();
    return { tenants: [...new Set(tenants)] };
  });
  await step("limits", async () => {
    const dialog = page.locator("dialog[open]");
    const row = page.locator(".table-block tbody tr", { hasText: "Whole tenant" });
    await pageLoad(page, seen, "limits", tenantUrl("limits"), '.table-block[aria-busy="false"]');
    // A quantity the server does not accept: refused in plain words, nothing set.
    await page.getByRole("button", { name: "Set limits" }).click();
    await dialog.getByLabel("Set by").selectOption({ label: "Tenant (within the platform's limits)" });
    await dialog.getByLabel("Requests per minute").fill("lots");
    await dialog.getByRole("button", { name: "Set limits" }).click();
    const refusal = await dialog.getByRole("alert").innerText();
    await dialog.getByLabel("Requests per minute").fill("600");
    await dialog.getByLabel("Token budget").fill("1M");
    await dialog.getByLabel("Soft budget").fill("800k");
    await dialog.getByRole("button", { name: "Set limits" }).click();
    await row.waitFor();
    const set = await row.locator("td[data-label=Limits]").innerText();
    await row.getByRole("button", { name: "Edit" }).click();
    await dialog.getByLabel("Requests per minute").fill("1k");
    await dialog.getByRole("button", { name: "Save limits" }).click();
    await row.locator("td[data-label=Limits]", { hasText: "1k requests/min" }).waitFor();
    const edited = await row.locator("td[data-label=Limits]").innerText();
    // Current use of the limits over one key's calls: the keys come a server page at a time when the section opens.
    await page.getByText("Current use", { exact: true }).click();
    await page.getByLabel("API key").locator("option").first().waitFor({ state: "attached" });
    await page.getByRole("button", { name: "Show current use" }).click();
    await page.locator(".usage-list li, .panel [role=status]").first().waitFor();
    const use = await page.locator(".usage-list li").allInnerTexts();
    const useStatus = await page.locator(".panel [role=status]").innerText();
    results.pages["limits-set"] = { axe: await axe(page), shots: await screenshots(page, plan.screenshots, "limits-set") };
    await row.getByRole("button", { name: "Delete" }).click();
    await row.waitFor({ state: "detached" });
    return { refusal, set, edited, use, useStatus, left: await page.locator(".table-block tbody tr").count() };
  });

  await step("limitsBeside", async () => {
    // The one limits panel beside what it limits: a key's row, a service account's page, the operators' tenants and
    // the models (per model, in this tenant). Each opens with two calls, both for its scope only, and none on the
    // page's own load.
    const dialog = page.locator("dialog[open]");
    const tiers = (where) => where.locator(".scope-limits h3").allInnerTexts();
    await page.goto(tenantUrl("keys"), { waitUntil: "networkidle" });
    const keyRow = page.locator(".table-block tbody tr", { hasText: "demo" }).first();
    const before = seen.api.length;
    const listing = page.waitForRequest((request) => new URL(request.url()).pathname.endsWith("/switchboard.limits.v1.LimitService/ListLimitPolicies"));
    await keyRow.getByRole("button", { name: /^Limits/ }).click();
    await dialog.getByRole("button", { name: "Set tenant limits" }).click();
    const opened = seen.api.slice(before);
    // A Connect GET carries its request as JSON in `message`.
    const listed = JSON.parse(new URL((await listing).url()).searchParams.get("message") ?? "null");
    await dialog.getByLabel("Requests per minute").fill("lots");
    await dialog.getByRole("button", { name: "Set limits" }).click();
    const refusal = await dialog.getByRole("alert").innerText();
    await dialog.getByLabel("Requests per minute").fill("30");
    await dialog.getByLabel("Token budget").fill("50k");
    await dialog.getByLabel("Soft budget").fill("40k");
    await dialog.getByRole("button", { name: "Set limits" }).click();
    await dialog.getByRole("button", { name: "Edit tenant limits" }).waitFor();
    const keyPanel = await dialog.locator(".scope-limits").innerText();
    results.pages["limits-panel"] = { axe: await axe(page), shots: await screenshots(page, plan.screenshots, "limits-panel") };
    await dialog.getByRole("button", { name: "Delete tenant limits" }).click();
    await dialog.getByRole("button", { name: "Set tenant limits" }).waitFor();
    await dialog.getByRole("button", { name: "Close" }).click();

    await page.goto(tenantUrl("service-accounts"), { waitUntil: "networkidle" });
    await page.getByRole("button", { name: "Create service account" }).click();
    await dialog.getByLabel(/^Name/).fill("limited-robot");
    await dialog.getByRole("button", { name: "Create" }).click();
    await page.getByRole("link", { name: "limited-robot" }).click();
    const section = page.locator("details.panel");
    await section.locator("summary").click();
    await section.getByRole("button", { name: "Set platform limits" }).click();
    await section.getByLabel("Concurrent requests").fill("3");
    await section.getByRole("button", { name: "Set limits" }).click();
    await section.getByRole("button", { name: "Edit platform limits" }).waitFor();
    const accountPanel = await section.locator(".scope-limits").innerText();
    await section.getByRole("button", { name: "Delete platform limits" }).click();
    await section.getByRole("button", { name: "Set platform limits" }).waitFor();

    await page.goto(`${plan.base}/console/tenants`, { waitUntil: "networkidle" });
    await page.locator(".table-block tbody tr", { hasText: plan.tenantId }).getByRole("button", { name: /^Limits/ }).click();
    await dialog.locator(".scope-limits h3").first().waitFor();
    const tenantTiers = await tiers(dialog);
    await dialog.getByRole("button", { name: "Close" }).click();

    await page.goto(tenantUrl("models"), { waitUntil: "networkidle" });
    await page.locator(".table-block tbody tr", { hasText: plan.chatModel }).getByRole("button", { name: /^Limits/ }).click();
    await dialog.locator(".scope-limits h3").first().waitFor();
    const modelTitle = await dialog.locator("h2").innerText();
    const modelTiers = await tiers(dialog);
    return { opened, listed, refusal, keyPanel, accountPanel, tenantTiers, modelTitle, modelTiers };
  });
} finally {
  await browser.close();
}
console.log(JSON.stringify(results));
