"""Shape parity between agno-rs (`agno serve`) and Python AgentOS 3.1: the same scripted sequence
of requests against both, comparing status codes, content types and the shape of every JSON
answer (key sets and value types, recursively; values such as ids and timestamps are ignored).

Usage: shape_parity.py --rs URL --py URL [--json]

Both servers must serve one agent `demo` on the same fake OpenAI model with history on, each on a
database of its own (scripts/interop/python_agentos.py starts the Python side). The result is one
JSON object on stdout: `differences` (step -> list of differences not in ALLOWED), `allowed`
(the documented ones that were seen) and `steps` (how many). Exit status 0 even with differences;
the caller (crates/agno-cli/tests/parity.rs) asserts on the JSON.

A difference is a string such as `status 200 != 404`, `$.data[].session_name: str != null`,
`$.metrics: missing in rs` or `$.foo: extra in rs`. `null` matches every type (absent-but-typed
values are data, not shape), except against a missing key.
"""

import argparse
import json
import re
import sys
import time
import uuid

import httpx

# Differences agno-rs keeps on purpose: (step, difference prefix) -> why. Each is documented in
# the README ("Deliberate differences from Python AgentOS"). A step of "*" matches every step.
ALLOWED = {
    ("*", "$RunStarted.event_index: extra in rs"): "every SSE event carries event_index (resume)",
    ("*", "$ModelRequestStarted.event_index: extra in rs"): "every SSE event carries event_index (resume)",
    ("*", "$ModelRequestCompleted.event_index: extra in rs"): "every SSE event carries event_index (resume)",
    ("*", "$RunContent.event_index: extra in rs"): "every SSE event carries event_index (resume)",
    ("*", "$RunContentCompleted.event_index: extra in rs"): "every SSE event carries event_index (resume)",
    ("*", "$RunCompleted.event_index: extra in rs"): "every SSE event carries event_index (resume)",
    ("*", "$[].events[].event_index: extra in rs"): "stored events keep their event_index (resume)",
    ("*", "$.events[].event_index: extra in rs"): "stored events keep their event_index (resume)",
    ("agent run without session_id", ""): "session_id is optional on GET /agents/{id}/runs/{run_id} (Python: 422)",
    # Python 3.1.10 also saves each agent step's run as an agent run of the workflow's session (and
    # the session itself as an agent session), marking streamed ones CANCELLED with a RunCancelled
    # event; agno-rs keeps step runs only inside the workflow run (`step_executor_runs`).
    ("workflow session runs", "$[]."): "Python 3.1.10 lists its workflow steps' agent runs in the workflow session",
    ("workflow session", "$.session_data.session_metrics."): (
        "Python 3.1.10's agent steps overwrite the workflow session with their own (metrics, session_type agent)"
    ),
    ("workflow run streamed", "$WorkflowCompleted.step_executor_runs[].events[].reason: missing in rs"): (
        "Python 3.1.10 records RunCancelled on a streamed agent step whose stream it closed"
    ),
    ("workflow run streamed", "$WorkflowCompleted.step_executor_runs[].messages[].metrics.duration: extra in rs"): (
        "agno-rs times every assistant message; Python's streamed agent steps do not"
    ),
    # The fake provider echoes, so the "summary" is longer than the memories: Python 3.1.10's
    # response model refuses its negative tokens_saved with a 500; agno-rs reports 0 saved.
    ("optimize memories preview", ""): "Python 3.1.10 answers 500 when optimization saves no tokens",
    # Knowledge: each side lists the readers and chunkers it has (data, not shape), and Python keeps
    # an internal marker in the content metadata.
    ("knowledge config", "$.chunkers."): "each side lists the chunkers it has",
    ("knowledge config", "$.readers."): "each side lists the readers it has",
    ("knowledge config", "$.readersForType."): "each side lists the readers it has",
    ("knowledge config", "$.unavailable_"): "Python lists readers and chunkers whose packages are missing",
    ("*", "$.metadata._agno: missing in rs"): "Python's internal indexing marker in content metadata",
    ("*", "$.data[].metadata._agno: missing in rs"): "Python's internal indexing marker in content metadata",
    # Traces: input Python answers with 200 (an empty page), 400 or 500 is refused with a 422 naming it.
    ("trace search bad field", ""): "an unknown filter field is a 422 (Python 3.1.10: 200 with no traces)",
    ("trace search bad operator", ""): "an unknown filter operator is a 422 (Python 3.1.10: 400)",
    ("traces bad time", ""): "a malformed time is a 422 (Python 3.1.10: 500)",
    # The fake model answers a team's leader with a delegation without arguments, which fails on
    # both sides. Python 3.1.10 makes no span for a team's delegations; agno-rs makes a TOOL span
    # (the member's run nests under it), so its team trace shows the failed call and is ERROR
    # (left out of the steps that filter on status OK).
    ("team trace", "$.output: missing in rs"): "agno-rs traces a team's (failed) delegation: the trace is ERROR",
    ("team trace", "$.tree[].spans[].error: extra in rs"): "agno-rs traces a team's delegations as TOOL spans",
    ("team trace", "$.tree[].spans[].metadata.parameters: extra in rs"): "agno-rs traces a team's delegations",
    ("team trace", "$.tree[].spans[].metadata.tool_name: extra in rs"): "agno-rs traces a team's delegations",
    ("traces of a user", "$.data[].team_id: missing in rs"): "agno-rs's team trace is ERROR (its failed delegation)",
    ("trace search", "$.data[].team_id: missing in rs"): "agno-rs's team trace is ERROR (its failed delegation)",
    # A published config must build on agno-rs (a model it knows, its toolkits, its knowledge);
    # Python 3.1.10 stores any config and fails when it runs.
    ("publish what cannot run", ""): "agno-rs refuses to publish a config it cannot build (422 naming the field)",
    # The registry: agno-rs lists its built-in toolkits (as Agno lists a toolkit: `is_toolkit` and its
    # `functions`); the Python AgentOS of the test registers no tools.
    ("registry", "$.data[].metadata.functions: extra in rs"): "agno-rs's registry lists its built-in toolkits",
    ("registry", "$.data[].metadata.is_toolkit: extra in rs"): "agno-rs's registry lists its built-in toolkits",
    ("agents with a draft", "$[].system_message.instructions: list != str"): "agno-rs describes instructions as a list",
    ("draft agent", "$.system_message.instructions: list != str"): "agno-rs describes instructions as a list",
    ("draft agent", "$.sessions.add_history_to_context: extra in rs"): (
        "a catalog agent keeps agentos.toml's default (history on with a database; Agno's Agent: off)"
    ),
    # Schedules: agno-rs refuses an endpoint that is not one of its routes (the schedule could only
    # fail); Python 3.1.10 stores it.
    ("schedule outside the os", ""): "agno-rs refuses a schedule of an endpoint that is not a route of the OS (422)",
    # A run continued beyond its end (a fork, a regenerate) answers with its events, as every
    # run agno-rs stores keeps them (Python 3.1.10 answers an agent's without and a team's with);
    # an agent's fork without tool calls has no `tools` key (Python 3.1.10 answers one).
    ("agent run continued when finished", "$.events: extra in rs"): "a continued run keeps its events (resume)",
    ("agent run regenerated", "$.events: extra in rs"): "a continued run keeps its events (resume)",
    ("agent run continued when finished", "$.tools: missing in rs"): "no tools key for a run without tool calls",
    ("agent run regenerated", "$.tools: missing in rs"): "no tools key for a run without tool calls",
    ("team run continued when finished", "$.events: missing in rs"): "a team's inline continue answers without its events",
    # Approvals: deleting an approval that does not exist is a 404 (Python 3.1.10: 500 "Failed to
    # delete approval").
    ("delete approval missing", ""): "deleting an unknown approval is a 404 (Python 3.1.10: 500)",
    # Compaction: another agent's session is a 404 whether or not auth is on (Python 3.1.10 checks
    # that the session is the agent's only under authorization, and folds it with the wrong agent).
    ("compact of another agent", ""): "another agent's session is a 404 (Python 3.1.10: only with auth on)",
    ("*", "$RunCompleted.session_state.current_"): (
        "Agno's workflow adds current_run_id/current_session_id/current_user_id to the state it hands to "
        "steps; agno-rs keeps bookkeeping keys out of user state"
    ),
    # A2A: the protocol's errors (JSON-RPC error objects, HTTP 200) where Python 3.1.10 answers
    # HTTP errors; a streamed answer as artifact updates and a final status update carrying it
    # (the A2A SDK clients refuse Python's streamed messages and its second task).
    ("a2a task get missing", ""): "an unknown task is A2A's TaskNotFoundError (Python 3.1.10: HTTP 404)",
    ("a2a cancel ended", ""): "cancelling an ended task is A2A's TaskNotCancelableError (Python: canceled)",
    ("a2a send from an agent role", ""): "a message not from the user is JSON-RPC -32602 (Python 3.1.10: HTTP 400)",
    ("a2a stream", "events "): "deltas are artifact updates and the final status update carries the answer",
    ("a2a stream", "$TaskStatusUpdateEvent.result.status.message: extra in rs"): (
        "the final status update carries the answer (Python sends a Task after it)"
    ),
    ("agui run with a client tool", "events "): (
        "Python opens and closes an empty text message for the model's tool-call turn (its agent streams a "
        "RunContent without content); agno-rs streams no empty content"
    ),
    # A2A v1.0 beside v0.3 (as Agno 3.2): the card lists both protocol versions of the endpoint.
    **{
        (f"{kind} card", "$.supportedInterfaces: extra in rs"): "the card lists the endpoint at A2A 1.0 and 0.3"
        for kind in ("agent", "team", "workflow")
    },
}


def shape(value):
    """The shape of a JSON value: a type name, a dict of shapes, or a one-element list."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        merged = None
        for item in value:
            merged = merge(merged, shape(item))
        return [merged]
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return type(value).__name__


def merge(a, b):
    """Union of two shapes (element shapes of a list)."""
    if a is None:
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = merge(out.get(k), v)
        return out
    if a == "null":
        return b
    return a


def compare(rs, py, path="$"):
    """Differences between two shapes (rs: agno-rs, py: Python)."""
    out = []
    if isinstance(rs, dict) and isinstance(py, dict):
        for k in sorted(set(py) - set(rs)):
            out.append(f"{path}.{k}: missing in rs")
        for k in sorted(set(rs) - set(py)):
            out.append(f"{path}.{k}: extra in rs")
        for k in sorted(set(rs) & set(py)):
            out.extend(compare(rs[k], py[k], f"{path}.{k}"))
        return out
    if isinstance(rs, list) and isinstance(py, list):
        if rs[0] is None or py[0] is None:
            return out
        return compare(rs[0], py[0], f"{path}[]")
    if rs == "null" or py == "null" or rs == py:
        return out
    name = lambda s: "object" if isinstance(s, dict) else "list" if isinstance(s, list) else s  # noqa: E731
    out.append(f"{path}: {name(rs)} != {name(py)}")
    return out


def sse_events(text):
    """(event name, data JSON) of each frame of an SSE body."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if name or data:
            try:
                payload = json.loads("\n".join(data)) if data else None
            except ValueError:
                payload = "\n".join(data)
            events.append((name, payload))
    return events


ORIGIN = "http://localhost:3000"


class Side:
    """One server and what the sequence learned from it (ids differ per server)."""

    def __init__(self, name, base):
        self.name = name
        # Every request comes from Agent UI's origin, as a browser sends it: both servers allow it
        # by default, and what they answer to it (the allowed origin echoed) is compared too.
        self.client = httpx.Client(base_url=base, timeout=30, headers={"Origin": ORIGIN})
        self.vars = {
            "session": "parity-" + uuid.uuid4().hex[:8],
            "wsession": "parity-wf-" + uuid.uuid4().hex[:8],
            "tsession": "parity-team-" + uuid.uuid4().hex[:8],
            "asession": "parity-approval-" + uuid.uuid4().hex[:8],
        }

    def request(self, method, path, **kwargs):
        path = path.format(**self.vars)
        return self.client.request(method, path, **kwargs)


def answer(resp):
    """What is compared of a response: status, media type, and the body's shape."""
    media = resp.headers.get("content-type", "").split(";")[0].strip()
    out = {"status": resp.status_code, "media": media,
           "allow_origin": resp.headers.get("access-control-allow-origin")}
    if media == "application/json":
        try:
            out["shape"] = shape(resp.json()) if resp.content else "empty body"
        except ValueError:
            out["shape"] = "invalid JSON"
    elif media == "text/event-stream":
        # agno-rs sends no content event for a provider's empty first chunk (README: deliberate
        # differences); Python's empty ones are left out of the comparison.
        # A frame without an `event:` line (AG-UI's) is named by its `type`.
        out["events"] = [
            (name or (data.get("type") if isinstance(data, dict) else None), shape(data))
            for name, data in sse_events(resp.text)
            if not (name in ("RunContent", "TeamRunContent") and isinstance(data, dict) and data.get("content") in ("", None))
        ]
    return out


def diff_answers(rs, py):
    out = []
    if rs["status"] != py["status"]:
        out.append(f"status {rs['status']} != {py['status']}")
    if rs["media"] != py["media"]:
        out.append(f"content-type {rs['media']} != {py['media']}")
    if "shape" in rs and "shape" in py:
        out.extend(compare(rs["shape"], py["shape"]))
    if "events" in rs and "events" in py:
        # How many content deltas a reply streams is data, not shape: runs of one name collapse.
        collapse = lambda names: [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]  # noqa: E731
        rs_names = collapse([n for n, _ in rs["events"] if n])
        py_names = collapse([n for n, _ in py["events"] if n])
        if rs_names != py_names:
            out.append(f"events {rs_names} != {py_names}")
        py_by_name = {}
        for n, s in py["events"]:
            py_by_name[n] = merge(py_by_name.get(n), s)
        rs_by_name = {}
        for n, s in rs["events"]:
            rs_by_name[n] = merge(rs_by_name.get(n), s)
        for n in sorted(set(rs_by_name) & set(py_by_name)):
            out.extend(compare(rs_by_name[n], py_by_name[n], f"${n}"))
    return out


def steps():
    """The scripted sequence: (name, method, path, request kwargs, capture)."""
    form_run = {"message": "hello parity", "stream": "false", "session_id": "{session}", "user_id": "u1"}
    return [
        ("health", "GET", "/health", {}, None),
        ("health trailing slash", "GET", "/health/", {}, None),
        ("info", "GET", "/info", {}, None),
        ("config", "GET", "/config", {}, lambda s, b: s.vars.update(db_id=b["databases"][0] if b.get("databases") else "")),
        ("agents", "GET", "/agents", {}, None),
        ("agents trailing slash", "GET", "/agents/", {}, None),
        ("agent", "GET", "/agents/demo", {}, None),
        ("agent missing", "GET", "/agents/missing", {}, None),
        ("teams", "GET", "/teams", {}, None),
        ("workflows", "GET", "/workflows", {}, None),
        ("traces", "GET", "/traces", {}, None),
        ("knowledge config", "GET", "/knowledge/config", {}, None),
        ("run", "POST", "/agents/demo/runs", {"data": form_run}, lambda s, b: s.vars.update(run=b["run_id"])),
        ("run without message", "POST", "/agents/demo/runs", {"data": {"stream": "false"}}, None),
        (
            "run streamed",
            "POST",
            "/agents/demo/runs",
            {"data": {"message": "stream please", "session_id": "{session}", "user_id": "u1"}},
            None,
        ),
        ("agent runs", "GET", "/agents/demo/runs?session_id={session}", {}, None),
        ("agent run", "GET", "/agents/demo/runs/{run}?session_id={session}", {}, None),
        ("agent run without session_id", "GET", "/agents/demo/runs/{run}", {}, None),
        ("agent run checkpoints", "GET", "/agents/demo/runs/{run}/checkpoints?session_id={session}", {}, None),
        ("agent run checkpoint", "GET", "/agents/demo/runs/{run}/checkpoints/1?session_id={session}", {}, None),
        ("agent run checkpoint past", "GET", "/agents/demo/runs/{run}/checkpoints/99?session_id={session}", {}, None),
        ("agent run checkpoint not a number", "GET", "/agents/demo/runs/{run}/checkpoints/x?session_id={session}", {}, None),
        ("agent run checkpoints without session", "GET", "/agents/demo/runs/{run}/checkpoints", {}, None),
        ("agent run checkpoints of another session", "GET", "/agents/demo/runs/{run}/checkpoints?session_id=nope", {}, None),
        ("session fork", "POST", "/agents/demo/sessions/{session}/fork", {}, None),
        ("session fork of nothing", "POST", "/agents/demo/sessions/missing-session/fork", {}, None),
        ("agent run continued when finished", "POST", "/agents/demo/runs/{run}/continue", {"data": {"stream": "false", "session_id": "{session}"}}, None),
        ("agent run regenerated", "POST", "/agents/demo/runs/{run}/continue", {"data": {"stream": "false", "session_id": "{session}", "regenerate": "true"}}, None),
        ("cancel finished run", "POST", "/agents/demo/runs/{run}/cancel", {}, None),
        ("sessions", "GET", "/sessions", {}, None),
        ("sessions trailing slash", "GET", "/sessions/", {}, None),
        ("sessions of agent", "GET", "/sessions?type=agent&component_id=demo&db_id={db_id}", {}, None),
        ("session", "GET", "/sessions/{session}", {}, None),
        ("session runs", "GET", "/sessions/{session}/runs", {}, None),
        ("session run", "GET", "/sessions/{session}/runs/{run}", {}, None),
        ("session run previews", "GET", "/sessions/{session}/run-previews", {}, None),
        ("session missing", "GET", "/sessions/missing-session", {}, None),
        ("session media without a media storage", "GET", "/sessions/{session}/media/some-key.png", {}, None),
        ("rename session", "POST", "/sessions/{session}/rename", {"json": {"session_name": "renamed"}}, None),
        ("sessions after rename", "GET", "/sessions", {}, None),
        ("update session", "PATCH", "/sessions/{session}", {"json": {"metadata": {"k": "v"}}}, None),
        (
            "create memory",
            "POST",
            "/memories",
            {"json": {"memory": "likes tea", "user_id": "u1", "topics": ["drinks"]}},
            lambda s, b: s.vars.update(memory=b["memory_id"]),
        ),
        ("create memory invalid", "POST", "/memories", {"json": {"user_id": "u1"}}, None),
        ("memories", "GET", "/memories?user_id=u1", {}, None),
        ("memory", "GET", "/memories/{memory}?user_id=u1", {}, None),
        ("update memory", "PATCH", "/memories/{memory}", {"json": {"memory": "likes green tea", "user_id": "u1"}}, None),
        # Both servers build "openai-chat:..." from OPENAI_BASE_URL / OPENAI_API_KEY (the fake provider).
        (
            "optimize memories preview",
            "POST",
            "/optimize-memories",
            {"json": {"user_id": "u1", "model": "openai-chat:gpt-4o-mini", "apply": False}},
            None,
        ),
        (
            "optimize memories of nobody",
            "POST",
            "/optimize-memories",
            {"json": {"user_id": "nobody", "model": "openai-chat:gpt-4o-mini"}},
            None,
        ),
        ("memory topics", "GET", "/memory_topics", {}, None),
        ("user memory stats", "GET", "/user_memory_stats", {}, None),
        ("delete memory", "DELETE", "/memories/{memory}?user_id=u1", {}, None),
        ("delete missing memory", "DELETE", "/memories/missing-memory?user_id=u1", {}, None),
        ("refresh metrics", "POST", "/metrics/refresh", {}, None),
        ("metrics", "GET", "/metrics", {}, None),
        (
            "eval run reliability",
            "POST",
            "/eval-runs",
            {"json": {"agent_id": "demo", "eval_type": "reliability", "input": "Use the search tool",
                      "expected_tool_calls": ["search"], "name": "tools"}},
            None,
        ),
        ("eval run bad type", "POST", "/eval-runs", {"json": {"agent_id": "demo", "eval_type": "guess", "input": "x"}}, None),
        ("eval runs", "GET", "/eval-runs", {}, None),
        ("eval run missing", "GET", "/eval-runs/missing-eval", {}, None),
        ("workflow", "GET", "/workflows/flow", {}, None),
        ("workflow missing", "GET", "/workflows/missing", {}, None),
        (
            "workflow run",
            "POST",
            "/workflows/flow/runs",
            {"data": {"message": "hello flow", "stream": "false", "session_id": "{wsession}", "user_id": "u1"}},
            lambda s, b: s.vars.update(wrun=b["run_id"]),
        ),
        ("workflow run without message", "POST", "/workflows/flow/runs", {"data": {"stream": "false"}}, None),
        (
            "workflow run streamed",
            "POST",
            "/workflows/flow/runs",
            {"data": {"message": "stream flow", "session_id": "{wsession}", "user_id": "u1"}},
            None,
        ),
        ("workflow runs", "GET", "/workflows/flow/runs?session_id={wsession}", {}, None),
        ("workflow run read", "GET", "/workflows/flow/runs/{wrun}?session_id={wsession}", {}, None),
        ("cancel finished workflow run", "POST", "/workflows/flow/runs/{wrun}/cancel", {}, None),
        ("team", "GET", "/teams/desk", {}, None),
        ("team missing", "GET", "/teams/missing", {}, None),
        (
            "team run",
            "POST",
            "/teams/desk/runs",
            {"data": {"message": "hello desk", "stream": "false", "session_id": "{tsession}", "user_id": "u1"}},
            lambda s, b: s.vars.update(trun=b["run_id"]),
        ),
        ("team run without message", "POST", "/teams/desk/runs", {"data": {"stream": "false"}}, None),
        (
            "team run streamed",
            "POST",
            "/teams/desk/runs",
            {"data": {"message": "stream desk", "session_id": "{tsession}", "user_id": "u1"}},
            None,
        ),
        ("team runs", "GET", "/teams/desk/runs?session_id={tsession}", {}, None),
        ("team run read", "GET", "/teams/desk/runs/{trun}?session_id={tsession}", {}, None),
        ("team run checkpoints", "GET", "/teams/desk/runs/{trun}/checkpoints?session_id={tsession}", {}, None),
        ("team run checkpoint", "GET", "/teams/desk/runs/{trun}/checkpoints/1?session_id={tsession}", {}, None),
        ("team session fork", "POST", "/teams/desk/sessions/{tsession}/fork", {}, None),
        ("team run continued when finished", "POST", "/teams/desk/runs/{trun}/continue", {"data": {"stream": "false", "session_id": "{tsession}"}}, None),
        ("cancel finished team run", "POST", "/teams/desk/runs/{trun}/cancel", {}, None),
        (
            "continue team run without session",
            "POST",
            "/teams/desk/runs/{trun}/continue",
            {"data": {"requirements": "[]", "stream": "false"}},
            None,
        ),
        (
            "continue team run with bad requirements",
            "POST",
            "/teams/desk/runs/{trun}/continue",
            {"data": {"requirements": "[{{", "stream": "false", "session_id": "{tsession}"}},
            None,
        ),
        ("team sessions", "GET", "/sessions?type=team", {}, None),
        ("team session", "GET", "/sessions/{tsession}?type=team", {}, None),
        ("team session runs", "GET", "/sessions/{tsession}/runs?type=team", {}, None),
        ("workflow sessions", "GET", "/sessions?type=workflow", {}, None),
        ("workflow session", "GET", "/sessions/{wsession}?type=workflow", {}, None),
        ("workflow session runs", "GET", "/sessions/{wsession}/runs?type=workflow", {}, None),
        ("delete session", "DELETE", "/sessions/{session}", {}, None),
        ("deleted session", "GET", "/sessions/{session}", {}, None),
    ]


def settle_upload(side, body):
    """Capture of an upload: its id, then wait (bounded) until the side has processed it."""
    import time

    side.vars["content"] = body["id"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status = side.request("GET", "/knowledge/content/{content}/status").json().get("status")
        if status != "processing":
            return
        time.sleep(0.05)
    raise ValueError(f"{side.name}: content still processing after 20 s")


def knowledge_steps():
    """The knowledge sequence: one knowledge base `docs` with an embedder on both sides."""
    search = lambda **kw: {"json": {"query": "tulips lake", **kw}}  # noqa: E731
    return [
        ("knowledge config", "GET", "/knowledge/config", {}, None),
        (
            "upload text",
            "POST",
            "/knowledge/content",
            {"files": {"text_content": (None, "Ann grows blue tulips by the lake"), "name": (None, "ann"),
                       "metadata": (None, '{"kind": "note"}')}},
            settle_upload,
        ),
        ("content status", "GET", "/knowledge/content/{content}/status", {}, None),
        ("content list", "GET", "/knowledge/content", {}, None),
        ("content", "GET", "/knowledge/content/{content}", {}, None),
        ("content missing", "GET", "/knowledge/content/missing-content", {}, None),
        ("search", "POST", "/knowledge/search", search(), None),
        ("search keyword", "POST", "/knowledge/search", search(search_type="keyword"), None),
        ("search vector", "POST", "/knowledge/search", search(search_type="vector"), None),
        ("search hybrid", "POST", "/knowledge/search", search(search_type="hybrid"), None),
        ("search filtered", "POST", "/knowledge/search", search(filters={"kind": "note"}), None),
        ("search paged", "POST", "/knowledge/search", search(meta={"limit": 1, "page": 2}), None),
        ("upload nothing", "POST", "/knowledge/content", {"files": {"description": (None, "no content")}}, None),
        (
            "patch content",
            "PATCH",
            "/knowledge/content/{content}",
            {"files": {"name": (None, "tulips"), "metadata": (None, '{"topic": "flowers"}')}},
            None,
        ),
        ("patched content", "GET", "/knowledge/content/{content}", {}, None),
        ("search patched", "POST", "/knowledge/search", search(filters={"topic": "flowers"}), None),
        ("patch bad metadata", "PATCH", "/knowledge/content/{content}", {"files": {"metadata": (None, "{no")}}, None),
        ("patch missing", "PATCH", "/knowledge/content/missing-content", {"files": {"name": (None, "x")}}, None),
        ("delete content", "DELETE", "/knowledge/content/{content}", {}, None),
        ("deleted content", "GET", "/knowledge/content/{content}", {}, None),
        (
            "upload again",
            "POST",
            "/knowledge/content",
            {"files": {"text_content": (None, "Bob grows red tulips by the road"), "name": (None, "bob")}},
            settle_upload,
        ),
        ("delete all content", "DELETE", "/knowledge/content", {}, None),
        ("content list emptied", "GET", "/knowledge/content", {}, None),
    ]


def capture_schedule(side, body):
    side.vars["schedule"] = body["id"]


def capture_schedule_run(side, body):
    side.vars["schedule_run"] = body["id"]


def schedule_steps():
    """The schedules sequence: CRUD, bad input, enable/disable and a trigger of agent `demo`."""
    good = {
        "name": "nightly", "cron_expr": "0 3 * * *", "endpoint": "/agents/demo/runs",
        "payload": {"message": "nightly report"}, "description": "every night",
    }
    create = lambda **kw: {"json": {**good, **kw}}  # noqa: E731
    return [
        ("schedules empty", "GET", "/schedules", {}, None),
        ("schedule create", "POST", "/schedules", create(), capture_schedule),
        ("schedule duplicate", "POST", "/schedules", create(), None),
        ("schedule bad cron", "POST", "/schedules", create(name="b1", cron_expr="61 * * * *"), None),
        ("schedule bad timezone", "POST", "/schedules", create(name="b2", timezone="Mars/Olympus"), None),
        ("schedule bad method", "POST", "/schedules", create(name="b3", method="TRACE"), None),
        ("schedule bad endpoint", "POST", "/schedules", create(name="b4", endpoint="agents/demo/runs"), None),
        ("schedule bad retries", "POST", "/schedules", create(name="b5", max_retries=11), None),
        ("schedule outside the os", "POST", "/schedules", create(name="b6", endpoint="/nowhere"), None),
        ("schedules", "GET", "/schedules", {}, None),
        ("schedules enabled", "GET", "/schedules?enabled=true&limit=1", {}, None),
        ("schedule", "GET", "/schedules/{schedule}", {}, None),
        ("schedule missing", "GET", "/schedules/missing-schedule", {}, None),
        ("schedule patch", "PATCH", "/schedules/{schedule}", {"json": {"description": "changed", "cron_expr": "0 4 * * *"}}, None),
        ("schedule patch null", "PATCH", "/schedules/{schedule}", {"json": {"name": None}}, None),
        ("schedule patch bad cron", "PATCH", "/schedules/{schedule}", {"json": {"cron_expr": "nope"}}, None),
        ("schedule disable", "POST", "/schedules/{schedule}/disable", {}, None),
        ("schedule trigger disabled", "POST", "/schedules/{schedule}/trigger", {}, None),
        ("schedule enable", "POST", "/schedules/{schedule}/enable", {}, None),
        ("schedule trigger", "POST", "/schedules/{schedule}/trigger", {}, capture_schedule_run),
        ("schedule runs", "GET", "/schedules/{schedule}/runs", {}, None),
        ("schedule run", "GET", "/schedules/{schedule}/runs/{schedule_run}", {}, None),
        ("schedule run missing", "GET", "/schedules/{schedule}/runs/missing-run", {}, None),
        ("schedule delete", "DELETE", "/schedules/{schedule}", {}, None),
        ("schedule deleted", "GET", "/schedules/{schedule}", {}, None),
    ]


def traces_appear(at_least):
    """A capture waiting (up to 30 s) until the side lists `at_least` traces: Python writes a span
    when it ends, agno-rs a moment later (off the run's path). Records the ids later steps use."""

    def capture(side, _body):
        # Until each kind is known: a trace can be listed before its root span is stored (the
        # children's batch first), without the ids that tell its kind.
        deadline = time.time() + 30
        while True:
            listed = side.request("GET", "/traces?limit=50").json()
            by_kind = {}
            for t in listed.get("data", []):
                kind = "workflow" if t.get("workflow_id") else "team" if t.get("team_id") else "agent"
                by_kind.setdefault(kind, t["trace_id"])
            if listed.get("meta", {}).get("total_count", 0) >= at_least and len(by_kind) == 3:
                break
            if time.time() > deadline:
                raise KeyError(f"{at_least} traces of each kind within 30 s (listed: {listed.get('meta')})")
            time.sleep(0.2)
        side.vars.update(agent_trace=by_kind["agent"], team_trace=by_kind["team"], workflow_trace=by_kind["workflow"])

    return capture


def capture_span(side, body):
    side.vars["span"] = body["tree"][0]["spans"][0]["id"]


def trace_steps():
    """The traces sequence (both servers trace into their database): an agent, a team and a
    workflow run, then every trace route, good and bad input."""
    run = lambda session: {"data": {"message": "trace me", "stream": "false", "session_id": session, "user_id": "u1"}}  # noqa: E731
    search = lambda body: {"json": body}  # noqa: E731
    missing = "0" * 32
    return [
        ("traces empty", "GET", "/traces", {}, None),
        ("traced agent run", "POST", "/agents/demo/runs", run("{session}"), lambda s, b: s.vars.update(run=b["run_id"])),
        ("traced team run", "POST", "/teams/desk/runs", run("{tsession}"), None),
        ("traced workflow run", "POST", "/workflows/flow/runs", run("{wsession}"), traces_appear(3)),
        ("traces", "GET", "/traces", {}, None),
        ("traces paged", "GET", "/traces?limit=1&page=2", {}, None),
        ("traces of a run", "GET", "/traces?run_id={run}", {}, None),
        ("traces of a user", "GET", "/traces?user_id=u1&status=OK", {}, None),
        ("traces in a window", "GET", "/traces?start_time=2020-01-01T00:00:00Z&end_time=2099-01-01T00:00:00Z", {}, None),
        ("agent trace", "GET", "/traces/{agent_trace}", {}, capture_span),
        ("agent trace span", "GET", "/traces/{agent_trace}?span_id={span}", {}, None),
        ("team trace", "GET", "/traces/{team_trace}", {}, None),
        ("workflow trace", "GET", "/traces/{workflow_trace}", {}, None),
        ("trace missing", "GET", f"/traces/{missing}", {}, None),
        ("trace span missing", "GET", "/traces/{agent_trace}?span_id=ffffffffffffffff", {}, None),
        ("trace filter schema", "GET", "/traces/filter-schema", {}, None),
        ("trace session stats", "GET", "/trace_session_stats", {}, None),
        ("trace session stats of a user", "GET", "/trace_session_stats?user_id=u1&limit=2", {}, None),
        ("trace search", "POST", "/traces/search", search({"filter": {"op": "EQ", "key": "status", "value": "OK"}}), None),
        ("trace search by session", "POST", "/traces/search", search({"group_by": "session", "limit": 5}), None),
        (
            "trace search nested",
            "POST",
            "/traces/search",
            search({"filter": {"op": "AND", "conditions": [
                {"op": "CONTAINS", "key": "name", "value": "run"},
                {"op": "NOT", "condition": {"op": "IN", "key": "session_id", "values": ["nope"]}},
            ]}}),
            None,
        ),
        ("trace search limit over 100", "POST", "/traces/search", search({"limit": 101}), None),
        ("trace search bad group", "POST", "/traces/search", search({"group_by": "user"}), None),
        ("trace search bad field", "POST", "/traces/search", search({"filter": {"op": "EQ", "key": "secret", "value": "x"}}), None),
        ("trace search bad operator", "POST", "/traces/search", search({"filter": {"op": "LIKE", "key": "name", "value": "x"}}), None),
        ("traces bad time", "GET", "/traces?start_time=yesterday", {}, None),
    ]


def capture_approval(side, body):
    side.vars["run"] = body["run_id"]
    side.vars["approval"] = body["tools"][0]["approval_id"]


def approval_steps():
    """The approvals sequence (both servers serve agent `approver`, whose `add` needs an admin's
    approval, without auth: every caller may resolve): a run pauses on the call, the approval is
    listed, counted and read, a continue before the decision is refused, the approval is resolved
    (then again, 409), the continue completes the run, the approval follows it, and bad input."""
    run = {"data": {"message": "add please", "stream": "false", "session_id": "{asession}", "user_id": "u1"}}
    cont = {"data": {"stream": "false", "session_id": "{asession}"}}
    return [
        ("approvals empty", "GET", "/approvals", {}, None),
        ("approvals count empty", "GET", "/approvals/count", {}, None),
        ("approval run", "POST", "/agents/approver/runs", run, capture_approval),
        ("approvals", "GET", "/approvals", {}, None),
        ("approvals filtered", "GET", "/approvals?status=pending&approval_type=required&user_id=u1&run_id={run}", {}, None),
        ("approvals paged", "GET", "/approvals?limit=1&page=2", {}, None),
        ("approvals count", "GET", "/approvals/count", {}, None),
        ("approvals count of a user", "GET", "/approvals/count?user_id=u1", {}, None),
        ("approval", "GET", "/approvals/{approval}", {}, None),
        ("approval status", "GET", "/approvals/{approval}/status", {}, None),
        ("approval missing", "GET", "/approvals/missing-approval", {}, None),
        ("approval status missing", "GET", "/approvals/missing-approval/status", {}, None),
        ("continue before the decision", "POST", "/agents/approver/runs/{run}/continue", cont, None),
        ("resolve bad status", "POST", "/approvals/{approval}/resolve", {"json": {"status": "maybe"}}, None),
        ("resolve without status", "POST", "/approvals/{approval}/resolve", {"json": {}}, None),
        ("resolve missing", "POST", "/approvals/missing-approval/resolve", {"json": {"status": "approved"}}, None),
        (
            "resolve",
            "POST",
            "/approvals/{approval}/resolve",
            {"json": {"status": "approved", "resolved_by": "admin", "resolution_data": {"note": "ok"}}},
            None,
        ),
        ("resolve again", "POST", "/approvals/{approval}/resolve", {"json": {"status": "rejected"}}, None),
        ("continue approved", "POST", "/agents/approver/runs/{run}/continue", cont, None),
        ("approval after the run", "GET", "/approvals/{approval}", {}, None),
        ("approvals bad status", "GET", "/approvals?status=bogus", {}, None),
        ("approvals bad type", "GET", "/approvals?approval_type=maybe", {}, None),
        ("approvals bad limit", "GET", "/approvals?limit=0", {}, None),
        ("approvals limit too large", "GET", "/approvals?limit=1001", {}, None),
        ("delete approval", "DELETE", "/approvals/{approval}", {}, None),
        ("delete approval missing", "DELETE", "/approvals/{approval}", {}, None),
        ("approval deleted", "GET", "/approvals/{approval}", {}, None),
    ]


def compaction_steps():
    """The compaction sequence (both servers serve agent `folder`, compacting when asked and keeping
    its newest run, beside `demo`, which does not compact)."""
    folder_run = {"message": "fold me", "stream": "false", "session_id": "{session}", "user_id": "u1"}
    demo_run = {"message": "keep me", "stream": "false", "session_id": "{asession}", "user_id": "u1"}
    return [
        ("folder run 1", "POST", "/agents/folder/runs", {"data": folder_run}, None),
        ("folder run 2", "POST", "/agents/folder/runs", {"data": folder_run}, None),
        ("folder run 3", "POST", "/agents/folder/runs", {"data": folder_run}, None),
        ("compact", "POST", "/agents/folder/sessions/{session}/compact?user_id=u1", {}, None),
        ("compact again", "POST", "/agents/folder/sessions/{session}/compact?user_id=u1", {}, None),
        ("compact of another user", "POST", "/agents/folder/sessions/{session}/compact?user_id=u2", {}, None),
        ("compact missing session", "POST", "/agents/folder/sessions/missing-session/compact", {}, None),
        ("compact missing agent", "POST", "/agents/missing/sessions/{session}/compact", {}, None),
        ("demo run", "POST", "/agents/demo/runs", {"data": demo_run}, None),
        ("compact not enabled", "POST", "/agents/demo/sessions/{asession}/compact?user_id=u1", {}, None),
        ("compact of another agent", "POST", "/agents/demo/sessions/{session}/compact?user_id=u1", {}, None),
        ("folder run after the fold", "POST", "/agents/folder/runs", {"data": folder_run}, None),
    ]


def capture_task(side, body):
    side.vars["task"] = body["result"]["id"]


def a2a_message(text, context="{session}"):
    message = {"role": "user", "messageId": str(uuid.uuid4()), "parts": [{"kind": "text", "text": text}]}
    if context:
        message["contextId"] = context
    return message


def a2a_steps():
    """The A2A sequence (both servers serve the A2A interface: Python's `a2a_interface=True`,
    agno-rs's `[a2a] enabled`)."""
    def rpc(method, params):
        return {"json": {"jsonrpc": "2.0", "id": "parity-1", "method": method, "params": params}}

    return [
        ("agent card", "GET", "/a2a/agents/demo/.well-known/agent-card.json", {}, None),
        ("team card", "GET", "/a2a/teams/desk/.well-known/agent-card.json", {}, None),
        ("workflow card", "GET", "/a2a/workflows/flow/.well-known/agent-card.json", {}, None),
        ("card missing", "GET", "/a2a/agents/missing/.well-known/agent-card.json", {}, None),
        ("a2a send", "POST", "/a2a/agents/demo/v1/message:send",
         rpc("message/send", {"message": a2a_message("hello over a2a")}), capture_task),
        ("a2a send again", "POST", "/a2a/agents/demo/v1/message:send",
         rpc("message/send", {"message": a2a_message("second turn")}), None),
        ("a2a team send", "POST", "/a2a/teams/desk/v1/message:send",
         rpc("message/send", {"message": a2a_message("hello team", None)}), None),
        ("a2a workflow send", "POST", "/a2a/workflows/flow/v1/message:send",
         rpc("message/send", {"message": a2a_message("hello flow", None)}), None),
        ("a2a task get", "POST", "/a2a/agents/demo/v1/tasks:get",
         rpc("tasks/get", {"id": "{task}", "contextId": "{session}"}), None),
        ("a2a task get missing", "POST", "/a2a/agents/demo/v1/tasks:get",
         rpc("tasks/get", {"id": "missing-task", "contextId": "{session}"}), None),
        ("a2a cancel ended", "POST", "/a2a/agents/demo/v1/tasks:cancel",
         rpc("tasks/cancel", {"id": "{task}", "contextId": "{session}"}), None),
        ("a2a send non-blocking", "POST", "/a2a/agents/demo/v1/message:send",
         rpc("message/send", {"message": a2a_message("later", None), "configuration": {"blocking": False}}), None),
        ("a2a stream", "POST", "/a2a/agents/demo/v1/message:stream",
         rpc("message/stream", {"message": a2a_message("stream over a2a")}), None),
        ("a2a send from an agent role", "POST", "/a2a/agents/demo/v1/message:send",
         rpc("message/send", {"message": dict(a2a_message("x", None), role="agent")}), None),
        ("a2a send missing agent", "POST", "/a2a/agents/missing/v1/message:send",
         rpc("message/send", {"message": a2a_message("x", None)}), None),
    ]


def agui_steps():
    """The AG-UI sequence (both servers serve agent `demo` over AG-UI: Python's
    `interfaces=[AGUI(agent=demo)]`, agno-rs's `[agui] agent = "demo"`)."""
    def body(run, messages, **extra):
        return {"json": dict({"threadId": "{session}", "runId": run, "messages": messages, "tools": [],
                              "context": [], "forwardedProps": {}}, **extra)}

    user = {"id": "m1", "role": "user", "content": "hello over ag-ui"}
    return [
        ("agui status", "GET", "/status", {}, None),
        ("agui run", "POST", "/agui", body("agui-run-1", [user]), None),
        ("agui run with state", "POST", "/agui", body("agui-run-2", [user], state={"theme": "dark"}), None),
        # The client's own tool: the model calls it (the fake model calls the first tool it is
        # offered) and the run waits for the client's result.
        ("agui run with a client tool", "POST", "/agui",
         body("agui-run-4", [user], state={"theme": "dark"}, tools=[{
             "name": "change_background", "description": "Changes the background colour",
             "parameters": {"type": "object", "properties": {"color": {"type": "string"}}}}]), None),
        ("agui tool message answering nothing", "POST", "/agui",
         body("agui-run-3", [user, {"id": "t1", "role": "tool", "toolCallId": "nope", "content": "{}"}]), None),
        ("agui without threadId", "POST", "/agui", {"json": {"runId": "x", "messages": []}}, None),
    ]


def component_steps():
    """The components sequence (both servers keep components in the OS database, serve the code
    agent `demo`, and answer without auth): a component's life (create, drafts, guards, publish,
    rollback, tombstones, archive, restore), a team and a workflow pinning it, bad input, and the
    registry. Every id is given or made from a name, so both sides use the same ones."""
    agent = {"name": "Support", "component_id": "support", "component_type": "agent", "description": "Tickets",
             "metadata": {"team": "cx"}, "config": {"name": "Support", "instructions": "Be kind."},
             "label": "initial", "notes": "first"}
    model = {"id": "gpt-4o-mini", "provider": "OpenAI", "name": "OpenAIChat"}
    v2 = {"config": {"name": "Support Two", "instructions": "Be brief.", "model": model}, "guard": {"latest_version": 1}}
    team = {"name": "Crew", "component_id": "crew", "component_type": "team", "stage": "published",
            "config": {"name": "Crew", "mode": "coordinate", "model": model,
                       "members": [{"type": "agent", "agent_id": "support"}, {"type": "agent", "agent_id": "demo"}]}}
    flow = {"name": "Ticket Flow", "component_id": "ticket-flow", "component_type": "workflow",
            "config": {"name": "Ticket Flow", "steps": [{"type": "Step", "name": "triage", "agent_id": "support"},
                                                        {"type": "Step", "name": "escalate", "team_id": "crew"}]}}
    link = lambda child, version: {"link_kind": "member", "link_key": "m", "child_component_id": child,
                                   "child_version": version, "position": 0}
    return [
        ("components empty", "GET", "/components", {}, None),
        ("create minimal", "POST", "/components", {"json": {"name": "My First Agent!", "component_type": "agent"}}, None),
        ("create with config", "POST", "/components", {"json": agent}, None),
        ("create bad type", "POST", "/components", {"json": {"name": "X", "component_type": "robot"}}, None),
        ("create to publish later", "POST", "/components", {"json": {"name": "L2", "component_id": "lonely-2", "component_type": "agent"}}, None),
        ("create duplicate", "POST", "/components", {"json": dict(agent, name="Dup")}, None),
        ("create bad id", "POST", "/components", {"json": {"name": "X", "component_id": "a/b", "component_type": "agent"}}, None),
        ("create bad stage", "POST", "/components", {"json": {"name": "X", "component_type": "agent", "stage": "live"}}, None),
        ("create without name", "POST", "/components", {"json": {"component_type": "agent"}}, None),
        ("components", "GET", "/components", {}, None),
        ("agents with a draft", "GET", "/agents", {}, None),
        ("draft agent", "GET", "/agents/support", {}, None),
        ("components bad type", "GET", "/components?component_type=robot", {}, None),
        ("components limit too large", "GET", "/components?limit=101", {}, None),
        ("component", "GET", "/components/support", {}, None),
        ("component missing", "GET", "/components/nope", {}, None),
        ("configs", "GET", "/components/support/configs", {}, None),
        ("current config of a draft", "GET", "/components/support/configs/current", {}, None),
        ("configs missing", "GET", "/components/nope/configs", {}, None),
        ("create config", "POST", "/components/support/configs", {"json": v2}, None),
        ("create config stale", "POST", "/components/support/configs", {"json": v2}, None),
        ("create config current guard", "POST", "/components/support/configs",
         {"json": {"config": {}, "guard": {"current_version": 0}}}, None),
        ("create config label taken", "POST", "/components/support/configs", {"json": {"config": {}, "label": "initial"}}, None),
        ("create config without config", "POST", "/components/support/configs", {"json": {"notes": "x"}}, None),
        ("create config missing", "POST", "/components/nope/configs", {"json": {"config": {}}}, None),
        ("edit draft", "PATCH", "/components/support/configs/2", {"json": {"notes": "edited", "label": "two"}}, None),
        ("publish draft", "PATCH", "/components/support/configs/2", {"json": {"stage": "published", "guard": {"latest_version": 2}}}, None),
        ("component after publish", "GET", "/components/support", {}, None),
        ("edit published", "PATCH", "/components/support/configs/2", {"json": {"notes": "x"}}, None),
        ("edit missing version", "PATCH", "/components/support/configs/99", {"json": {"notes": "x"}}, None),
        ("edit bad stage", "PATCH", "/components/support/configs/1", {"json": {"stage": "live"}}, None),
        ("publish directly", "POST", "/components/support/configs", {"json": {"config": {"name": "Support Three", "model": model}, "stage": "published"}}, None),
        ("publish what cannot run", "POST", "/components/lonely-2/configs", {"json": {"config": {"name": "No model"}, "stage": "published"}}, None),
        ("rollback", "POST", "/components/support/configs/2/set-current", {"json": {"guard": {"current_version": 3}}}, None),
        ("rollback stale", "POST", "/components/support/configs/3/set-current", {"json": {"guard": {"current_version": 3}}}, None),
        ("rollback latest guard", "POST", "/components/support/configs/3/set-current", {"json": {"guard": {"latest_version": 3}}}, None),
        ("rollback to a draft", "POST", "/components/support/configs/1/set-current", {}, None),
        ("rollback to a missing version", "POST", "/components/support/configs/9/set-current", {}, None),
        ("rollback missing component", "POST", "/components/nope/configs/1/set-current", {}, None),
        ("current config", "GET", "/components/support/configs/current", {}, None),
        ("config", "GET", "/components/support/configs/1", {}, None),
        ("config missing", "GET", "/components/support/configs/99", {}, None),
        ("config bad version", "GET", "/components/support/configs/abc", {}, None),
        ("delete published config", "DELETE", "/components/support/configs/2", {}, None),
        ("draft v4", "POST", "/components/support/configs", {"json": {"config": {"name": "Four"}}}, None),
        ("delete draft", "DELETE", "/components/support/configs/4", {}, None),
        ("delete draft again", "DELETE", "/components/support/configs/4", {}, None),
        ("draft after a tombstone", "POST", "/components/support/configs", {"json": {"config": {}, "label": "two-b"}}, None),
        ("deleted config", "GET", "/components/support/configs/4", {}, None),
        ("lonely", "POST", "/components", {"json": {"name": "Lonely", "component_id": "lonely", "component_type": "agent"}}, None),
        ("delete last config", "DELETE", "/components/lonely/configs/1", {}, None),
        ("update", "PATCH", "/components/support", {"json": {"name": "Renamed", "description": "New", "metadata": {"k": 1}}}, None),
        ("update stale", "PATCH", "/components/support", {"json": {"name": "x", "guard": {"current_version": 9}}}, None),
        ("update latest guard", "PATCH", "/components/support", {"json": {"guard": {"latest_version": 1}}}, None),
        ("update type", "PATCH", "/components/support", {"json": {"component_type": "team"}}, None),
        ("update bogus type", "PATCH", "/components/support", {"json": {"component_type": "robot"}}, None),
        ("update current", "PATCH", "/components/support", {"json": {"current_version": 3, "guard": {"current_version": 2}}}, None),
        ("update current to a draft", "PATCH", "/components/support", {"json": {"current_version": 5}}, None),
        ("update current missing", "PATCH", "/components/support", {"json": {"current_version": 77}}, None),
        ("update missing", "PATCH", "/components/nope", {"json": {"name": "x"}}, None),
        ("run a version not stored", "POST", "/agents/support/runs", {"data": {"message": "hi", "stream": "false", "version": "77"}}, None),
        ("run a version not an integer", "POST", "/agents/support/runs", {"data": {"message": "hi", "stream": "false", "version": "two"}}, None),
        ("team unresolved", "POST", "/components",
         {"json": {"name": "T", "component_type": "team", "config": {"members": [{"type": "agent", "agent_id": "ghost"}]}}}, None),
        ("team", "POST", "/components", {"json": team}, None),
        ("workflow", "POST", "/components", {"json": flow}, None),
        ("components paged", "GET", "/components?component_type=team&page=1&limit=1", {}, None),
        ("components past the last page", "GET", "/components?component_type=workflow&page=2&limit=1", {}, None),
        ("self link", "POST", "/components/crew/configs", {"json": {"config": team["config"], "links": [link("crew", 1)]}}, None),
        ("cycle", "POST", "/components/support/configs", {"json": {"config": {}, "links": [link("crew", 1)]}}, None),
        ("link bad version", "POST", "/components/crew/configs", {"json": {"config": team["config"], "links": [link("support", 2.5)]}}, None),
        ("delete pinned", "DELETE", "/components/support", {}, None),
        ("delete stale", "DELETE", "/components/my-first-agent?expected_current_version=1", {}, None),
        ("delete", "DELETE", "/components/my-first-agent", {}, None),
        ("delete again", "DELETE", "/components/my-first-agent", {}, None),
        ("archived", "GET", "/components/my-first-agent", {}, None),
        ("archived included", "GET", "/components/my-first-agent?include_deleted=true", {}, None),
        ("components with archived", "GET", "/components?include_deleted=true", {}, None),
        ("reuse archived id", "POST", "/components", {"json": {"name": "X", "component_id": "my-first-agent", "component_type": "agent"}}, None),
        ("restore", "POST", "/components/my-first-agent/restore", {}, None),
        ("restore again", "POST", "/components/my-first-agent/restore", {}, None),
        ("restore missing", "POST", "/components/nope/restore", {}, None),
        ("registry", "GET", "/registry", {}, None),
        ("registry agents", "GET", "/registry?resource_type=agent", {}, None),
        ("registry bad type", "GET", "/registry?resource_type=robot", {}, None),
        ("registry limit too large", "GET", "/registry?limit=101", {}, None),
    ]


def service_account_steps():
    """The service-accounts sequence (both servers verify HS256 JWTs with the same secret and keep
    service accounts in their SQL database): mint (defaults, privileged, refusals), list, use a
    token within and beyond its scopes, revoke, and a revoked token."""
    admin = {"Authorization": "Bearer {admin}"}
    pat = {"Authorization": "Bearer {pat}"}

    def keep(side, body):
        side.vars.update(sa=body["id"], pat=body["token"])

    return [
        ("accounts empty", "GET", "/service-accounts", {"headers": admin}, None),
        ("mint without auth", "POST", "/service-accounts", {"json": {"name": "nobody"}}, None),
        ("mint", "POST", "/service-accounts", {"json": {"name": "ci"}, "headers": admin}, keep),
        ("mint scoped", "POST", "/service-accounts",
         {"json": {"name": "reader", "scopes": [{"scope": "agents:read"}, {"scope": "agents:demo:run"}], "expires_in_days": 7},
          "headers": admin}, None),
        ("mint privileged", "POST", "/service-accounts",
         {"json": {"name": "boss", "scopes": [{"scope": "agents:write"}], "allow_privileged_scopes": True, "never_expires": True},
          "headers": admin}, None),
        ("mint duplicate", "POST", "/service-accounts", {"json": {"name": "ci"}, "headers": admin}, None),
        ("mint bad name", "POST", "/service-accounts", {"json": {"name": "Bad Name"}, "headers": admin}, None),
        ("mint long name", "POST", "/service-accounts", {"json": {"name": "x" * 64}, "headers": admin}, None),
        ("mint deny", "POST", "/service-accounts",
         {"json": {"name": "d", "scopes": [{"scope": "agents:run", "effect": "deny"}]}, "headers": admin}, None),
        ("mint unknown scope", "POST", "/service-accounts",
         {"json": {"name": "u", "scopes": [{"scope": "nonsense"}]}, "headers": admin}, None),
        ("mint privileged unasked", "POST", "/service-accounts",
         {"json": {"name": "p", "scopes": [{"scope": "agents:delete"}]}, "headers": admin}, None),
        ("mint zero days", "POST", "/service-accounts", {"json": {"name": "z", "expires_in_days": 0}, "headers": admin}, None),
        ("mint without name", "POST", "/service-accounts", {"json": {}, "headers": admin}, None),
        ("accounts", "GET", "/service-accounts", {"headers": admin}, None),
        ("accounts by name", "GET", "/service-accounts?sort_by=name&sort_order=asc&limit=2&page=2", {"headers": admin}, None),
        ("accounts limit too large", "GET", "/service-accounts?limit=101", {"headers": admin}, None),
        ("token reads agents", "GET", "/agents", {"headers": pat}, None),
        ("token runs", "POST", "/agents/demo/runs", {"data": {"message": "hi", "stream": "false"}, "headers": pat}, None),
        ("token beyond its scopes", "GET", "/memories", {"headers": pat}, None),
        ("token lists accounts", "GET", "/service-accounts", {"headers": pat}, None),
        ("revoke", "DELETE", "/service-accounts/{sa}", {"headers": admin}, None),
        ("revoke again", "DELETE", "/service-accounts/{sa}", {"headers": admin}, None),
        ("revoke missing", "DELETE", "/service-accounts/nope", {"headers": admin}, None),
        ("revoked token", "GET", "/agents", {"headers": pat}, None),
        ("unknown token", "GET", "/agents", {"headers": {"Authorization": "Bearer agno_pat_unknown"}}, None),
        ("accounts live", "GET", "/service-accounts?include_revoked=false", {"headers": admin}, None),
        ("mint again", "POST", "/service-accounts", {"json": {"name": "ci"}, "headers": admin}, None),
    ]


def filesystem_steps():
    """The filesystem sequence (both servers serve agent `notes` with `filesystem=True`, its store
    seeded by scripts/interop/seed_files.py, no authentication): listings, a directory, previews
    with offsets, search, and every refusal."""
    return [
        ("config with a filesystem", "GET", "/config", {}, None),
        ("files", "GET", "/filesystem/files", {}, None),
        ("files of notes", "GET", "/filesystem/files?agent_id=notes&sort_by=size&sort_order=desc", {}, None),
        ("files matching", "GET", "/filesystem/files?query=step", {}, None),
        ("files of another namespace", "GET", "/filesystem/files?namespace=elsewhere", {}, None),
        ("files bad sort", "GET", "/filesystem/files?sort_by=name", {}, None),
        ("entries root", "GET", "/filesystem/entries?agent_id=notes", {}, None),
        ("entries by namespace", "GET", "/filesystem/entries?namespace=notes&directory=notes", {}, None),
        ("entries by type", "GET", "/filesystem/entries?agent_id=notes&sort_by=type&sort_order=desc&limit=1&page=2", {}, None),
        ("entries without target", "GET", "/filesystem/entries", {}, None),
        ("entries of an agent without files", "GET", "/filesystem/entries?agent_id=demo", {}, None),
        ("entries of an unknown agent", "GET", "/filesystem/entries?agent_id=ghost", {}, None),
        ("entries unknown namespace", "GET", "/filesystem/entries?namespace=elsewhere", {}, None),
        ("entries bad directory", "GET", "/filesystem/entries?agent_id=notes&directory=../up", {}, None),
        ("entries limit too large", "GET", "/filesystem/entries?agent_id=notes&limit=101", {}, None),
        ("content", "GET", "/filesystem/content?agent_id=notes&path=notes/plan.md", {}, None),
        ("content window", "GET", "/filesystem/content?agent_id=notes&path=notes/plan.md&offset=5&limit=4", {}, None),
        ("content missing", "GET", "/filesystem/content?agent_id=notes&path=nope.md", {}, None),
        ("content escaping", "GET", "/filesystem/content?agent_id=notes&path=../etc/passwd", {}, None),
        ("content without path", "GET", "/filesystem/content?agent_id=notes", {}, None),
        ("search", "GET", "/filesystem/search?agent_id=notes&query=STEP", {}, None),
        ("search in a directory", "GET", "/filesystem/search?namespace=notes&query=step&directory=notes/deep", {}, None),
        ("search without query", "GET", "/filesystem/search?agent_id=notes", {}, None),
    ]


def learning_steps():
    """The learnings sequence (both servers keep learnings in their SQLite database, no
    authentication): creating each kind of record and every refusal, reading, listing with
    filters, order and pages, the users, replacing and deleting."""

    def keep(side, body):
        side.vars.update(note=body["learning_id"])

    profile = {"learning_type": "user_profile", "user_id": "ann", "content": {"user_id": "ann", "name": "Ann"},
               "metadata": {"src": "api"}}
    return [
        ("learnings empty", "GET", "/learnings", {}, None),
        ("learning users empty", "GET", "/learnings/users", {}, None),
        ("create profile", "POST", "/learnings", {"json": profile}, None),
        ("create profile again", "POST", "/learnings", {"json": profile}, None),
        ("create note", "POST", "/learnings",
         {"json": {"learning_type": "note", "user_id": "bob", "agent_id": "demo", "content": {"text": "hi"}}}, keep),
        ("create shared entity", "POST", "/learnings",
         {"json": {"learning_type": "entity_memory", "entity_id": "acme", "entity_type": "company", "content": {"name": "Acme"}}}, None),
        ("create user entity", "POST", "/learnings",
         {"json": {"learning_type": "entity_memory", "namespace": "user", "user_id": "ann", "entity_id": "acme",
                   "entity_type": "company", "content": {"name": "Acme"}}}, None),
        ("create entity without user", "POST", "/learnings",
         {"json": {"learning_type": "entity_memory", "namespace": "user", "entity_id": "x", "entity_type": "y", "content": {}}}, None),
        ("create without identity", "POST", "/learnings", {"json": {"learning_type": "user_memory", "content": {}}}, None),
        ("create reserved namespace", "POST", "/learnings",
         {"json": {"learning_type": "entity_memory", "namespace": "user_0123456789abcdef", "entity_id": "x",
                   "entity_type": "y", "content": {}}}, None),
        ("create content not an object", "POST", "/learnings", {"json": {"learning_type": "note", "content": [1]}}, None),
        ("create without type", "POST", "/learnings", {"json": {"content": {}}}, None),
        ("learning", "GET", "/learnings/user_profile_ann", {}, None),
        ("learning missing", "GET", "/learnings/nope", {}, None),
        ("learnings", "GET", "/learnings", {}, None),
        ("learnings of ann", "GET", "/learnings?user_id=ann&learning_type=user_profile", {}, None),
        ("learnings page", "GET", "/learnings?learning_type=entity_memory&sort_by=learning_id&sort_order=asc&limit=1&page=2", {}, None),
        ("learnings limit zero", "GET", "/learnings?limit=0", {}, None),
        ("learnings limit too large", "GET", "/learnings?limit=1001", {}, None),
        ("learnings bad order", "GET", "/learnings?sort_order=up", {}, None),
        ("learning users", "GET", "/learnings/users", {}, None),
        ("learning users by name", "GET", "/learnings/users?sort_by=user_id&sort_order=asc&limit=1", {}, None),
        ("replace content", "PATCH", "/learnings/user_profile_ann", {"json": {"content": {"user_id": "ann", "name": "Annie"}}}, None),
        ("clear metadata", "PATCH", "/learnings/user_profile_ann", {"json": {"metadata": None}}, None),
        ("replace nothing", "PATCH", "/learnings/user_profile_ann", {"json": {}}, None),
        ("replace with null", "PATCH", "/learnings/user_profile_ann", {"json": {"content": None}}, None),
        ("replace missing", "PATCH", "/learnings/nope", {"json": {"content": {}}}, None),
        ("delete note", "DELETE", "/learnings/{note}", {}, None),
        ("delete note again", "DELETE", "/learnings/{note}", {}, None),
        ("delete ann's", "DELETE", "/learnings/users/ann", {}, None),
        ("learnings left", "GET", "/learnings", {}, None),
    ]


def formatted(value, variables):
    """`value` with every string formatted with `variables` (a JSON body's placeholders)."""
    if isinstance(value, str):
        # Only `{name}` placeholders: JSON text inside a body keeps its braces.
        return re.sub(r"\{(\w+)\}", lambda m: str(variables[m.group(1)]), value)
    if isinstance(value, list):
        return [formatted(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: formatted(v, variables) for k, v in value.items()}
    return value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rs", required=True)
    parser.add_argument("--py", required=True)
    parser.add_argument("--suite", default="main", choices=["main", "knowledge", "schedules", "traces", "approvals", "compaction", "a2a", "agui", "components", "service_accounts", "filesystem", "learnings"])
    parser.add_argument("--jwt-secret", help="HS256 secret both servers verify; `{admin}` in a step's headers is an admin token")
    args = parser.parse_args()
    rs, py = Side("rs", args.rs), Side("py", args.py)
    py.vars["session"] = rs.vars["session"]
    py.vars["wsession"] = rs.vars["wsession"]
    py.vars["tsession"] = rs.vars["tsession"]
    py.vars["asession"] = rs.vars["asession"]
    differences, allowed_seen, answers = {}, {}, {}
    suites = {
        "main": steps,
        "knowledge": knowledge_steps,
        "schedules": schedule_steps,
        "traces": trace_steps,
        "approvals": approval_steps,
        "compaction": compaction_steps,
        "a2a": a2a_steps,
        "agui": agui_steps,
        "components": component_steps,
        "service_accounts": service_account_steps,
        "filesystem": filesystem_steps,
        "learnings": learning_steps,
    }
    if args.jwt_secret:
        import jwt

        now = int(time.time())
        claims = {"sub": "root", "scopes": ["agent_os:admin"], "iat": now, "exp": now + 3600}
        admin = jwt.encode(claims, args.jwt_secret, algorithm="HS256")
        rs.vars["admin"] = py.vars["admin"] = admin
    for name, method, path, kwargs, capture in suites[args.suite]():
        results = {}
        for side in (rs, py):
            kw = json.loads(json.dumps(kwargs)) if "files" not in kwargs else dict(kwargs)
            if "data" in kw:
                kw["data"] = {k: v.format(**side.vars) for k, v in kw["data"].items()}
            if "json" in kw:
                kw["json"] = formatted(kw["json"], side.vars)
            if "headers" in kw:
                kw["headers"] = {k: v.format(**side.vars) for k, v in kw["headers"].items()}
            try:
                resp = side.request(method, path, **kw)
            except (KeyError, IndexError) as exc:
                results[side.name] = {"status": f"not sent: {exc!r} missing", "media": ""}
                continue
            results[side.name] = answer(resp)
            if capture and resp.status_code < 300:
                try:
                    capture(side, resp.json())
                except (KeyError, IndexError, ValueError) as exc:
                    results[side.name]["capture"] = repr(exc)
        answers[name] = results
        found = diff_answers(results["rs"], results["py"])
        unexpected = []
        for d in found:
            why = next((w for (s, p), w in ALLOWED.items() if s in (name, "*") and d.startswith(p)), None)
            if why is None and d.startswith("$") and d.endswith(".event_index: extra in rs"):
                why = "every SSE event carries event_index (resume)"
            if why:
                allowed_seen.setdefault(name, []).append(d)
            else:
                unexpected.append(d)
        if unexpected:
            differences[name] = unexpected
    if args.suite != "main":
        json.dump({"steps": len(answers), "differences": differences, "allowed": allowed_seen}, sys.stdout, indent=1)
        print()
        return
    # The OpenAPI documents: the same operation ids, and a request body wherever Python has one.
    rs_doc, py_doc = rs.request("GET", "/openapi.json").json(), py.request("GET", "/openapi.json").json()
    openapi = []
    for path, methods in rs_doc.get("paths", {}).items():
        for method, op in methods.items():
            theirs = py_doc.get("paths", {}).get(path, {}).get(method)
            if theirs is None:
                continue
            # A Python AgentOS without its scheduler serves stubs (`disabled_schedules_get`, ...)
            # at the scheduler's paths; the schedules suite compares against one with it.
            if str(theirs.get("operationId", "")).startswith("disabled_"):
                continue
            if op.get("operationId") != theirs.get("operationId"):
                openapi.append(f"{method.upper()} {path}: operationId {op.get('operationId')} != {theirs.get('operationId')}")
            if "requestBody" in theirs and "requestBody" not in op:
                openapi.append(f"{method.upper()} {path}: no requestBody")
    if openapi:
        differences["openapi"] = openapi
    json.dump({"steps": len(answers) + 1, "differences": differences, "allowed": allowed_seen}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
