// The console's foundation pages in one browser session (tests/console/test_console_pages.py runs it and checks the
// JSON it prints): sign-in and return, each page's main flow, keyboard-only creation of a group, then every page
// loaded afresh — its API calls, an axe-core scan and screenshots at 1280 and 390 px.
// usage: node e2e/pages.mjs '<plan JSON>'  (base, tenantId, memberId, memberSession, deploymentLabel, screenshots)
import { axe, flowRunner, launch, load, screenshots, watch, WIDE } from "./lib.mjs";

const plan = JSON.parse(process.argv[2]);
const results = { flows: {}, pages: {} };
const browser = await launch();

let current; // the page, for a screenshot of a failed step
const step = flowRunner(results.flows, plan.screenshots, "", () => current);

try {
  const context = await browser.newContext({ viewport: WIDE });
  const page = await context.newPage();
  current = page;
  page.setDefaultTimeout(15_000);
  page.on("dialog", (dialog) => void dialog.accept()); // the confirm() before a delete or revoke
  const seen = watch(page);
  const tenantUrl = (path) => `${plan.base}/console/t/${plan.tenantId}/${path}`;
  const heading = (name) => page.getByRole("heading", { level: 1, name });
  const row = (text) => page.locator("tbody tr", { hasText: text });
  const dialog = page.locator("dialog[open]");

  await step("signIn", async () => {
    await page.goto(tenantUrl("keys"));
    await page.waitForURL(/\/console\/sign-in\?next=/);
    const signInUrl = page.url();
    await page.getByRole("link", { name: /Development sign-in/ }).waitFor();
    results.pages["sign-in"] = { calls: [], axe: await axe(page), shots: await screenshots(page, plan.screenshots, "sign-in") };
    await page.getByRole("link", { name: /Development sign-in/ }).click();
    await heading("API keys").waitFor();
    return { signInUrl, returnedTo: page.url() };
  });

  await step("keyboardCreateGroup", async () => {
    await page.goto(tenantUrl("groups"));
    await heading("Groups").waitFor();
    await page.locator('.table-block[aria-busy="false"]').waitFor();
    // From here on only the keyboard: the first Tab reaches "Skip to content" (Enter skips the header and the nav,
    // however many pages it lists), then Tab to "Create group", Enter, type the name, Enter.
    await page.keyboard.press("Tab");
    const skipLink = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? "");
    await page.keyboard.press("Enter");
    let tabs = 0;
    let label = "";
    while (label !== "Create group" && tabs < 40) {
      await page.keyboard.press("Tab");
      tabs += 1;
      label = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? "");
    }
    await page.keyboard.press("Enter");
    await dialog.waitFor();
    const focusedField = await page.evaluate(() => document.activeElement?.getAttribute("name"));
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" }).catch(() => dialog.waitFor({ state: "hidden" }));
    const focusBack = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? "");
    await page.keyboard.press("Enter");
    await dialog.waitFor();
    await page.keyboard.type("Platform team");
    await page.keyboard.press("Enter");
    await page.getByRole("link", { name: "Platform team" }).waitFor();
    const reachedButton = label === "Create group";
    return { skipLink, tabs, reachedButton, focusedField, focusBack, dialogOpen: await dialog.count() };
  });

  await step("paging", async () => {
    // 31 groups, 25 a page: Next shows the rest, Previous the first page again.
    await page.goto(tenantUrl("groups"));
    await page.locator('.table-block[aria-busy="false"]').waitFor();
    const first = await page.locator("tbody tr").count();
    const callsBefore = seen.api.length;
    await page.getByRole("button", { name: "Next" }).click();
    await page.getByText("Page 2").waitFor();
    await page.locator('.table-block[aria-busy="false"]').waitFor();
    const second = await page.locator("tbody tr").count();
    const callsForNext = seen.api.length - callsBefore;
    const nextDisabled = await page.getByRole("button", { name: "Next" }).isDisabled();
    await page.getByRole("button", { name: "Previous" }).click();
    await page.getByText("Page 1").waitFor();
    await page.locator('.table-block[aria-busy="false"]').waitFor();
    const back = await page.locator("tbody tr").count();
    return { first, second, back, nextDisabled, callsForNext, callsForPaging: seen.api.length - callsBefore };
  });

  await step("tenantPicker", async () => {
    await page.goto(tenantUrl("keys"));
    await heading("API keys").waitFor();
    await page.getByLabel("Tenant").selectOption({ label: "globex" });
    await page.waitForURL((url) => !url.pathname.includes(plan.tenantId));
    await heading("API keys").waitFor();
    const path = new URL(page.url()).pathname;
    await page.getByLabel("Tenant").selectOption({ label: "acme" });
    await page.waitForURL(tenantUrl("keys"));
    return { path };
  });

  await step("groupMembers", async () => {
    await page.goto(tenantUrl("groups"));
    await page.getByRole("link", { name: "Platform team" }).click();
    await page.getByRole("button", { name: "Add member" }).click();
    await dialog.getByLabel("Member").selectOption(plan.memberId);
    await dialog.getByRole("button", { name: "Add" }).click();
    await row(plan.memberId).waitFor();
    results.pages["group"] = { url: page.url() };
    const added = await row(plan.memberId).count();
    await row(plan.memberId).getByRole("button", { name: /Remove/ }).click();
    await row(plan.memberId).waitFor({ state: "detached" });
    await page.getByRole("button", { name: "Add member" }).click();
    await dialog.getByLabel("Member").selectOption(plan.memberId);
    await dialog.getByRole("button", { name: "Add" }).click();
    await row(plan.memberId).waitFor();
    return { added, removedThenAddedBack: await row(plan.memberId).count() };
  });

  await step("invite", async () => {
    await page.goto(tenantUrl("members"));
    await page.getByRole("button", { name: "Invite member" }).click();
    await dialog.getByLabel("Email").fill("carol@example.com");
    await dialog.getByLabel("Role").selectOption({ label: "Editor" });
    await dialog.getByRole("button", { name: "Invite" }).click();
    await row("carol@example.com").waitFor();
    return { status: (await row("carol@example.com").innerText()).replace(/\s+/g, " ") };
  });

  await step("createKey", async () => {
    await page.goto(tenantUrl("keys"));
    await page.getByRole("button", { name: "Create key" }).click();
    await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("ci key");
    await dialog.getByLabel("Expires").fill("2031-01-02T03:04");
    await dialog.getByLabel("Kind of resource").selectOption({ label: "Model deployment" });
    await dialog.getByLabel(plan.deploymentLabel).check();
    await dialog.getByRole("group", { name: "Groups" }).getByLabel("Platform team").check();
    const chips = await dialog.getByRole("list", { name: "Chosen grants" }).innerText();
    await dialog.getByRole("button", { name: "Create key" }).click();
    const secretField = dialog.getByLabel("Secret of ci key");
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: plan.base });
    await dialog.getByRole("button", { name: "Copy" }).click();
    await dialog.getByText("Copied to the clipboard.").waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    await screenshots(page, plan.screenshots, "keys-secret-once");
    await dialog.getByRole("button", { name: "Done" }).click();
    await row("ci key").waitFor();
    const listed = (await row("ci key").innerText()).replace(/\s+/g, " ");
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
    return { secretPrefix: secret.slice(0, 3), copiedMatches: copied === secret, chips, listed, secretInStorage: stored.includes(secret) };
  });

  await step("keyLifecycle", async () => {
    const states = [];
    await row("ci key").getByRole("button", { name: /Disable/ }).click();
    await row("ci key").getByText("disabled").waitFor();
    states.push("disabled");
    await row("ci key").getByRole("button", { name: /Enable/ }).click();
    await row("ci key").getByText("active").waitFor();
    states.push("active");
    await row("ci key").getByRole("button", { name: /Revoke/ }).click();
    await row("ci key").waitFor({ state: "detached" });
    await page.getByLabel("Show revoked keys").check();
    await row("ci key").getByText("revoked").waitFor();
    states.push("revoked");
    return { states };
  });

  await step("serviceAccount", async () => {
    await page.goto(tenantUrl("service-accounts"));
    await page.getByRole("button", { name: "Create service account" }).click();
    await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("ci-robot");
    await dialog.getByLabel("Description").fill("Deploys from CI");
    await dialog.getByRole("button", { name: "Create" }).click();
    await page.getByRole("link", { name: "ci-robot" }).click();
    await heading(/Service account ci-robot/).waitFor();
    results.pages["service-account"] = { url: page.url() };
    await page.getByRole("button", { name: "Create key" }).click();
    await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("robot key");
    await dialog.getByRole("button", { name: "Create key" }).click();
    const secret = await dialog.getByLabel("Secret of robot key").inputValue();
    await dialog.getByRole("button", { name: "Done" }).click();
    await row("robot key").waitFor();
    return { secretPrefix: secret.slice(0, 3), listed: (await row("robot key").innerText()).replace(/\s+/g, " ") };
  });

  await step("tenants", async () => {
    await page.goto(`${plan.base}/console/tenants`);
    await page.getByRole("button", { name: "Create tenant" }).click();
    await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("Not A Valid Name!");
    await dialog.getByRole("button", { name: "Create" }).click();
    const refusal = await dialog.getByRole("alert").innerText();
    await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("console-made");
    await dialog.getByLabel("Display name").fill("Made in the console");
    await dialog.getByRole("button", { name: "Create" }).click();
    await row("console-made").waitFor();
    return { refusal };
  });

  // Every page loaded afresh, as from a bookmark: its API calls, accessibility and screenshots.
  const pages = [
    ["tenants", `${plan.base}/console/tenants`, "Tenants"],
    ["members", tenantUrl("members"), "Members"],
    ["groups", tenantUrl("groups"), "Groups"],
    ["group", results.pages.group?.url, /^Group/],
    ["keys", tenantUrl("keys"), "API keys"],
    ["service-accounts", tenantUrl("service-accounts"), "Service accounts"],
    ["service-account", results.pages["service-account"]?.url, /^Service account ci-robot/],
  ];
  for (const [name, url, title] of pages) {
    if (url === undefined) {
      results.pages[name] = { error: "not reached by its flow" };
      continue;
    }
    try {
      const calls = await load(page, seen, url, "h1");
      await heading(title).waitFor();
      await page.locator('.table-block[aria-busy="false"]').first().waitFor();
      results.pages[name] = { url, calls, axe: await axe(page), shots: await screenshots(page, plan.screenshots, name) };
    } catch (error) {
      results.pages[name] = { url, error: String(error).slice(0, 2000) };
    }
  }

  await step("memberView", async () => {
    // A plain member of the tenant (their session cookie as the sign-in would set it) sees Groups and keys, and
    // neither the admin pages nor the admin buttons: the nav follows GetSession's capabilities.
    const other = await browser.newContext({ viewport: WIDE });
    try {
      await other.addCookies([{ name: "sb_session", value: plan.memberSession, url: plan.base, httpOnly: true, sameSite: "Strict" }]);
      const view = await other.newPage();
      const memberSeen = watch(view);
      const calls = await load(view, memberSeen, tenantUrl("groups"), "h1");
      await view.getByRole("link", { name: "Platform team" }).waitFor();
      const nav = await view.getByRole("navigation", { name: "Console" }).getByRole("link").allInnerTexts();
      const adminButtons = await view.getByRole("button", { name: /Create group|Delete/ }).count();
      await view.goto(tenantUrl("service-accounts"));
      await view.getByRole("heading", { level: 1, name: "Not available" }).waitFor();
      return { nav, adminButtons, calls };
    } finally {
      await other.close();
    }
  });

  await step("signOut", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/console\/sign-in/);
    const cookies = (await context.cookies()).map((c) => c.name);
    return { landedOn: new URL(page.url()).pathname, cookies };
  });
  results.errors = seen.errors;
} finally {
  await browser.close();
}
console.log(JSON.stringify(results));
