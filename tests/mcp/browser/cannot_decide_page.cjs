// Drives the approval page (/approvals/ui) as an operator who may see an ask but not decide it
// (riskPolicies.critical.approvers): logs in with OPS_TOKEN, records what the card shows and
// whether its buttons are usable, touches the file PAGE_SAW (the lead then decides through the
// API), and waits for the ask to move to the last decisions. Prints one JSON object.
//
// env: APPROVALS_URL (the page), OPS_TOKEN, PAGE_SAW (a path), and launch.cjs's.
"use strict";
const fs = require("fs");
const { launch } = require("./launch.cjs");

async function main() {
  const context = await launch();
  try {
    const page = context.pages()[0] || (await context.newPage());
    await page.goto(process.env.APPROVALS_URL);
    const login = page.locator("#login");
    await login.waitFor({ timeout: 60000 });
    await page.fill("#token", process.env.OPS_TOKEN);
    await login.locator("button[type=submit]").click();
    const card = page.locator(".card:not(.question)");
    await card.first().waitFor({ timeout: 60000 });
    const buttons = card.locator("button");
    const obs = {
      cards: await card.count(),
      risk: await card.locator(".risk").textContent(),
      tool: await card.locator(".tool").textContent(),
      approvers: await card.locator(".approvers").textContent(),
      cannot_decide: await card.locator(".not-decidable").textContent(),
      buttons: await buttons.allTextContents(),
      enabled: await buttons.evaluateAll((bs) => bs.filter((b) => !b.disabled).length),
    };
    fs.writeFileSync(process.env.PAGE_SAW, "");
    await page.locator(".card:not(.question)").waitFor({ state: "detached", timeout: 60000 });
    await page.locator(".decision").first().waitFor({ timeout: 60000 });
    obs.decision = (await page.locator(".decision").first().textContent()).replace(/^\S+\s+/, "");
    console.log(JSON.stringify(obs));
  } finally {
    await context.close();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
