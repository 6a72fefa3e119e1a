"""Drive an A2A server with the official A2A Python SDK (`a2a-sdk` 0.3.x), as an outside client
would: resolve each component's agent card, send a message (blocking), stream one, read the task
back, cancel an ended task (A2A's TaskNotCancelableError), send a non-blocking message and poll it
to its end; also a second turn in the first turn's context.

Usage: a2a_sdk_client.py BASE_URL PATH [PATH ...] [--token TOKEN]

    PATH is a component's A2A base, e.g. /a2a/agents/demo, /a2a/teams/desk, /a2a/workflows/flow.

Prints one JSON line: {"<PATH>": {...what each step saw...}, "errors": {...}}. Needs
`a2a-sdk<1.0` and httpx (the CI venv has them).
"""

import argparse
import asyncio
import json
import sys
import time
import uuid


def text_of(message):
    if message is None:
        return None
    return "".join(p.root.text for p in message.parts if getattr(p.root, "kind", None) == "text")


async def drive(base, path, token, errors):
    import httpx
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.client.errors import A2AClientJSONRPCError
    from a2a.types import Message, Part, Role, TaskIdParams, TaskQueryParams, TextPart

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    out = {}
    async with httpx.AsyncClient(timeout=60, headers=headers) as http:
        card = await A2ACardResolver(http, base_url=f"{base}{path}").get_agent_card()
        out["card"] = {"name": card.name, "url": card.url, "streaming": card.capabilities.streaming}

        def message(text, context_id=None):
            return Message(
                role=Role.user,
                message_id=str(uuid.uuid4()),
                parts=[Part(root=TextPart(text=text))],
                context_id=context_id,
            )

        blocking = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        final = None
        async for event in blocking.send_message(message("first turn")):
            final = event[0] if isinstance(event, tuple) else event
        out["send"] = {
            "state": final.status.state.value,
            "task_id": final.id,
            "context_id": final.context_id,
            "text": text_of(final.history[-1]) if final.history else None,
        }

        # A second turn in the same context (the session).
        async for event in blocking.send_message(message("second turn", final.context_id)):
            second = event[0] if isinstance(event, tuple) else event
        out["second"] = {"state": second.status.state.value, "context_id": second.context_id}

        got = await blocking.get_task(TaskQueryParams(id=final.id))
        out["get"] = {"state": got.status.state.value, "id": got.id, "text": text_of(got.history[-1]) if got.history else None}
        try:
            await blocking.get_task(TaskQueryParams(id="no-such-task"))
            out["get_unknown"] = "answered"
        except A2AClientJSONRPCError as e:
            out["get_unknown"] = e.error.code
        try:
            await blocking.cancel_task(TaskIdParams(id=final.id))
            out["cancel_ended"] = "answered"
        except A2AClientJSONRPCError as e:
            out["cancel_ended"] = e.error.code

        streaming = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        kinds, states, task = [], [], None
        async for event in streaming.send_message(message("stream turn")):
            if isinstance(event, tuple):
                task, update = event
                kinds.append(update.kind if update is not None else "task")
                states.append(task.status.state.value)
            else:
                kinds.append("message")
        out["stream"] = {
            "kinds": sorted(set(kinds)),
            "last_state": states[-1] if states else None,
            "answer": text_of(task.status.message) if task else None,
            "artifact_text": "".join(text_of(a) or "" for a in (task.artifacts or [])) if task else None,
            "task_id": task.id if task else None,
        }

        polling = ClientFactory(ClientConfig(streaming=False, polling=True, httpx_client=http)).create(card)
        async for event in polling.send_message(message("background turn")):
            queued = event[0] if isinstance(event, tuple) else event
        deadline = time.monotonic() + 60
        state = queued.status.state.value
        seen = [state]
        while state not in ("completed", "failed", "canceled") and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            state = (await polling.get_task(TaskQueryParams(id=queued.id))).status.state.value
            if seen[-1] != state:
                seen.append(state)
        out["background"] = {"states": seen}
    return out



async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--token")
    args = parser.parse_args()
    result, errors = {}, {}
    for path in args.paths:
        try:
            result[path] = await drive(args.base, path, args.token, errors)
        except Exception as e:  # reported, not raised: the test names the step
            import traceback

            traceback.print_exc(file=sys.stderr)
            errors[path] = f"{type(e).__name__}: {e}"
    result["errors"] = errors
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
