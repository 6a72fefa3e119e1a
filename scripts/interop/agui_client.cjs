// Drive an AG-UI server with AG-UI's own TypeScript client (`@ag-ui/client`'s HttpAgent), as a
// CopilotKit-style front-end would: a streamed turn, then a turn whose tool call waits for the
// user's confirmation, answered by a tool message `{"accepted": true}` in the next run (the
// client checks every event against the protocol's schemas and order as it goes); then a turn
// that changes the state it shows and calls a tool the front-end executes itself.
//
// Usage: NODE_PATH=<dir>/node_modules node agui_client.cjs URL THREAD_ID
// Prints one JSON line: each run's event types, the waiting tool call and the final messages.

const { HttpAgent } = require("@ag-ui/client");
const { randomUUID } = require("node:crypto");

async function run(agent, label, out, tools = []) {
  const types = [];
  await agent.runAgent(
    { runId: randomUUID(), tools },
    {
      onEvent({ event }) {
        types.push(event.type);
      },
      onRunErrorEvent({ event }) {
        out.errors.push(`${label}: ${event.message}`);
      },
    },
  );
  out[label] = types;
}

async function main() {
  const [url, threadId] = process.argv.slice(2);
  const agent = new HttpAgent({ url, threadId });
  const out = { errors: [] };

  agent.messages = [{ id: randomUUID(), role: "user", content: "hello from ag-ui" }];
  await run(agent, "chat", out);
  const answer = agent.messages.filter((m) => m.role === "assistant").pop();
  out.chat_answer = answer ? answer.content : null;

  agent.messages.push({ id: randomUUID(), role: "user", content: "please add" });
  await run(agent, "paused", out);
  const asking = agent.messages.filter((m) => m.role === "assistant" && m.toolCalls && m.toolCalls.length).pop();
  const call = asking ? asking.toolCalls[0] : null;
  out.waiting = call ? { id: call.id, name: call.function.name } : null;
  if (call) {
    agent.messages.push({
      id: randomUUID(),
      role: "tool",
      toolCallId: call.id,
      content: JSON.stringify({ accepted: true }),
    });
    await run(agent, "resumed", out);
  }
  out.roles = agent.messages.map((m) => m.role);
  out.last = agent.messages[agent.messages.length - 1];

  // A front-end tool: offered to the model with the run, executed here, its result sent back
  // as a tool message; the state the client holds follows the run's STATE_DELTA events.
  const tools = [
    {
      name: "change_background",
      description: "Changes the page's background colour",
      parameters: { type: "object", properties: { color: { type: "string" } }, required: ["color"] },
    },
  ];
  agent.state = { theme: "dark" };
  agent.messages.push({ id: randomUUID(), role: "user", content: "make it light and blue" });
  await run(agent, "frontend", out, tools);
  out.state_after_frontend = agent.state;
  const asked = agent.messages.filter((m) => m.role === "assistant" && m.toolCalls && m.toolCalls.length).pop();
  const frontCall = asked ? asked.toolCalls[asked.toolCalls.length - 1] : null;
  out.frontend_call = frontCall ? { name: frontCall.function.name, arguments: JSON.parse(frontCall.function.arguments) } : null;
  if (frontCall) {
    agent.messages.push({ id: randomUUID(), role: "tool", toolCallId: frontCall.id, content: "the background is blue" });
    await run(agent, "frontend_resumed", out, tools);
  }
  out.final = agent.messages[agent.messages.length - 1];
  out.state = agent.state;
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.log(JSON.stringify({ errors: [String(e && e.stack ? e.stack : e)] }));
  process.exit(1);
});
