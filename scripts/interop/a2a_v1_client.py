"""Drive an A2A server with the official A2A Python SDK at 1.x (`a2a-sdk` 1.3.0, A2A v1.0), as an
outside client would: resolve each component's agent card (the client picks the v1.0 interface),
send a message and a second turn in its context, read the task back (with an unknown task's
TaskNotFoundError), cancel an ended task (TaskNotCancelableError), stream a message, list the
tasks in pages, send with returnImmediately (for a --follow PATH, following the queued task with
SubscribeToTask), then poll it to its end with GetTask.

Usage: a2a_v1_client.py BASE_URL PATH [PATH ...] [--token TOKEN] [--follow PATH]

    PATH is a component's A2A base, e.g. /a2a/agents/demo, /a2a/teams/desk, /a2a/workflows/flow.

Prints one JSON line: {"<PATH>": {...what each step saw...}, "errors": {...}}. Needs
`a2a-sdk==1.3.0` and httpx (scripts/test --all makes that venv).
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
    return "".join(p.text for p in message.parts if p.HasField("text"))


def state_name(task):
    from a2a.types import TaskState

    return TaskState.Name(task.status.state)


async def drive(base, path, token, follow):
    import httpx
    from a2a.client import A2ACardResolver, ClientConfig, create_client
    from a2a.types import (
        CancelTaskRequest,
        GetTaskRequest,
        ListTasksRequest,
        Message,
        Part,
        Role,
        SendMessageConfiguration,
        SendMessageRequest,
        SubscribeToTaskRequest,
        TaskNotCancelableError,
        TaskNotFoundError,
    )

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    out = {}
    async with httpx.AsyncClient(timeout=60, headers=headers) as http:
        card = await A2ACardResolver(http, f"{base}{path}").get_agent_card()
        out["card"] = {
            "name": card.name,
            "interfaces": [[i.protocol_binding, i.protocol_version] for i in card.supported_interfaces],
            "streaming": card.capabilities.streaming,
        }

        def message(text, context_id=None):
            return Message(
                message_id=str(uuid.uuid4()),
                role=Role.ROLE_USER,
                parts=[Part(text=text)],
                context_id=context_id or "",
            )

        blocking = await create_client(card, ClientConfig(streaming=False, httpx_client=http))
        first = None
        async for event in blocking.send_message(SendMessageRequest(message=message("first turn"))):
            first = event.task
        out["send"] = {
            "state": state_name(first),
            "task_id": first.id,
            "context_id": first.context_id,
            "text": text_of(first.history[-1]) if first.history else None,
        }
        second = None
        async for event in blocking.send_message(SendMessageRequest(message=message("second turn", first.context_id))):
            second = event.task
        out["second"] = {"state": state_name(second), "context_id": second.context_id}

        got = await blocking.get_task(GetTaskRequest(id=first.id))
        out["get"] = {"state": state_name(got), "id": got.id, "text": text_of(got.history[-1]) if got.history else None}
        try:
            await blocking.get_task(GetTaskRequest(id="no-such-task"))
            out["get_unknown"] = "answered"
        except TaskNotFoundError as e:
            out["get_unknown"] = type(e).__name__
        try:
            await blocking.cancel_task(CancelTaskRequest(id=first.id))
            out["cancel_ended"] = "answered"
        except TaskNotCancelableError as e:
            out["cancel_ended"] = type(e).__name__

        streaming = await create_client(card, ClientConfig(streaming=True, httpx_client=http))
        payloads, last_state, answer = [], None, None
        async for event in streaming.send_message(SendMessageRequest(message=message("stream turn"))):
            kind = event.WhichOneof("payload")
            payloads.append(kind)
            if kind == "task":
                last_state = state_name(event.task)
            elif kind == "status_update":
                last_state = state_name(event.status_update)
                if event.status_update.status.HasField("message"):
                    answer = text_of(event.status_update.status.message) or answer
        out["stream"] = {"payloads": sorted(set(payloads)), "first": payloads[0] if payloads else None,
                         "last_state": last_state, "answer": answer}

        page = await blocking.list_tasks(ListTasksRequest(page_size=2, context_id=first.context_id))
        rest = await blocking.list_tasks(ListTasksRequest(page_size=2, context_id=first.context_id,
                                                          page_token=page.next_page_token))
        out["list"] = {
            "first_page": [t.id for t in page.tasks],
            "has_next": bool(page.next_page_token),
            "second_page": [t.id for t in rest.tasks],
            "states": sorted({state_name(t) for t in list(page.tasks) + list(rest.tasks)}),
        }

        queued = None
        request = SendMessageRequest(message=message("background turn"),
                                     configuration=SendMessageConfiguration(return_immediately=True))
        async for event in blocking.send_message(request):
            queued = event.task
        followed = []
        if follow:
            async for event in streaming.subscribe(SubscribeToTaskRequest(id=queued.id)):
                kind = event.WhichOneof("payload")
                if kind == "task":
                    followed.append(["task", state_name(event.task)])
                elif kind == "status_update":
                    followed.append(["status_update", state_name(event.status_update)])
                else:
                    followed.append([kind, None])
        deadline = time.monotonic() + 60
        state = state_name(queued)
        seen = [state]
        while state not in ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED") \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            state = state_name(await blocking.get_task(GetTaskRequest(id=queued.id)))
            if seen[-1] != state:
                seen.append(state)
        out["background"] = {"states": seen, "followed_first": followed[0] if followed else None,
                             "followed_last": followed[-1] if followed else None}
        await blocking.close()
        await streaming.close()
    return out


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--token")
    parser.add_argument("--follow", action="append", default=[], help="a PATH whose queued task is followed")
    args = parser.parse_args()
    result, errors = {}, {}
    for path in args.paths:
        try:
            result[path] = await drive(args.base, path, args.token, path in args.follow)
        except Exception as e:  # reported, not raised: the test names the step
            import traceback

            traceback.print_exc(file=sys.stderr)
            errors[path] = f"{type(e).__name__}: {e}"
    result["errors"] = errors
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
