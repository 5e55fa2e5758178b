// The console's resource pages in Debian's chromium (playwright-core), against the real servers that
// tests/console/test_console_resources.py starts (`serve --demo`, the MCP OAuth stand-in): every page's load (its
// API calls, an axe-core scan, screenshots at 1280 and 390 px) and its main flow. One browser, one session.
// usage: node e2e/resources.mjs '<plan JSON>' (base, gateway, tenant, groupId, memberSession, mcpOAuthUrl, mcpToolsUrl,
// devModelsUrl, clientId, clientSecret, chatModel, chatServedModel, embeddingModel, guardrailPublicId, guardrailModel,
// screenshots); prints one JSON line of what was seen, which the Python test judges.
/* global DragEvent -- the page's, inside page.evaluate (DataTransfer and File are globals of the e2e config) */
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { axe as axeScan, flowRunner, launch, load, screenshots as shoot, watch, WIDE } from "./lib.mjs";

const input = JSON.parse(process.argv[2]);
const WAIT = 30_000;
const report = { pages: {}, flows: {}, errors: [], gatewayCalls: [] };

const browser = await launch();
const context = await browser.newContext({ viewport: WIDE });
const page = await context.newPage();
page.setDefaultTimeout(WAIT);
const seen = watch(page);
report.errors = seen.errors;
page.on("request", (request) => {
  if (request.url().startsWith(input.gateway)) {
    report.gatewayCalls.push(`${request.method()} ${new URL(request.url()).pathname}`);
  }
});
page.on("dialog", (dialog) => void dialog.accept()); // the confirm() before a delete

const axe = () => axeScan(page);
const screenshots = (name) => shoot(page, input.screenshots, name);

/** A full page load as a person opening a link: its API calls until the network is quiet, axe, screenshots. */
async function visit(name, path, ready) {
  const started = Date.now();
  const calls = await load(page, seen, input.base + path, ready);
  report.pages[name] = { calls, loadedMs: Date.now() - started, axe: await axe() };
  await screenshots(name);
}

// A step of a flow: its outcome is recorded, a failure (with a screenshot) does not stop the other flows.
const flow = flowRunner(report.flows, input.screenshots, "", () => page);

const tenantPath = (rest) => `/console/t/${encodeURIComponent(input.tenant)}/${rest}`;
const dialog = () => page.locator("dialog[open]");
const row = (text) => page.locator("tbody tr", { hasText: text });

// Sign in (development sign-in of `serve --demo`), landing back on the console.
await page.goto(`${input.base}/console/auth/dev?next=${encodeURIComponent(tenantPath("models"))}`);
await page.waitForLoadState("networkidle"); // the landing page's own calls are not the first visit's

// ---- Models ---------------------------------------------------------------------------------------------------
await visit("models", tenantPath("models"), "tbody tr >> text=dev/stand-in-chat");
await flow("deployment", async () => {
  // Operators register an in-cluster server, edit it, and delete it.
  await page.getByRole("button", { name: "Add deployment" }).click();
  let form = dialog();
  await form.getByLabel("Resource name").fill("console-extra");
  await form.getByLabel(/^Model id/).fill("console/extra-chat");
  await form.getByLabel("Endpoint URL").fill(input.devModelsUrl);
  await form.getByLabel("Served model id").fill(input.chatServedModel);
  await form.getByRole("button", { name: "Add deployment" }).click();
  await row("console/extra-chat").waitFor();
  await row("console/extra-chat").getByRole("button", { name: /^Edit/ }).click();
  form = dialog();
  await form.getByLabel("Display name").fill("Extra chat");
  await form.getByRole("button", { name: "Save deployment" }).click();
  await row("console/extra-chat").filter({ hasText: "Extra chat" }).waitFor();
  await row("console/extra-chat").getByRole("button", { name: /^Delete/ }).click();
  await row("console/extra-chat").waitFor({ state: "detached" });
});
await flow("deployment-permission", async () => {
  await row("dev/stand-in-chat").getByRole("button", { name: /^Share/ }).click();
  const form = dialog();
  await form.getByRole("table", { name: "Permissions" }).waitFor();
  await form.getByLabel("Who").selectOption({ label: "Group" });
  await form.getByLabel("Group id").fill(input.groupId);
  await form.getByLabel("Role").selectOption({ label: "Reader (use)" });
  await form.getByRole("button", { name: "Add permission" }).click();
  const granted = form.locator("tbody tr", { hasText: input.groupId });
  await granted.waitFor();
  await axe().then((found) => { report.flows.sharingAxe = found; });
  await screenshots("sharing-editor");
  await granted.getByRole("button", { name: /^Remove/ }).click();
  await granted.waitFor({ state: "detached" });
  await form.getByRole("button", { name: "Close" }).click();
});
await flow("models-tabs", async () => {
  // Within the console, a kind of model is one list call (the session is already loaded).
  const before = seen.api.length;
  await page.getByRole("navigation", { name: "Kinds of model" }).getByRole("link", { name: "External models" }).click();
  await page.getByRole("table", { name: "External models" }).waitFor();
  await page.waitForLoadState("networkidle");
  return { calls: seen.api.slice(before) };
});
await flow("external-model", async () => {
  await page.getByRole("button", { name: "Add external model" }).click();
  const form = dialog();
  await form.getByLabel("Owner").selectOption("tenant");
  await form.getByLabel("Resource name").fill("console-guard");
  await form.getByLabel(/^Model id/).fill("console/guardrail-two");
  await form.getByLabel("Display name").fill("Second guardrail");
  await form.getByLabel("Provider's model id").fill(input.guardrailModel);
  await form.getByLabel("Base URL").fill(input.devModelsUrl);
  await form.getByLabel("Task").selectOption({ label: "Guardrail" });
  await form.getByRole("button", { name: "Add", exact: true }).click();
  await row("console/guardrail-two").waitFor();
});
await flow("alias", async () => {
  await page.getByRole("navigation", { name: "Kinds of model" }).getByRole("link", { name: "Aliases" }).click();
  await page.getByRole("button", { name: "Create alias" }).click();
  let form = dialog();
  await form.getByLabel("Alias id").fill("console/chat");
  await form.getByLabel("Target's resource name").fill("dev-chat");
  await form.getByRole("button", { name: "Create alias" }).click();
  await row("console/chat").waitFor();
  // Repoint it at the guardrail deployment, then share it with the demo tenant through the SharingEditor.
  await row("console/chat").getByRole("button", { name: /^Edit/ }).click();
  form = dialog();
  await form.getByLabel("Target's resource name").fill("dev-guardrail");
  await form.getByRole("button", { name: "Save alias" }).click();
  await row("console/chat").filter({ hasText: "dev-guardrail" }).waitFor();
  await row("console/chat").getByRole("button", { name: /^Share/ }).click();
  form = dialog();
  await form.getByLabel("Also these tenants").fill(input.tenant);
  await form.getByRole("button", { name: "Save sharing" }).click();
  await form.getByText("Sharing saved.").waitFor();
  await form.getByRole("button", { name: "Close" }).click();
  await row("console/chat").getByRole("button", { name: /^Delete/ }).click();
  await row("console/chat").waitFor({ state: "detached" });
});
await visit("observability", tenantPath("models/observability"), "h2 >> text=Model caches");

// ---- MCP servers ----------------------------------------------------------------------------------------------
await visit("mcp", tenantPath("mcp"), "tbody tr >> text=demo-tools");
await flow("mcp-static-headers", async () => {
  await page.getByRole("button", { name: "Register MCP server" }).click();
  const form = dialog();
  await form.getByLabel("Owner").selectOption("tenant");
  await form.getByLabel("Server URL").fill(input.mcpToolsUrl);
  await form.getByRole("button", { name: "Discover" }).click();
  await form.getByText(/Found.*no authentication/).waitFor();
  await form.getByLabel(/^Name/).fill("hdr_");
  await form.getByLabel("Authentication").selectOption("headers");
  await form.getByLabel("Header 1 name").fill("X-Team");
  await form.getByLabel("Header 1 value").fill("console-test");
  await form.getByRole("button", { name: "Register" }).click();
  await row("hdr_").waitFor();
});
// The registration dialog of an OAuth-protected MCP server, filled in (discovered) but not yet sent.
async function oauthRegistration(url, name, clientId, clientSecret) {
  await page.getByRole("button", { name: "Register MCP server" }).click();
  const form = dialog();
  await form.getByLabel("Owner").selectOption("tenant");
  await form.getByLabel("Server URL").fill(url);
  await form.getByRole("button", { name: "Discover" }).click();
  await form.getByText(/Found.*OAuth/).waitFor();
  await form.getByLabel(/^Name/).fill(name);
  await form.getByLabel("Client id").fill(clientId);
  await form.getByLabel("Client secret").fill(clientSecret);
  return form;
}
// The person's own connection: the popup goes to the authorization server and back to the callback page.
async function connectTo(name) {
  const popupOpened = page.waitForEvent("popup");
  await row(name).getByRole("button", { name: /^Connect/ }).click();
  return popupOpened;
}
await flow("mcp-oauth", async () => {
  const form = await oauthRegistration(input.mcpOAuthUrl, "cal_", input.clientId, input.clientSecret);
  await form.getByLabel("Scopes").fill("calendar");
  await axe().then((found) => { report.flows.registerAxe = found; });
  await screenshots("mcp-register");
  await form.getByRole("button", { name: "Register" }).click();
  await row("cal_").waitFor();
  const popup = await connectTo("cal_");
  await row("cal_").getByText("Connected").waitFor();
  const popupClosed = popup.isClosed() || (await popup.waitForEvent("close", { timeout: 5000 }).then(() => true, () => false));
  await screenshots("mcp-connected");
  return { popupClosed };
});
await flow("mcp-oauth-mixup", async () => {
  // RFC 9207: the hostile server's sign-in page sends the person on to an honest authorization server, whose answer
  // names itself (iss); the console refuses it before asking Switchboard to redeem the code anywhere.
  const form = await oauthRegistration(input.mixupUrl, "mix_", input.mixupClientId, input.mixupClientSecret);
  await form.getByRole("button", { name: "Register" }).click();
  await row("mix_").waitFor();
  await connectTo("mix_");
  const refusal = row("mix_").getByText(/answered by another authorization server/);
  await refusal.waitFor();
  return { refusal: await refusal.innerText() };
});
await visit("network-policies", tenantPath("mcp/network-policies"), "h1 >> text=MCP network policies");
await flow("network-policy", async () => {
  await page.getByRole("button", { name: "Create policy" }).click();
  const form = dialog();
  await form.getByLabel("Allowed networks").fill("10.20.0.0/16, fd12:3456::1");
  await form.getByLabel("Description").fill("console lab");
  await form.getByRole("button", { name: "Create", exact: true }).click();
  await row("console lab").waitFor();
  const networks = await row("console lab").innerText();
  await row("console lab").getByRole("button", { name: /^Delete/ }).click();
  await row("console lab").waitFor({ state: "detached" });
  return { canonical: networks.includes("fd12:3456::1/128") };
});

// ---- RAGs -----------------------------------------------------------------------------------------------------
await visit("rags", tenantPath("rags"), "tbody tr >> text=Demo handbook");
let ragPath = "";
await flow("rag-create", async () => {
  await page.getByRole("button", { name: "Create RAG" }).click();
  const form = dialog();
  await form.getByLabel(/^Name/).fill("console-docs");
  await form.getByLabel("Display name").fill("Console docs");
  await form.getByLabel("Embedding model").selectOption(input.embeddingModel);
  await form.getByRole("button", { name: "Create", exact: true }).click();
  await row("Console docs").waitFor();
  ragPath = new URL(await row("Console docs").getByRole("link").getAttribute("href"), input.base).pathname;
});
if (ragPath) {
  await visit("rag", ragPath, "h1 >> text=Console docs");
  await flow("rag-upload", async () => {
    const folder = join(tmpdir(), `console-upload-${Date.now()}`);
    mkdirSync(folder);
    const one = join(folder, "parking.md");
    const two = join(folder, "lunch.txt");
    writeFileSync(one, "# Parking\n\nVisitors park on level minus two; the barrier opens with the visitor code 4417.\n");
    writeFileSync(two, "Lunch is served in the atrium from noon to two; the soup of the day is lentil.\n");
    // Chosen through the file input (what the keyboard reaches) ...
    await page.getByLabel("Or choose files").setInputFiles([one]);
    // ... and dropped onto the zone, as a drag from the desktop delivers them.
    await page.evaluate(() => {
      const data = new DataTransfer();
      data.items.add(new File(["Lunch is served in the atrium from noon to two; the soup of the day is lentil.\n"], "lunch.txt", { type: "text/plain" }));
      const zone = document.querySelector(".drop-zone");
      zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
      zone.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    const uploads = page.getByRole("list", { name: "Uploads" });
    await uploads.locator("li", { hasText: "parking.md" }).filter({ hasText: "Ready" }).waitFor({ timeout: 60_000 });
    await uploads.locator("li", { hasText: "lunch.txt" }).filter({ hasText: "Ready" }).waitFor({ timeout: 60_000 });
    const progress = await page.locator(".uploads progress").evaluateAll((bars) => bars.map((b) => [b.value, b.max]));
    await row("parking.md").waitFor();
    await page.getByLabel(/^Query/).fill("where do visitors park");
    await page.getByRole("button", { name: "Search" }).click();
    const results = page.getByRole("list", { name: "Matching chunks" });
    await results.waitFor();
    const first = await results.locator("li").first().innerText();
    await screenshots("rag-after-upload");
    return { progress, firstResult: first };
  });
}

// ---- Preset agents ---------------------------------------------------------------------------------------------
await visit("agents", tenantPath("agents"), "tbody tr >> text=demo/assistant");
await flow("agent", async () => {
  await page.getByRole("button", { name: "Create agent" }).click();
  const form = dialog();
  // The owner is asked only of operators who also have the tenant's capability (the demo admin is both).
  await form.getByLabel("Owner").selectOption("tenant");
  await form.getByLabel(/^Name/).fill("console-helper");
  await form.getByLabel(/^Model id/).fill("console/helper");
  // Each choice is searched on the server as the person types (ResourceListService's search), a page at a time.
  const pick = async (search, text, role, name) => {
    await form.getByLabel(search).fill(text);
    await form.getByRole(role, { name, exact: true }).check();
  };
  await pick("Search base model", input.chatModel.slice(-6).toUpperCase(), "radio", input.chatModel);
  await pick("Search guardrails to add", input.guardrailPublicId, "checkbox", input.guardrailPublicId);
  await pick("Search guardrails to add", "GUARDRAIL-TWO", "checkbox", "console/guardrail-two");
  // The search narrowed the results to the one match (both guardrails were listed before it). The box was checked
  // from the earlier listing, perhaps before the search went out: the first guardrail leaving means the search is
  // under way (the results empty while it loads), the match coming back means it has answered.
  const toAdd = form.getByRole("group", { name: "Guardrails to add" });
  await toAdd.getByRole("checkbox", { name: input.guardrailPublicId, exact: true }).waitFor({ state: "detached" });
  await toAdd.getByRole("checkbox", { name: "console/guardrail-two", exact: true }).waitFor();
  const guardrailResults = await toAdd.getByRole("checkbox").count();
  // Keyboard only: focus the second guardrail and move it up with Alt+ArrowUp.
  const second = form.locator(".ordered-list li").nth(1);
  await second.focus();
  await page.keyboard.press("Alt+ArrowUp");
  const order = await form.locator(".ordered-list li .grow").allInnerTexts();
  const announced = await form.getByRole("status").filter({ hasText: "moved to position 1" }).count();
  const focusedAfter = await page.evaluate(() => document.activeElement?.getAttribute("data-key"));
  await form.getByLabel(/Demo tools/).check();
  await form.getByLabel("Demo handbook").check();
  await axe().then((found) => { report.flows.agentEditorAxe = found; });
  await screenshots("agent-editor");
  await form.getByRole("button", { name: "Create agent" }).click();
  await row("console/helper").waitFor();
  const listed = await row("console/helper").innerText();
  return { order, announced, focusedAfter, listed, guardrailResults };
});

// ---- A plain member ---------------------------------------------------------------------------------------------
await flow("memberView", async () => {
  // The same pages for a member of the tenant (their session cookie, as the sign-in sets it): what they may use,
  // and none of the create or manage buttons, since GetSession gives them no such capability.
  const other = await browser.newContext({ viewport: WIDE });
  try {
    await other.addCookies([{ name: "sb_session", value: input.memberSession, url: input.base, httpOnly: true, sameSite: "Strict" }]);
    const view = await other.newPage();
    view.setDefaultTimeout(WAIT);
    const memberSeen = watch(view);
    const manage = /^(Add external model|Create alias|Create RAG|Register MCP server|Create agent|Delete|Edit|Share)/;
    const result = { nav: [], manageButtons: {}, rows: {}, calls: {} };
    for (const [name, path] of [["models", "models"], ["rags", "rags"], ["mcp", "mcp"], ["agents", "agents"]]) {
      result.calls[name] = await load(view, memberSeen, input.base + tenantPath(path), '.table-block[aria-busy="false"]');
      result.manageButtons[name] = await view.getByRole("button", { name: manage }).count();
      result.rows[name] = await view.locator("tbody tr").count();
    }
    result.nav = await view.getByRole("navigation", { name: "Console" }).getByRole("link").allInnerTexts();
    report.errors.push(...memberSeen.errors);
    return result;
  } finally {
    await other.close();
  }
});

writeFileSync(join(input.screenshots, "resources-report.json"), JSON.stringify(report, null, 2));
await browser.close();
console.log(JSON.stringify(report));
