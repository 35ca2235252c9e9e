// Debian's headless Chromium for the page scripts, through playwright-core, with a fresh profile.
// env: PLAYWRIGHT_CORE (the module's directory), USER_DATA_DIR (fresh).
"use strict";
const { chromium } = require(process.env.PLAYWRIGHT_CORE);

exports.launch = () => chromium.launchPersistentContext(process.env.USER_DATA_DIR, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});
