// Shared by the console's browser runs (tests/console/): Debian's chromium through playwright-core, one browser per
// run, with what every page check needs — the API calls a page load makes, an axe-core scan, CSP violations, and
// screenshots at the two widths the tests record.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

export const WIDE = { width: 1280, height: 800 };
export const NARROW = { width: 390, height: 844 };

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** A management API call (Connect or gRPC-Web): /<package>.<Service>/<Method>. */
export function isApiCall(url) {
  const path = new URL(url).pathname;
  return /^\/(platform|switchboard)\.[a-z0-9_.]+\.[A-Za-z]+Service\/[A-Za-z]+$/.test(path);
}

/** Watches a page: every API request (method and path) and every console error (CSP refusals among them). */
export function watch(page) {
  const seen = { api: [], errors: [] };
  page.on("request", (request) => {
    if (isApiCall(request.url())) {
      seen.api.push(new URL(request.url()).pathname);
    }
  });
  page.on("console", (message) => {
    if (message.type() === "error") {
      seen.errors.push(message.text());
    }
  });
  page.on("pageerror", (error) => seen.errors.push(String(error)));
  return seen;
}

/**
 * A full page load of `url` (as a person opening a link): the API calls it made until the network was quiet, and
 * the page once `ready` (a selector) shows.
 */
export async function load(page, seen, url, ready) {
  const before = seen.api.length;
  await page.goto(url, { waitUntil: "networkidle" });
  await page.waitForSelector(ready);
  await page.waitForLoadState("networkidle");
  return seen.api.slice(before);
}

/** axe-core's serious and critical violations on the page as it is (WCAG 2.x A and AA rules). */
export async function axe(page) {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern: the CSP stays as served.
  await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(async () => {
    const found = await window.axe.run(document, { runOnly: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] });
    return found.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5) }));
  });
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/**
 * Full-page screenshots at 1280 and 390 px wide into `dir` as <name>-1280.png and <name>-390.png, and at each width
 * the boxes that spill sideways out of their parent's box (where the parent does not scroll or clip them).
 */
export async function screenshots(page, dir, name) {
  const files = [];
  const spills = [];
  for (const size of [WIDE, NARROW]) {
    await page.setViewportSize(size);
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(resolve))); // laid out at the new width
    const file = `${dir}/${name}-${size.width}.png`;
    await page.screenshot({ path: file, fullPage: true });
    files.push(file);
    spills.push(...(await spilling(page)).map((box) => `${size.width} px: ${box}`));
  }
  await page.setViewportSize(WIDE);
  return { files, spills };
}

/** Block boxes wider than the box they sit in, which shows them over their parent's border or beside it. */
async function spilling(page) {
  return page.evaluate(() => {
    const found = [];
    for (const box of document.querySelectorAll("body *")) {
      const parent = box.parentElement;
      const style = getComputedStyle(box);
      if (!parent || style.display.startsWith("inline") || ["absolute", "fixed"].includes(style.position)) {
        continue;
      }
      if (getComputedStyle(parent).overflowX !== "visible") {
        continue; // a scrolling table or a clipped row: what it holds may be wider by design
      }
      const inner = box.getBoundingClientRect();
      const outer = parent.getBoundingClientRect();
      if (inner.width > 0 && (inner.right > outer.right + 1 || inner.left < outer.left - 1)) {
        const label = (element) => element.tagName.toLowerCase() + (element.className ? `.${element.className}` : "");
        found.push(`${label(box)} in ${label(parent)}`);
      }
    }
    return found.slice(0, 10);
  });
}

/**
 * A recorder of named page loads: `load`s the page afresh, then `pages[name]` holds its URL, the API calls the load
 * made, axe-core's findings and the two screenshots (`<name>-1280.png`, `<name>-390.png` in `dir`).
 */
export function pageLoader(pages, dir) {
  return async (page, seen, name, url, ready) => {
    const calls = await load(page, seen, url, ready);
    pages[name] = { url, calls, axe: await axe(page), shots: await screenshots(page, dir, name) };
  };
}

/**
 * A runner of named flows: each one's result goes to `flows[name]`; a flow that throws is recorded with its error and
 * a screenshot of what the page showed (`failed-<prefix><name>.png` in `dir`, beside the other screenshots).
 */
export function flowRunner(flows, dir, prefix, page) {
  return async (name, run) => {
    try {
      flows[name] = { ok: true, ...((await run()) ?? {}) };
    } catch (error) {
      const shot = `${dir}/failed-${prefix}${name}.png`;
      await page()?.screenshot({ path: shot, fullPage: true }).catch(() => undefined);
      flows[name] = { ok: false, error: String(error).slice(0, 2000), shot };
    }
  };
}
