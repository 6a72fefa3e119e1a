// The control plane's one script: the chat page. It sends a message to the component's run
// route through /ui/api (the page's own origin; the server adds the viewer's credentials), reads
// the answer's server-sent events as they come and shows them. Every text from a run is put in
// the page with textContent, never parsed as HTML.
"use strict";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function asText(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

// Reads a text/event-stream body, calling onEvent(name, data) for each event.
async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (!data.length) continue;
      let parsed;
      try { parsed = JSON.parse(data.join("\n")); } catch (_) { parsed = { content: data.join("\n") }; }
      onEvent(name, parsed);
    }
  }
}

// Why a refused request was refused: the route's JSON detail, else its status.
async function reasonOf(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    if (Array.isArray(body.detail)) return body.detail.map((d) => d.msg).join("; ");
  } catch (_) { /* not JSON */ }
  return response.status + " " + response.statusText;
}

function setupChat(form) {
  const base = document.body.dataset.base;
  const kind = form.dataset.kind;
  const id = form.dataset.id;
  const transcript = document.getElementById("transcript");
  const textarea = form.querySelector("textarea");
  const button = form.querySelector("button");

  function busy(on) { button.disabled = on; textarea.disabled = on; }

  // Shows one answer's events in `bubble`; returns when the stream ends.
  async function show(response, bubble) {
    let content = null;
    let reasoning = null;
    const tools = new Map();
    const answer = {};
    const members = new Map();
    // A team streams its members' events beside its own (Team...): each member's answer goes in a
    // box of its own under the leader's.
    function memberBox(data) {
      const who = data.agent_id || data.agent_name || "member";
      if (!members.has(who)) {
        const box = el("details", "member");
        box.appendChild(el("summary", null, "Member " + who));
        const text = el("div", "content");
        box.appendChild(text);
        bubble.appendChild(box);
        members.set(who, text);
      }
      return members.get(who);
    }
    await readEvents(response, (name, data) => {
      if (kind === "teams" && !name.startsWith("Team") && name === "RunContent") {
        if (data.content !== undefined && data.content !== null) memberBox(data).textContent += asText(data.content);
        return;
      }
      const event = name.replace(/^Team/, "");
      if (data.run_id && !answer.runId && event === "RunStarted") answer.runId = data.run_id;
      if (data.session_id) form.dataset.session = data.session_id;
      if (event === "RunContent" || event === "WorkflowAgentContent") {
        if (data.content === undefined || data.content === null) return;
        if (!content) { content = el("div", "content"); bubble.appendChild(content); }
        content.textContent += asText(data.content);
      } else if (event === "ReasoningContentDelta" || event === "ReasoningStep") {
        if (!reasoning) { reasoning = el("div", "reasoning"); bubble.insertBefore(reasoning, bubble.firstChild); }
        reasoning.textContent += asText(data.reasoning_content || data.content);
      } else if (event === "ToolCallStarted" && data.tool) {
        const box = el("details", "tool");
        box.open = true;
        const summary = el("summary", null, "Tool call ");
        summary.appendChild(el("code", null, data.tool.tool_name));
        box.appendChild(summary);
        box.appendChild(el("pre", "args", asText(data.tool.tool_args)));
        tools.set(data.tool.tool_call_id, box);
        bubble.appendChild(box);
        content = null;
      } else if (event === "ToolCallCompleted" && data.tool) {
        const box = tools.get(data.tool.tool_call_id);
        if (box) box.appendChild(el("pre", "result", asText(data.tool.result)));
      } else if (event === "StepStarted" || event === "StepCompleted") {
        bubble.appendChild(el("div", "step", (event === "StepStarted" ? "Step started: " : "Step done: ") + asText(data.step_name)));
      } else if (event === "WorkflowCompleted" && !bubble.querySelector(".content")) {
        bubble.appendChild(el("div", "content", asText(data.content)));
      } else if (event === "RunPaused") {
        answer.paused = data;
        answer.runId = data.run_id || answer.runId;
      } else if (event === "RunError" || event === "WorkflowError") {
        bubble.classList.add("error");
        bubble.appendChild(el("div", "content", asText(data.content || data.error || "the run failed")));
      } else if (event === "RunCompleted" || event === "WorkflowCompleted") {
        answer.runId = data.run_id || answer.runId;
        answer.done = true;
      }
    });
    if (answer.paused) askToConfirm(answer.paused, bubble);
  }

  // A paused run's confirmations, answered with the run's continue route.
  function askToConfirm(paused, bubble) {
    const box = el("div", "paused");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "The run waits for you");
    box.appendChild(el("p", null, "The run waits for your answer:"));
    const waiting = (paused.tools || []).filter((t) => t.requires_confirmation && t.confirmed == null);
    for (const tool of waiting) {
      const line = el("div", "tool");
      line.appendChild(el("code", null, tool.tool_name));
      line.appendChild(el("pre", "args", asText(tool.tool_args)));
      box.appendChild(line);
    }
    const decide = async (confirmed) => {
      for (const b of box.querySelectorAll("button")) b.disabled = true;
      box.appendChild(el("p", "muted", confirmed ? "Confirmed." : "Rejected."));
      const body = new FormData();
      body.set("tools", JSON.stringify(waiting.map((t) => ({ tool_call_id: t.tool_call_id, confirmed }))));
      const requirements = (paused.requirements || []).map((r) => Object.assign({}, r, { confirmation: confirmed }));
      body.set("requirements", JSON.stringify(requirements));
      body.set("session_id", form.dataset.session);
      body.set("stream", "true");
      const next = el("div", "msg assistant");
      transcript.appendChild(next);
      await send(`${base}/api/${kind}/${encodeURIComponent(id)}/runs/${encodeURIComponent(paused.run_id)}/continue`, body, next);
    };
    const yes = el("button", null, "Confirm");
    yes.type = "button";
    yes.addEventListener("click", () => decide(true));
    const no = el("button", "secondary", "Reject");
    no.type = "button";
    no.addEventListener("click", () => decide(false));
    box.appendChild(yes);
    box.appendChild(no);
    bubble.appendChild(box);
    yes.focus();
  }

  async function send(url, body, bubble) {
    busy(true);
    try {
      const response = await fetch(url, { method: "POST", body, headers: { "X-Agno-UI": "1" } });
      if (response.status === 401) { window.location = `${base}/sign-in?reason=${encodeURIComponent(await reasonOf(response))}`; return; }
      if (!response.ok) {
        bubble.classList.add("error");
        bubble.appendChild(el("div", "content", await reasonOf(response)));
        return;
      }
      await show(response, bubble);
    } catch (e) {
      bubble.classList.add("error");
      bubble.appendChild(el("div", "content", "The connection was lost: " + e.message));
    } finally {
      busy(false);
      textarea.focus();
    }
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const message = textarea.value.trim();
    if (!message) return;
    transcript.appendChild(el("div", "msg user", message));
    textarea.value = "";
    const bubble = el("div", "msg assistant");
    transcript.appendChild(bubble);
    const body = new FormData();
    body.set("message", message);
    body.set("stream", "true");
    body.set("session_id", form.dataset.session);
    await send(`${base}/api/${kind}/${encodeURIComponent(id)}/runs`, body, bubble);
  });
  textarea.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("chat-form");
  if (form) setupChat(form);
});
