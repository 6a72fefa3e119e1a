// Drive an A2A server with the official JavaScript A2A SDK (`@a2a-js/sdk` 0.3.x's ClientFactory):
// resolve each component's agent card, send a message, and stream one.
//
// Usage: NODE_PATH=<dir>/node_modules node a2a_js_client.cjs BASE_URL PATH [PATH ...]
//   PATH is a component's A2A base, e.g. /a2a/agents/demo.
// Prints one JSON line: what each step saw per PATH, and `errors`.

const { ClientFactory } = require("@a2a-js/sdk/client");
const { randomUUID } = require("node:crypto");
async function main() {
  const [base, ...paths] = process.argv.slice(2);
  const out = { errors: {} };
  for (const path of paths) {
    try {
      const client = await new ClientFactory().createFromUrl(`${base}${path}/`);
      const message = (text) => ({ kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text }] });
      const sent = await client.sendMessage({ message: message("hello from js") });
      const r = { send: { kind: sent.kind, state: sent.status && sent.status.state, text: sent.history ? sent.history.map((m) => m.parts.map((p) => p.text).join("")).join("") : null } };
      const kinds = [];
      let last = null;
      for await (const event of client.sendMessageStream({ message: message("stream from js") })) {
        kinds.push(event.kind);
        last = event;
      }
      r.stream = { kinds: [...new Set(kinds)], final: last && last.final, state: last && last.status && last.status.state,
        text: last && last.status && last.status.message ? last.status.message.parts.map((p) => p.text).join("") : null };
      out[path] = r;
    } catch (e) {
      out.errors[path] = String(e && e.stack ? e.stack : e);
    }
  }
  console.log(JSON.stringify(out));
}
main();
