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
      } else if (event === "WorkflowPaused") {
        answer.stepPaused = data;
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
    if (answer.stepPaused) askStep(answer.stepPaused, bubble);
    else if (answer.paused) askToConfirm(answer.paused, bubble);
  }

  // A workflow paused on a reviewed step (Agno's HumanReview): the active requirement (the last)
  // answered in the page (confirm or reject, input values, a router's routes) and sent back as
  // the run's step_requirements.
  function askStep(paused, bubble) {
    const reqs = paused.step_requirements || [];
    const req = reqs[reqs.length - 1];
    if (!req) return;
    const box = el("div", "paused");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "The workflow waits for you");
    box.appendChild(el("p", null, `Step ${req.step_name || req.step_id} waits for your answer:`));
    const message = req.confirmation_message || req.output_review_message || req.user_input_message;
    if (message) box.appendChild(el("p", "muted", message));
    const values = {};
    if (req.requires_user_input) {
      for (const f of req.user_input_schema || []) {
        if (f.value == null) values[f.name] = answerField(box, f.description ? `${f.name} (${f.description})` : f.name, "text");
      }
    }
    const choices = {};
    if (req.requires_route_selection) {
      for (const c of req.available_choices || []) choices[c] = answerField(box, c, "checkbox");
    }
    const confirming = req.requires_confirmation || req.requires_output_review;
    const decide = async (confirmed) => {
      for (const b of box.querySelectorAll("button, input")) b.disabled = true;
      const answered = Object.assign({}, req);
      if (confirming) answered.confirmed = confirmed;
      if (Object.keys(values).length) {
        answered.user_input = {};
        for (const [name, input] of Object.entries(values)) answered.user_input[name] = input.value;
      }
      if (req.requires_route_selection) answered.selected_choices = Object.keys(choices).filter((c) => choices[c].checked);
      await continueRun(paused.run_id, { step_requirements: JSON.stringify([answered]) });
    };
    answerButtons(box, bubble, confirming, "Continue", decide);
  }

  // A paused run's questions, answered in the page and sent to the run's continue route:
  // confirmations (confirm or reject), results of calls the user executes elsewhere, and values
  // a call asks the user for.
  function askToConfirm(paused, bubble) {
    const box = el("div", "paused");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "The run waits for you");
    box.appendChild(el("p", null, "The run waits for your answer:"));
    const tools = paused.tools || [];
    const confirming = tools.filter((t) => t.requires_confirmation && t.confirmed == null);
    const external = tools.filter((t) => t.external_execution_required && t.result == null);
    const asking = tools.filter((t) => t.requires_user_input && (t.user_input_schema || []).some((f) => f.value == null));
    const inputs = new Map();
    for (const tool of confirming.concat(external, asking)) {
      const line = el("div", "tool");
      line.appendChild(el("code", null, tool.tool_name));
      line.appendChild(el("pre", "args", asText(tool.tool_args)));
      box.appendChild(line);
      if (external.includes(tool)) inputs.set(tool.tool_call_id, { result: answerField(box, `Result of ${tool.tool_name}`, "textarea") });
      if (asking.includes(tool)) {
        const values = {};
        for (const f of tool.user_input_schema || []) {
          if (f.value == null) values[f.name] = answerField(box, f.description ? `${f.name} (${f.description})` : f.name, "text");
        }
        inputs.set(tool.tool_call_id, Object.assign(inputs.get(tool.tool_call_id) || {}, { values }));
      }
    }
    // One call's answer: what the continue route reads for it.
    const answerOf = (tool, confirmed) => {
      const answer = { tool_call_id: tool.tool_call_id };
      const given = inputs.get(tool.tool_call_id) || {};
      if (confirming.includes(tool)) answer.confirmed = confirmed;
      if (given.result) answer.result = given.result.value;
      if (given.values) {
        answer.user_input_schema = (tool.user_input_schema || []).map((f) =>
          Object.assign({}, f, given.values[f.name] ? { value: given.values[f.name].value } : {}));
      }
      return answer;
    };
    const decide = async (confirmed) => {
      for (const b of box.querySelectorAll("button, input, textarea")) b.disabled = true;
      if (confirming.length) box.appendChild(el("p", "muted", confirmed ? "Confirmed." : "Rejected."));
      const answers = confirming.concat(external, asking).map((t) => answerOf(t, confirmed));
      const requirements = (paused.requirements || []).map((r) => {
        const id = r.tool_execution && r.tool_execution.tool_call_id;
        const a = answers.find((x) => x.tool_call_id === id) || {};
        const out = Object.assign({}, r);
        if (a.confirmed !== undefined) out.confirmation = a.confirmed;
        if (a.result !== undefined) out.external_execution_result = a.result;
        if (a.user_input_schema) out.user_input_schema = a.user_input_schema;
        return out;
      });
      await continueRun(paused.run_id, { tools: JSON.stringify(answers), requirements: JSON.stringify(requirements) });
    };
    answerButtons(box, bubble, confirming.length > 0, "Send answer", decide);
  }

  // One input of a pause's answer in `box`, labelled: a text line, a textarea or a checkbox.
  let answerFields = 0;
  function answerField(box, labelText, type) {
    answerFields += 1;
    const input = el(type === "textarea" ? "textarea" : "input");
    input.id = `answer-${answerFields}`;
    if (type !== "textarea") input.type = type;
    const label = el("label", null, labelText);
    label.htmlFor = input.id;
    if (type === "checkbox") {
      label.prepend(input);
      box.appendChild(label);
    } else {
      box.appendChild(label);
      box.appendChild(input);
    }
    return input;
  }

  // The buttons that send a pause's answer (Confirm and Reject when it asks for a confirmation,
  // else one saying `label`); `box` is then shown in `bubble`, its first field focused.
  function answerButtons(box, bubble, confirming, label, decide) {
    const buttons = el("div", "actions");
    const button = (text, cls, confirmed) => {
      const b = el("button", cls, text);
      b.type = "button";
      b.addEventListener("click", () => decide(confirmed));
      buttons.appendChild(b);
    };
    if (confirming) {
      button("Confirm", null, true);
      button("Reject", "secondary", false);
    } else {
      button(label, null, true);
    }
    box.appendChild(buttons);
    bubble.appendChild(box);
    (box.querySelector("input, textarea") || buttons.querySelector("button")).focus();
  }

  // Sends a paused run's answers (`fields` of its continue form) and shows how it carries on.
  async function continueRun(runId, fields) {
    const body = new FormData();
    for (const [name, value] of Object.entries(fields)) body.set(name, value);
    body.set("session_id", form.dataset.session);
    body.set("stream", "true");
    const next = el("div", "msg assistant");
    transcript.appendChild(next);
    await send(`${base}/api/${kind}/${encodeURIComponent(id)}/runs/${encodeURIComponent(runId)}/continue`, body, next);
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
