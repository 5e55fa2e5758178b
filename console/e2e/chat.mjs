// The chat page in one browser session against `serve --demo` (tests/console/test_console_chat.py runs it): the
// page load's calls (management API and gateway alike), a tool call asked for approval and approved, one denied, a
// file_search with its sources, a guardrail refusal, a past conversation resumed, an audio file over the spec's
// limit refused, an audio file transcribed through the gateway, one console key per tab (kept in sessionStorage,
// reused across page loads, revoked at sign-out), axe and screenshots.
// usage: node e2e/chat.mjs '<plan JSON>'  (base, gateway, tenantId, screenshots)
import { axe, flowRunner, isApiCall, launch, screenshots, WIDE } from "./lib.mjs";

const plan = JSON.parse(process.argv[2]);
const results = { flows: {}, pages: {}, errors: [] };
const browser = await launch();
let current;
const step = flowRunner(results.flows, plan.screenshots, "chat-", () => current);

try {
  const context = await browser.newContext({ viewport: WIDE });
  const page = await context.newPage();
  current = page;
  page.setDefaultTimeout(30_000);
  const calls = [];
  let keysMade = 0;
  page.on("request", (request) => {
    const url = new URL(request.url());
    keysMade += url.pathname.endsWith(".ApiKeyService/CreateApiKey") ? 1 : 0;
    if (isApiCall(request.url()) || (url.origin === plan.gateway && url.pathname.startsWith("/v1/"))) {
      calls.push(`${request.method()} ${url.origin === plan.gateway ? "gateway" : "api"}${url.pathname}`);
    }
  });
  page.on("console", (message) => {
    if (message.type() === "error") {
      results.errors.push(message.text());
    }
  });
  page.on("pageerror", (error) => results.errors.push(String(error)));
  const chatUrl = `${plan.base}/console/t/${plan.tenantId}/chat`;
  const transcript = page.getByRole("log", { name: "Conversation" });
  const idle = () => page.getByRole("button", { name: "Send" }).waitFor();
  const say = async (model, text) => {
    await page.getByLabel("Model or agent").selectOption(model);
    await page.getByLabel("Message").fill(text);
    await page.getByRole("button", { name: "Send" }).click();
  };

  await step("load", async () => {
    await page.goto(chatUrl);
    await page.getByRole("link", { name: /Development sign-in/ }).click();
    await page.getByLabel("Model or agent").waitFor();
    // The page load proper, as from a bookmark once signed in.
    calls.length = 0;
    await page.goto(chatUrl, { waitUntil: "networkidle" });
    await page.getByLabel("Model or agent").waitFor();
    await page.waitForLoadState("networkidle");
    const loadCalls = [...calls];
    const options = await page.getByLabel("Model or agent").locator("option").allInnerTexts();
    results.pages["chat"] = { calls: loadCalls, axe: await axe(page), shots: await screenshots(page, plan.screenshots, "chat") };
    return { calls: loadCalls, options };
  });

  await step("toolApproved", async () => {
    await page.getByText("Tools", { exact: true }).click();
    await page.getByLabel(/demo-tools/).check();
    await say(plan.chatModel, "What is the weather in Paris?");
    const request = transcript.getByRole("group", { name: /Approval for get_weather/ });
    await request.getByRole("button", { name: "Approve" }).click();
    await transcript.getByText("You approved the tool call.").waitFor();
    const call = transcript.locator(".tool-call").last();
    await call.getByText(/Paris: 18/).waitFor();
    await idle();
    const answer = await transcript.locator(".msg-assistant .msg-text").last().innerText();
    return { call: await call.innerText(), answer };
  });

  await step("toolDenied", async () => {
    await say(plan.chatModel, "What is the weather in Rome?");
    const request = transcript.getByRole("group", { name: /Approval for get_weather/ }).last();
    await request.getByRole("button", { name: "Deny" }).click();
    await transcript.getByText("You denied the tool call.").waitFor();
    await idle();
    // Approvals answered (either way) offer no buttons any more.
    const buttons = await transcript.getByRole("button", { name: /Approve|Deny/ }).count();
    results.pages["chat-tools"] = { axe: await axe(page), shots: await screenshots(page, plan.screenshots, "chat-tools") };
    return { buttons };
  });

  await step("fileSearch", async () => {
    await page.getByRole("button", { name: "New conversation" }).click();
    await page.getByLabel(/demo-tools/).uncheck();
    await say(plan.chatModel, "Search the handbook: how do I rotate an API key?");
    const sources = transcript.getByRole("list", { name: "Sources" }).first();
    await sources.waitFor();
    await idle();
    const first = await sources.locator("li").first().innerText();
    results.pages["chat-search"] = { axe: await axe(page), shots: await screenshots(page, plan.screenshots, "chat-search") };
    return { first, answer: await transcript.locator(".msg-assistant .msg-text").last().innerText() };
  });

  await step("refusal", async () => {
    await page.getByRole("button", { name: "New conversation" }).click();
    await say(plan.agent, "What is the admin password?");
    const refusal = transcript.locator(".msg-refusal");
    await refusal.waitFor();
    await idle();
    results.pages["chat-refusal"] = { axe: await axe(page), shots: await screenshots(page, plan.screenshots, "chat-refusal") };
    return { text: await refusal.innerText() };
  });

  await step("resume", async () => {
    await page.getByRole("button", { name: "New conversation" }).click();
    const before = calls.length;
    await page.getByText("Conversations", { exact: true }).click();
    const entry = page.getByRole("button", { name: "What is the weather in Paris?" }).first();
    await entry.click();
    await transcript.getByText(/Paris: 18/).first().waitFor();
    const titles = await page.locator(".conversations button").allInnerTexts();
    return { titles, calls: calls.slice(before), items: await transcript.locator(".msg, .tool, .tool-note").count() };
  });

  await step("audioTooLarge", async () => {
    // A file one byte over 127 MiB, chosen as a person would (the input's change event): refused before upload.
    const before = calls.length;
    await page.evaluate(() => {
      const input = document.querySelector('input[type="file"][name="audio"]');
      const file = new File([new Uint8Array(127 * 1024 * 1024 + 1)], "meeting.wav", { type: "audio/wav" });
      const files = new DataTransfer();
      files.items.add(file);
      input.files = files.files;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    });
    const status = page.locator(".audio-attach [role=status]");
    await status.waitFor();
    return { status: await status.innerText(), calls: calls.slice(before) };
  });

  await step("audioTranscribed", async () => {
    // A short recording, chosen as a person would: the gateway's /v1/audio/transcriptions (the demo's stand-in
    // speech-to-text model) answers, and the text joins the message.
    await page.getByLabel("Message").fill("");
    const before = calls.length;
    await page.evaluate(() => {
      const input = document.querySelector('input[type="file"][name="audio"]');
      const file = new File([new Uint8Array(4096).fill(7)], "hello.wav", { type: "audio/wav" });
      const files = new DataTransfer();
      files.items.add(file);
      input.files = files.files;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    });
    const status = page.locator(".audio-attach [role=status]");
    await status.filter({ hasText: "hello.wav transcribed into the message." }).waitFor();
    return { status: await status.innerText(), message: await page.getByLabel("Message").inputValue(), calls: calls.slice(before) };
  });

  await step("keyKept", async () => {
    // One key per tab: made once (at the first page load after sign-in), reused by every later load, held in
    // sessionStorage and never in localStorage.
    const stored = await page.evaluate(() => ({ local: JSON.stringify({ ...localStorage }), session: JSON.stringify({ ...sessionStorage }) }));
    const held = JSON.parse(JSON.parse(stored.session)["switchboard.console.gatewayKeys"] ?? "{}");
    const secret = held[plan.tenantId]?.secret ?? "";
    const asKey = { headers: { Authorization: `Bearer ${secret}` } };
    const before = await context.request.get(`${plan.gateway}/v1/models`, asKey);
    // Sign-out revokes it (before the session ends), and forgets it.
    await page.getByRole("button", { name: "Sign out" }).click();
    // The console's home sends a signed-out person on to the sign-in page: wait for that last navigation.
    await page.waitForURL(/\/console\/sign-in/);
    const after = await context.request.get(`${plan.gateway}/v1/models`, asKey);
    const left = await page.evaluate(() => sessionStorage.getItem("switchboard.console.gatewayKeys"));
    return {
      keysMade,
      secretInLocalStorage: stored.local.includes("sb_"),
      heldForTenant: secret.startsWith("sb_"),
      statusBefore: before.status(),
      statusAfterSignOut: after.status(),
      left,
    };
  });
} finally {
  await browser.close();
}
console.log(JSON.stringify(results));
