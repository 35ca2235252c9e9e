// The peer a user would otherwise pick: an MCP server (the official TypeScript SDK, streamable
// HTTP, one session per client) whose `eval` tool runs the script as an async function body in a
// fresh `node:vm` context, with a 3 s timeout for its synchronous part. `codemode bench --http
// --compare-node DIR` drives it with the same generator as `codemode serve --http`.
// Prints `listening on http://127.0.0.1:PORT/mcp` on stderr once bound (PORT=0 by default).
"use strict";
const http = require("node:http");
const vm = require("node:vm");
const { randomUUID } = require("node:crypto");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { z } = require("zod");

function newServer() {
  const server = new McpServer({ name: "node-vm-peer", version: "1.0.0" });
  server.registerTool(
    "eval",
    { description: "Run JavaScript (an async function body) in a fresh node:vm context", inputSchema: { code: z.string() } },
    async ({ code }) => {
      try {
        const context = vm.createContext({});
        const result = await vm.runInContext(`(async () => {\n${code}\n})()`, context, { timeout: 3000 });
        return { content: [{ type: "text", text: JSON.stringify(result === undefined ? null : result) }] };
      } catch (e) {
        return { content: [{ type: "text", text: String(e && e.stack || e) }], isError: true };
      }
    },
  );
  return server;
}

const sessions = new Map();

async function handle(req, res) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8");
  const body = text ? JSON.parse(text) : undefined;
  const id = req.headers["mcp-session-id"];
  let transport = id && sessions.get(id);
  if (!transport) {
    if (id || req.method !== "POST") {
      res.writeHead(404).end("unknown session");
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => sessions.set(sid, transport),
    });
    transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((e) => {
    if (!res.headersSent) res.writeHead(500).end(String(e));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
  const { port } = server.address();
  process.stderr.write(`listening on http://127.0.0.1:${port}/mcp\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
