// The TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, protocol 2025-11-25) as codemode's client.
// Env: CODEMODE_URL (streamable HTTP) or CODEMODE_BIN + CODEMODE_CONFIG (stdio). Needs NODE_PATH
// to point at the test peers' node_modules. Prints one JSON object of observations on stdout.
"use strict";

const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

// Scripted answers to the approval / hitl forms, in order; every question is recorded.
const answers = [
  { action: "accept", content: { decision: "approve_once" } },
  { action: "decline" },
  { action: "accept", content: { answer: "no" } },
];
const asked = [];

const ASKED = (message) => `
try { return await codemode.everything__echo({ message: ${JSON.stringify(message)} }); }
catch (e) { return { name: e.name, reason: e.reason }; }`;

const DENIED = `
try { await codemode["everything__get-sum"]({ a: 1, b: 2 }); return "not denied"; }
catch (e) { return { name: e.name, toolName: e.toolName, reason: e.reason }; }`;

async function main() {
  const url = process.env.CODEMODE_URL;
  const transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({
        command: process.env.CODEMODE_BIN,
        args: ["serve", "--config", process.env.CODEMODE_CONFIG],
        stderr: "inherit",
      });
  // Catch the negotiated protocol version in the initialize result on its way in.
  let protocol = null;
  let onmessage;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => onmessage,
    set: (handler) => {
      onmessage = (message, extra) => {
        if (protocol === null && message.result && message.result.protocolVersion) {
          protocol = message.result.protocolVersion;
        }
        return handler(message, extra);
      };
    },
  });

  const client = new Client(
    { name: "codemode-e2e-ts", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const schema = request.params.requestedSchema || {};
    asked.push({ message: request.params.message, fields: Object.keys(schema.properties || {}).sort() });
    return answers.shift() || { action: "decline" };
  });
  await client.connect(transport);

  const evaluate = async (code, name = "eval") => {
    const r = await client.callTool({ name, arguments: { code } });
    const text = r.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
    return { is_error: Boolean(r.isError), structured: r.structuredContent, text };
  };

  const out = { protocol };
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.parallel = await evaluate(`
    const [now, echo] = await Promise.all([
      codemode.time__get_current_time({ timezone: "UTC" }),
      codemode.everything__echo({ message: "hi" }),
    ]);
    return { timezone: now.timezone, echo };`);
  out.denied = await evaluate(DENIED, "codemode_eval_sup");
  out.accepted = await evaluate(ASKED("accepted"), "codemode_eval_sup");
  out.declined = await evaluate(ASKED("declined"), "codemode_eval_sup");
  out.hitl = await evaluate(
    'return await codemode.hitl_request({ question: "Ship it?", options: ["yes", "no"] });',
  );
  out.failing = await evaluate("null.x");
  out.search = (await client.callTool({ name: "search_tools", arguments: { query: "current time" } })).structuredContent;
  out.asked = asked;
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e && e.stack ? e.stack : e);
    process.exit(1);
  },
);
