// Drives the approval page (/approvals/ui) in Debian's headless Chromium with playwright-core:
// waits for the pending request, records its buttons, clicks "Approve from now on", then waits
// for the next request (which must be the call with other arguments: the identical call is
// not asked about), records it, declines it, and records the last decisions. Prints one JSON
// object.
//
// env: APPROVALS_URL (the page), and launch.cjs's.
"use strict";
const { launch } = require("./launch.cjs");

async function main() {
  const context = await launch();
  try {
    const page = context.pages()[0] || (await context.newPage());
    await page.goto(process.env.APPROVALS_URL);
    const card = page.locator(".card:not(.question)");
    await card.first().waitFor({ timeout: 60000 });
    const obs = {
      buttons: await card.locator("button").allTextContents(),
      first_args: await card.locator("pre.args").textContent(),
    };
    await card.locator("button[data-decision=approve_remember]").click();
    // The next ask on the page: whatever it is, once the first one has gone.
    await page.waitForFunction(() => {
      const args = document.querySelector(".card:not(.question) pre.args");
      return args !== null && !args.textContent.includes('"same"');
    }, null, { timeout: 60000 });
    obs.next_cards = await card.count();
    obs.next_args = await card.locator("pre.args").textContent();
    await card.locator("button[data-decision=decline]").click();
    await card.waitFor({ state: "detached", timeout: 60000 });
    await page.waitForFunction(() => document.querySelectorAll(".decision").length === 2, null,
      { timeout: 60000 });
    obs.decisions = (await page.locator(".decision").allTextContents())
      .map((d) => d.replace(/^\S+\s+/, ""));
    console.log(JSON.stringify(obs));
  } finally {
    await context.close();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
