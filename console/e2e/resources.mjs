// The console's resource pages in Debian's chromium (playwright-core), against the real servers that
// tests/console/test_console_resources.py starts (`serve --demo`, the MCP OAuth stand-in): every page's load (its
// API calls, an axe-core scan, screenshots at 1280 and 390 px) and its main flow. One browser, one session.
// Input: a JSON object in RESOURCES_E2E (base, tenant, mcpOAuthUrl, mcpToolsUrl, devModelsUrl, clientId,
// clientSecret, shots). Output: one JSON line of what was seen, which the Python test judges.
/* global process, console, URL -- Node's */
/* global document, DataTransfer, File, DragEvent -- the page's, inside page.evaluate */
import { mkdirSync, writeFileSync } from "node:fs";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const input = JSON.parse(process.env.RESOURCES_E2E ?? "{}");
const WIDE = { width: 1280, height: 800 };
const NARROW = { width: 390, height: 844 };
const WAIT = 30_000;

const report = { pages: {}, flows: {}, errors: [], gatewayCalls: [] };
mkdirSync(input.shots, { recursive: true });

function isApiCall(url) {
  const path = new URL(url).pathname;
  return /^\/(platform|switchboard)\.[a-z0-9_.]+\.[A-Za-z]+Service\/[A-Za-z]+$/.test(path);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run"],
});
const context = await browser.newContext({ viewport: WIDE });
const page = await context.newPage();
page.setDefaultTimeout(WAIT);
const api = [];
page.on("request", (request) => {
  if (isApiCall(request.url())) {
    api.push(new URL(request.url()).pathname);
  } else if (request.url().startsWith(input.gateway)) {
    report.gatewayCalls.push(`${request.method()} ${new URL(request.url()).pathname}`);
  }
});
page.on("console", (message) => {
  if (message.type() === "error") {
    report.errors.push(message.text());
  }
});
page.on("pageerror", (error) => report.errors.push(String(error)));
page.on("dialog", (dialog) => void dialog.accept()); // the confirm() before a delete

async function axe() {
  await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const result = await window.axe.run(document, { runOnly: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5) }));
  });
  return found.filter((v) => v.impact === "serious" || v.impact === "critical");
}

async function screenshots(name) {
  for (const size of [WIDE, NARROW]) {
    await page.setViewportSize(size);
    await page.waitForTimeout(50);
    await page.screenshot({ path: `${input.shots}/${name}-${size.width}.png`, fullPage: true });
  }
  await page.setViewportSize(WIDE);
}

/** A full page load as a person opening a link: its API calls until the network is quiet, axe, screenshots. */
async function visit(name, path, ready) {
  const before = api.length;
  const started = Date.now();
  await page.goto(input.base + path, { waitUntil: "domcontentloaded" });
  await page.locator(ready).first().waitFor();
  const interactive = Date.now() - started;
  await page.waitForLoadState("networkidle");
  const calls = api.slice(before);
  report.pages[name] = { calls, interactiveMs: interactive, axe: await axe() };
  await screenshots(name);
}

/** A step of a flow: its outcome is recorded, a failure (with a screenshot) does not stop the other flows. */
async function flow(name, steps) {
  try {
    report.flows[name] = { ok: true, ...((await steps()) ?? {}) };
  } catch (error) {
    report.flows[name] = { ok: false, error: String(error).slice(0, 2000) };
    await page.screenshot({ path: `${input.shots}/failed-${name}.png`, fullPage: true }).catch(() => undefined);
  }
}

const tenantPath = (rest) => `/console/t/${encodeURIComponent(input.tenant)}/${rest}`;
const dialog = () => page.locator("dialog[open]");
const row = (text) => page.locator("tbody tr", { hasText: text });

// Sign in (development sign-in of `serve --demo`), landing back on the console.
await page.goto(`${input.base}/console/auth/dev?next=${encodeURIComponent(tenantPath("models"))}`);
await page.waitForLoadState("networkidle"); // the landing page's own calls are not the first visit's

// ---- Models ---------------------------------------------------------------------------------------------------
await visit("models", tenantPath("models"), "tbody tr >> text=dev/stand-in-chat");
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
  const before = api.length;
  await page.getByRole("navigation", { name: "Kinds of model" }).getByRole("link", { name: "External models" }).click();
  await page.getByRole("table", { name: "External models" }).waitFor();
  await page.waitForLoadState("networkidle");
  return { calls: api.slice(before) };
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
await flow("mcp-oauth", async () => {
  await page.getByRole("button", { name: "Register MCP server" }).click();
  const form = dialog();
  await form.getByLabel("Owner").selectOption("tenant");
  await form.getByLabel("Server URL").fill(input.mcpOAuthUrl);
  await form.getByRole("button", { name: "Discover" }).click();
  await form.getByText(/Found.*OAuth/).waitFor();
  await form.getByLabel(/^Name/).fill("cal_");
  await form.getByLabel("Client id").fill(input.clientId);
  await form.getByLabel("Client secret").fill(input.clientSecret);
  await form.getByLabel("Scopes").fill("calendar");
  await axe().then((found) => { report.flows.registerAxe = found; });
  await screenshots("mcp-register");
  await form.getByRole("button", { name: "Register" }).click();
  await row("cal_").waitFor();
  // The person's own connection: the popup goes to the authorization server and back to the callback page.
  const popupOpened = page.waitForEvent("popup");
  await row("cal_").getByRole("button", { name: /^Connect/ }).click();
  const popup = await popupOpened;
  await row("cal_").getByText("Connected").waitFor();
  const popupClosed = popup.isClosed() || (await popup.waitForEvent("close", { timeout: 5000 }).then(() => true, () => false));
  await screenshots("mcp-connected");
  return { popupClosed };
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
  await form.getByLabel("Base model").selectOption(input.chatModel);
  await form.getByLabel("Guardrail to add").selectOption(input.guardrailPublicId);
  await form.getByRole("button", { name: "Add guardrail" }).click();
  await form.getByLabel("Guardrail to add").selectOption("console/guardrail-two");
  await form.getByRole("button", { name: "Add guardrail" }).click();
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
  return { order, announced, focusedAfter, listed };
});

writeFileSync(join(input.shots, "report.json"), JSON.stringify(report, null, 2));
await browser.close();
console.log(JSON.stringify(report));
