// Drives the approval page (/approvals/ui) in Debian's headless Chromium with playwright-core:
// waits for the pending request to appear, records what the page shows, clicks "Approve once",
// and waits for the request to move to the last decisions. Prints one JSON object.
//
// env: APPROVALS_URL (the page), and launch.cjs's.
"use strict";
const { launch } = require("./launch.cjs");

async function main() {
  const context = await launch();
  try {
    const page = context.pages()[0] || (await context.newPage());
    const dialogs = [];
    page.on("dialog", (d) => { dialogs.push(d.message()); d.dismiss(); });
    await page.goto(process.env.APPROVALS_URL);
    const card = page.locator(".card:not(.question)");
    await card.first().waitFor({ timeout: 60000 });
    const obs = {
      title: await page.title(),
      cards: await card.count(),
      risk: await card.locator(".risk").textContent(),
      tool: await card.locator(".tool").textContent(),
      // The full arguments (behind "Full arguments"), shown as JSON with invisible characters
      // as escapes: parsing it gives the arguments back.
      args: JSON.parse(await card.locator("details.full-args pre").textContent()),
      full_args_label: await card.locator("details.full-args summary").textContent(),
      // The summary every channel shows.
      args_text: await card.locator("pre.args").textContent(),
      call_sites: await card.locator("li").allTextContents(),
      buttons: await card.locator("button").allTextContents(),
      countdown: /^Denied automatically in \d+ s$/.test(await card.locator(".countdown").textContent()),
      injected_elements: await page.locator(".card img, .card script").count(),
    };
    await card.locator("button[data-decision=approve_once]").click();
    await page.locator(".card:not(.question)").waitFor({ state: "detached", timeout: 60000 });
    await page.locator(".decision").first().waitFor({ timeout: 60000 });
    obs.decision = (await page.locator(".decision").first().textContent()).replace(/^\S+\s+/, "");
    // Then the script's hitl_request question, with its options.
    const q = page.locator(".card.question");
    await q.waitFor({ timeout: 60000 });
    obs.question = {
      text: await q.locator("pre.args").textContent(),
      buttons: await q.locator("button").allTextContents(),
      injected_elements: await page.locator(".card b").count(),
    };
    await q.locator("button[data-answer=ship]").click();
    await page.locator(".card.question").waitFor({ state: "detached", timeout: 60000 });
    obs.dialogs = dialogs;
    console.log(JSON.stringify(obs));
  } finally {
    await context.close();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
