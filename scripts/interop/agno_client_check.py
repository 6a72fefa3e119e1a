"""Drive an AgentOS with Python Agno's own client (`agno.client.AgentOSClient`, Agno 3.1.x).

Usage: agno_client_check.py BASE_URL [--token JWT] [--agent ID] [--message TEXT]
                            [--session-id ID] [--user-id ID]

Each step calls the client the way Agno's own code does (RemoteAgent, AgentOS gateways) and parses
the answer with Agno's own models, so a field the client cannot read fails the step. The result is
one JSON line on stdout: what each step returned, plus `errors` (step -> message) for the steps that
failed. The exit status is 0 even when steps fail; the caller asserts on the JSON.

Needs `agno==3.1.*` with `fastapi` importable (the client module imports it).
"""

import argparse
import asyncio
import copy
import json
import sys
import traceback
import uuid


def describe_error(exc):
    """A short, precise description of a failed step (HTTP status and body when there is one)."""
    response = getattr(exc, "response", None)
    if response is not None:
        body = response.text[:500] if response.text else ""
        return f"{type(exc).__name__}: {response.status_code} {exc.request.method} {exc.request.url.path}: {body}"
    return f"{type(exc).__name__}: {exc}"


def roundtrip_diffs(raw, parsed, label="run"):
    """Fields of a server answer that Agno's model dropped or changed when it read them."""
    # An empty list or object dropped loses nothing (Python AgentOS itself sends `tools: []`,
    # which its own client drops the same way).
    diffs = [f"{label}: {key} dropped" for key in sorted(set(raw) - set(parsed)) if raw[key] not in ([], {}, None)]
    diffs += [f"{label}: {key} changed" for key in sorted(set(raw) & set(parsed)) if raw[key] != parsed[key]]
    return diffs


async def step(results, name, coro):
    """Awaits one step; records its error instead of raising. Returns the value or None."""
    try:
        return await coro
    except Exception as exc:  # noqa: BLE001 - every failure is reported, the caller decides
        results["errors"][name] = describe_error(exc)
        results["tracebacks"][name] = traceback.format_exc(limit=6)
        return None


async def status_of(coro):
    """The HTTP status a client call ends with (200 when it returns)."""
    try:
        await coro
        return 200
    except Exception as exc:  # noqa: BLE001
        response = getattr(exc, "response", None)
        return response.status_code if response is not None else describe_error(exc)


async def run_checks(args):
    from agno.client import AgentOSClient
    from agno.os.schema import RunSchema
    from agno.run.agent import RunOutput

    client = AgentOSClient(base_url=args.base_url, timeout=30.0)
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
    results = {"errors": {}, "tracebacks": {}}

    async def sync_call(fn, *a, **kw):
        return fn(*a, **kw)

    # Configuration: both the sync variant (used by RemoteAgent/RemoteTeam) and the async one.
    config = await step(results, "get_config", sync_call(client.get_config, headers=headers))
    aconfig = await step(results, "aget_config", client.aget_config(headers=headers))
    if config is not None:
        results["config"] = {
            "os_id": config.os_id,
            "name": config.name,
            "databases": config.databases,
            "agent_ids": [a.id for a in (config.agents or [])],
            "available_models": [m.model_dump(exclude_none=True) for m in config.available_models],
        }
    if aconfig is not None:
        results["aconfig_os_id"] = aconfig.os_id

    agents = await step(results, "list_agents", client.list_agents(headers=headers))
    if agents is not None:
        results["agents"] = [{"id": a.id, "name": a.name, "db_id": a.db_id} for a in agents]

    agent_id = args.agent or (agents[0].id if agents else None)
    if agent_id is None:
        results["errors"]["agent_id"] = "no agent to check"
        return results
    results["agent_id"] = agent_id

    agent = await step(results, "get_agent", sync_call(client.get_agent, agent_id, headers=headers))
    aagent = await step(results, "aget_agent", client.aget_agent(agent_id, headers=headers))
    if agent is not None:
        model = agent.model
        results["agent"] = {
            "id": agent.id,
            "name": agent.name,
            "model": model.model_dump(exclude_none=True) if model is not None else None,
        }
    if aagent is not None:
        results["aagent_id"] = aagent.id

    # A missing agent is an HTTP error the client raises; with a token, so is a call without it.
    results["missing_agent_status"] = await status_of(client.aget_agent("no-such-agent", headers=headers))
    if args.token:
        results["unauthenticated_status"] = await status_of(client.list_agents())

    session_id = args.session_id or f"client-check-{uuid.uuid4()}"
    user_id = args.user_id
    results["session_id"] = session_id

    # A non-streaming run: the client posts a urlencoded form and reads a RunOutput. The raw answer
    # is kept to check that RunOutput.from_dict reads every field back unchanged.
    raw_posts = []
    original_apost = client._apost

    async def recording_apost(*a, **kw):
        data = await original_apost(*a, **kw)
        raw_posts.append(copy.deepcopy(data))
        return data

    client._apost = recording_apost
    run = await step(
        results,
        "run_agent",
        client.run_agent(agent_id, args.message, session_id=session_id, user_id=user_id, headers=headers),
    )
    client._apost = original_apost
    if run is not None:
        results["run_roundtrip_diffs"] = roundtrip_diffs(raw_posts[-1], run.to_dict()) if raw_posts else ["no raw"]
        results["run"] = {
            "run_id": run.run_id,
            "session_id": run.session_id,
            "agent_id": run.agent_id,
            "user_id": run.user_id,
            "status": run.status.value if run.status is not None else None,
            "content": run.content,
            "content_type": run.content_type,
            "messages": [m.role for m in (run.messages or [])],
            "input": run.input.input_content if run.input is not None else None,
            "total_tokens": run.metrics.total_tokens if run.metrics is not None else None,
        }

    # A streaming run: count the raw SSE `data:` lines too, because the client silently drops
    # events it cannot parse (unknown `event` names, bad JSON).
    raw_data_lines = []
    original_stream = client._astream_post_form_data

    async def counting_stream(*a, **kw):
        async for line in original_stream(*a, **kw):
            if line.startswith("data: "):
                raw_data_lines.append(line)
            yield line

    client._astream_post_form_data = counting_stream

    async def collect_stream():
        events = []
        async for event in client.run_agent_stream(
            agent_id, args.message, session_id=session_id, user_id=user_id, headers=headers
        ):
            events.append(event)
        return events

    events = await step(results, "run_agent_stream", collect_stream())
    client._astream_post_form_data = original_stream
    if events is not None:
        names = [e.event for e in events]
        completed = [e for e in events if e.event == "RunCompleted"]
        streamed = "".join(
            e.content for e in events if e.event == "RunContent" and isinstance(getattr(e, "content", None), str)
        )
        results["stream"] = {
            "events": names,
            "event_classes": sorted({type(e).__name__ for e in events}),
            "raw_data_lines": len(raw_data_lines),
            "roundtrip_diffs": [
                diff
                for line, event in zip(raw_data_lines, events)
                for diff in roundtrip_diffs(json.loads(line[6:]), event.to_dict(), event.event)
            ],
            "run_ids": sorted({e.run_id for e in events if getattr(e, "run_id", None)}),
            "session_ids": sorted({e.session_id for e in events if getattr(e, "session_id", None)}),
            "streamed_content": streamed,
            "final_content": completed[-1].content if completed else None,
        }

    # The agent's runs. Agno 3.1.10's client has no typed method for GET /agents/{id}/runs[/{run_id}]
    # (its RemoteAgent does not read runs back), so these go through the client's own transport and
    # are parsed with the models Agno's server answers with (RunSchema for the list, RunOutput for one).
    if run is not None:

        async def list_agent_runs():
            params = {"session_id": session_id}
            listed = await client._aget(f"/agents/{agent_id}/runs", params=params, headers=headers)
            return [RunSchema.model_validate(r) for r in listed]

        async def get_agent_run():
            params = {"session_id": session_id}
            fetched = await client._aget(f"/agents/{agent_id}/runs/{run.run_id}", params=params, headers=headers)
            return RunOutput.from_dict(fetched)

        listed = await step(results, "list_agent_runs", list_agent_runs())
        if listed is not None:
            results["agent_runs"] = [
                {"run_id": r.run_id, "agent_id": r.agent_id, "status": r.status, "content": r.content}
                for r in listed
            ]
        output = await step(results, "get_agent_run", get_agent_run())
        if output is not None:
            results["agent_run"] = {
                "run_id": output.run_id,
                "session_id": output.session_id,
                "status": output.status.value if output.status is not None else None,
                "content": output.content,
            }

        # The session's runs: typed client methods (served by the /sessions routes).
        session_runs = await step(
            results, "get_session_runs", client.get_session_runs(session_id, user_id=user_id, headers=headers)
        )
        if session_runs is not None:
            results["session_runs"] = [{"run_id": r.run_id, "agent_id": r.agent_id} for r in session_runs]
        session_run = await step(
            results,
            "get_session_run",
            client.get_session_run(session_id, run.run_id, user_id=user_id, headers=headers),
        )
        if session_run is not None:
            results["session_run"] = {"run_id": session_run.run_id, "agent_id": session_run.agent_id}

    # RemoteAgent: Agno's agent proxy, built on the same client (config read, then a run).
    async def remote_agent_run():
        from agno.agent import RemoteAgent

        remote = RemoteAgent(base_url=args.base_url, agent_id=agent_id, timeout=30.0)
        output = await remote.arun(args.message, session_id=session_id, user_id=user_id, auth_token=args.token)
        return output

    remote_output = await step(results, "remote_agent_arun", remote_agent_run())
    if remote_output is not None:
        results["remote_agent_run"] = {"run_id": remote_output.run_id, "content": remote_output.content}

    async def remote_agent_stream():
        from agno.agent import RemoteAgent

        remote = RemoteAgent(base_url=args.base_url, agent_id=agent_id, timeout=30.0)
        stream = remote.arun(
            args.message,
            stream=True,
            stream_events=True,
            session_id=session_id,
            user_id=user_id,
            auth_token=args.token,
        )
        return [event async for event in stream]

    remote_events = await step(results, "remote_agent_arun_stream", remote_agent_stream())
    if remote_events is not None:
        completed = [e for e in remote_events if e.event == "RunCompleted"]
        results["remote_agent_stream"] = {
            "events": [e.event for e in remote_events],
            "final_content": completed[-1].content if completed else None,
        }

    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("--token", default=None, help="a bearer token (JWT) sent on every call")
    parser.add_argument("--agent", default=None, help="the agent to check (default: the first listed)")
    parser.add_argument("--message", default="hello from the agno python client")
    parser.add_argument("--session-id", default=None)
    parser.add_argument("--user-id", default=None)
    args = parser.parse_args()

    results = asyncio.run(run_checks(args))
    for name, tb in results.pop("tracebacks").items():
        print(f"--- {name}\n{tb}", file=sys.stderr)
    print(json.dumps(results, default=str, sort_keys=True))


if __name__ == "__main__":
    main()
