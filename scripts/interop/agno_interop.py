"""Interop probe: Python Agno 3.1.x reads what agno-rs wrote, and writes what agno-rs reads.

Used by crates/agno-db/tests/python_interop.rs (run with AGNO_PYTHON pointing at a Python that
has `agno==3.1.*` and `sqlalchemy[asyncio]`; .ci/run sets that up).

    python agno_interop.py read  <sqlite-file> <session-id>   # prints what Agno reads, as JSON
    python agno_interop.py write <sqlite-file> <session-id>   # writes a session with 2 runs, prints them
    python agno_interop.py read-schedules <sqlite-file> <schedule-id>   # Agno's view of a schedule, its runs, metrics
    python agno_interop.py write-schedules <sqlite-file> <schedule-id>  # a schedule, a run, and today's metrics
    python agno_interop.py write-workflow <db-url> <session-id>   # runs a real Workflow (function steps) and
                                                                  # stores a team run with a member run
    python agno_interop.py read-workflow <db-url> <session-id>    # Agno's view of workflow and team sessions
    python agno_interop.py workflow-shape <db-url> <session-id>   # streams the reference workflow (every
                                                                  # primitive); prints its events and steps
    python agno_interop.py compacted-run <sqlite-file> <session-id> <agent-id> <openai-base-url> <user-id>
                          # one run of a compacting Agent (manual folds only) in a session agno-rs compacted;
                          # the model is the fake provider at the base URL; prints the run and the fold in force
    python agno_interop.py media-run <sqlite-file> <session-id> <openai-base-url> <media-dir> <user-id>
                          # one run of an Agent with LocalMediaStorage(media-dir) on an attached PNG: the
                          # image is offloaded; prints the run (its media_reference) and the PNG's base64

<db-url> is a SQLite file path or a postgresql:// URL.
"""
import json
import sys

from agno.db.base import SessionType
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.models.response import ToolExecution
from agno.run.agent import RunInput, RunOutput
from agno.run.base import RunStatus
from agno.session.agent import AgentSession


def read(path: str, session_id: str) -> None:
    db = SqliteDb(db_file=path)
    session = db.get_session(session_id=session_id, session_type=SessionType.AGENT)
    runs = db.get_runs(session_id=session_id)
    single = db.get_run(runs[0].run_id) if runs else None
    print(
        json.dumps(
            {
                "session": session.to_dict() if session else None,
                "runs": [r.to_dict() for r in runs],
                "first_run_by_id": single.to_dict() if single else None,
            }
        )
    )


def write(path: str, session_id: str) -> None:
    db = SqliteDb(db_file=path)
    session = AgentSession(
        session_id=session_id,
        agent_id="py-agent",
        user_id="py-user",
        session_data={"session_state": {"written_by": "python"}, "session_name": "from python"},
        agent_data={"name": "Py", "agent_id": "py-agent"},
        created_at=1700000000,
    )
    db.upsert_session(session)
    runs = []
    for i in range(2):
        tool = ToolExecution(tool_call_id=f"call_{i}", tool_name="add", tool_args={"a": i, "b": 1}, result=str(i + 1))
        run = RunOutput(
            run_id=f"py-run-{i}",
            agent_id="py-agent",
            agent_name="Py",
            session_id=session_id,
            user_id="py-user",
            input=RunInput(input_content=f"question {i}"),
            content=f"answer {i}",
            messages=[
                Message(role="user", content=f"question {i}"),
                Message(
                    role="assistant",
                    tool_calls=[{"id": f"call_{i}", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
                ),
                Message(role="tool", tool_call_id=f"call_{i}", content=str(i + 1)),
                Message(role="assistant", content=f"answer {i}"),
            ],
            tools=[tool],
            status=RunStatus.completed,
            created_at=1700000000 + i,
        )
        db.upsert_run(run, session_id=session_id, user_id="py-user")
        runs.append(run.to_dict())
    print(json.dumps({"runs": runs}))


def read_schedules(path: str, schedule_id: str) -> None:
    db = SqliteDb(db_file=path)
    schedule = db.get_schedule(schedule_id)
    owned = db.get_schedule(schedule_id, user_id=schedule["user_id"]) if schedule else None
    foreign = db.get_schedule(schedule_id, user_id="someone-else")
    runs, total = db.get_schedule_runs(schedule_id)
    # Metrics are read as stored: the lazy refresh is pushed past this call.
    db._metrics_refreshed_at = 1e18
    metrics, latest = db.get_metrics()
    print(
        json.dumps(
            {
                "schedule": schedule,
                "owned": owned is not None,
                "foreign": foreign is not None,
                "runs": runs,
                "runs_total": total,
                "metrics": metrics,
                "metrics_latest": latest,
            },
            default=str,
        )
    )


def write_schedules(path: str, schedule_id: str) -> None:
    import time

    db = SqliteDb(db_file=path)
    now = int(time.time())
    schedule = {
        "id": schedule_id,
        "name": "py-nightly",
        "description": "written by python",
        "method": "POST",
        "endpoint": "/agents/py-agent/runs",
        "payload": {"message": "hi", "n": [1, 2]},
        "cron_expr": "0 3 * * *",
        "timezone": "UTC",
        "timeout_seconds": 600,
        "max_retries": 2,
        "retry_delay_seconds": 30,
        "enabled": True,
        "next_run_at": now + 3600,
        "user_id": "py-user",
        "created_at": now,
    }
    db.create_schedule(schedule)
    db.create_schedule_run(
        {
            "id": schedule_id + "-run",
            "schedule_id": schedule_id,
            "attempt": 1,
            "triggered_at": now,
            "status": "success",
            "status_code": 200,
            "run_id": "r1",
            "output": {"content": "ok"},
            "user_id": "py-user",
            "created_at": now,
        }
    )
    for i, user in enumerate(["py-user", None]):
        session = AgentSession(
            session_id=f"metrics-{i}",
            agent_id="py-agent",
            user_id=user,
            session_data={"session_metrics": {"input_tokens": 10 + i, "output_tokens": 3, "total_tokens": 13 + i}},
            created_at=now,
        )
        db.upsert_session(session)
        run = RunOutput(
            run_id=f"metrics-run-{i}",
            agent_id="py-agent",
            session_id=f"metrics-{i}",
            user_id=user,
            model="gpt-4o",
            model_provider="OpenAI",
            status=RunStatus.completed,
            created_at=now,
        )
        db.upsert_run(run, session_id=f"metrics-{i}", user_id=user)
    db.calculate_metrics()
    db._metrics_refreshed_at = 1e18
    metrics, _ = db.get_metrics()
    print(json.dumps({"schedule": schedule, "metrics": metrics}, default=str))


def open_db(url: str):
    """A SQLite file path, or a PostgreSQL URL (with agno-rs's `?schema=NAME` for the schema)."""
    if url.startswith("postgres"):
        from urllib.parse import parse_qs, urlsplit, urlunsplit

        from agno.db.postgres import PostgresDb

        parts = urlsplit(url)
        schema = parse_qs(parts.query).get("schema", ["ai"])[0]
        base = urlunsplit(("postgresql+psycopg", parts.netloc, parts.path, "", ""))
        return PostgresDb(db_url=base, db_schema=schema)
    return SqliteDb(db_file=url)


def write_workflow(url: str, session_id: str) -> None:
    """A workflow session written by Agno's own Workflow engine, and a team session with one member run."""
    from agno.run.team import TeamRunInput, TeamRunOutput
    from agno.session.team import TeamSession
    from agno.workflow import Loop, Parallel, Step, Steps, Workflow
    from agno.workflow.types import StepInput, StepOutput

    def shout(step_input: StepInput) -> StepOutput:
        return StepOutput(content=str(step_input.input).upper())

    def add_x(step_input: StepInput) -> StepOutput:
        return StepOutput(content=(step_input.previous_step_content or "") + "x")

    db = open_db(url)
    workflow = Workflow(
        id="py-workflow",
        name="Shout",
        db=db,
        steps=[
            Step(name="shout", executor=shout),
            Steps(name="group", steps=[Step(name="g1", executor=add_x)]),
            Loop(name="loop", steps=[Step(name="l1", executor=add_x)], max_iterations=2),
            Parallel(Step(name="p1", executor=add_x), Step(name="p2", executor=add_x), name="par"),
        ],
    )
    wf_run = workflow.run(input="hello world", session_id=session_id, user_id="py-user")

    team_session_id = session_id + "-team"
    db.upsert_session(
        TeamSession(
            session_id=team_session_id,
            team_id="py-team",
            user_id="py-user",
            session_data={"session_state": {"written_by": "python"}},
            team_data={"name": "Py Team", "team_id": "py-team"},
            created_at=1700000000,
        )
    )
    member = RunOutput(
        run_id="py-member-run",
        agent_id="py-member",
        agent_name="Member",
        session_id=team_session_id,
        parent_run_id="py-team-run",
        user_id="py-user",
        input=RunInput(input_content="sub task"),
        messages=[Message(role="user", content="sub task"), Message(role="assistant", content="member answer")],
        content="member answer",
        status=RunStatus.completed,
        created_at=1700000001,
    )
    from agno.run.agent import RunStartedEvent as MemberStarted
    from agno.run.team import RunCompletedEvent as TeamCompleted
    from agno.run.team import RunStartedEvent as TeamStarted

    common = {"run_id": "py-team-run", "session_id": team_session_id, "team_id": "py-team", "team_name": "Py Team"}
    # As a streamed team run keeps them: the team's events and its member's.
    events = [
        TeamStarted(created_at=1700000002, model="gpt-4o-mini", model_provider="OpenAI", **common),
        MemberStarted(
            created_at=1700000002,
            run_id="py-member-run",
            parent_run_id="py-team-run",
            session_id=team_session_id,
            agent_id="py-member",
            agent_name="Py Member",
            model="gpt-4o-mini",
            model_provider="OpenAI",
        ),
        TeamCompleted(created_at=1700000002, content="team answer", **common),
    ]
    team_run = TeamRunOutput(
        run_id="py-team-run",
        team_id="py-team",
        team_name="Py Team",
        session_id=team_session_id,
        user_id="py-user",
        input=TeamRunInput(input_content="team question"),
        messages=[Message(role="user", content="team question"), Message(role="assistant", content="team answer")],
        content="team answer",
        member_responses=[member],
        events=events,
        status=RunStatus.completed,
        created_at=1700000002,
    )
    db.upsert_run(member, session_id=team_session_id, user_id="py-user")
    db.upsert_run(team_run, session_id=team_session_id, user_id="py-user")
    print(json.dumps({"workflow_run": wf_run.to_dict(), "team_run": team_run.to_dict()}, default=str))


def workflow_shape(url: str, session_id: str) -> None:
    """The reference workflow of crates/agno-runtime/tests/workflow.rs: one of each primitive over
    function steps. Prints the streamed events (name, step name, step index) and the stored run."""
    from agno.workflow import Condition, Loop, Parallel, Router, Step, Steps, Workflow
    from agno.workflow.types import StepInput, StepOutput

    def shout(step_input: StepInput) -> StepOutput:
        return StepOutput(content=str(step_input.input).upper())

    def add_x(step_input: StepInput) -> StepOutput:
        return StepOutput(content=(step_input.previous_step_content or "") + "x")

    def pick(step_input: StepInput):
        return [choice_b]

    choice_a = Step(name="a", executor=add_x)
    choice_b = Step(name="b", executor=add_x)
    workflow = Workflow(
        id="shape",
        name="Shape",
        db=open_db(url),
        steps=[
            Step(name="shout", executor=shout),
            Steps(name="group", steps=[Step(name="g1", executor=add_x), Step(name="g2", executor=add_x)]),
            Loop(name="loop", steps=[Step(name="l1", executor=add_x)], max_iterations=2),
            Condition(name="yes", evaluator=True, steps=[Step(name="c1", executor=add_x)]),
            Condition(name="no", evaluator=False, steps=[Step(name="c2", executor=add_x)]),
            Router(name="route", selector=pick, choices=[choice_a, choice_b]),
            Parallel(Step(name="p1", executor=add_x), Step(name="p2", executor=add_x), name="par"),
        ],
    )
    events = []
    for event in workflow.run(input="hello world", session_id=session_id, user_id="py-user", stream=True, stream_events=True):
        d = event.to_dict()
        events.append([d["event"], d.get("step_name"), d.get("step_index")])
    runs = open_db(url).get_runs(session_id=session_id)
    print(json.dumps({"events": events, "run": runs[-1].to_dict()}, default=str))


def read_workflow(url: str, session_id: str) -> None:
    db = open_db(url)
    workflow_session = db.get_session(session_id=session_id, session_type=SessionType.WORKFLOW)
    team_session = db.get_session(session_id=session_id + "-team", session_type=SessionType.TEAM)
    workflow_runs = db.get_runs(session_id=session_id)
    team_runs = db.get_runs(session_id=session_id + "-team")
    print(
        json.dumps(
            {
                "workflow_session": workflow_session.to_dict() if workflow_session else None,
                "team_session": team_session.to_dict() if team_session else None,
                "workflow_runs": [r.to_dict() for r in workflow_runs],
                "team_runs": [r.to_dict() for r in team_runs],
            },
            default=str,
        )
    )


def compacted_run(path: str, session_id: str) -> None:
    from agno.agent import Agent
    from agno.compaction import Compaction
    from agno.models.openai import OpenAIChat

    agent_id, base_url, user_id = sys.argv[4], sys.argv[5], sys.argv[6]
    db = SqliteDb(db_file=path)
    agent = Agent(
        id=agent_id,
        db=db,
        model=OpenAIChat(id="gpt-4o-mini", base_url=base_url, api_key="sk-test"),
        add_history_to_context=True,
        compaction=Compaction(compact_at_tokens=None, uncompacted_runs=5),
    )
    run = agent.run("question from python", session_id=session_id, user_id=user_id)
    folds = db.get_compactions_for_session(session_id)
    print(json.dumps({"run": run.to_dict(), "folds": folds}, default=str))


def media_run(path: str, session_id: str) -> None:
    import base64

    from agno.agent import Agent
    from agno.media import Image
    from agno.media.storage.local import LocalMediaStorage
    from agno.models.openai import OpenAIChat

    base_url, media_dir, user_id = sys.argv[4], sys.argv[5], sys.argv[6]
    # A 1x1 PNG.
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    agent = Agent(
        id="viewer",
        db=SqliteDb(db_file=path),
        model=OpenAIChat(id="gpt-4o-mini", base_url=base_url, api_key="sk-test"),
        media_storage=LocalMediaStorage(base_path=media_dir),
    )
    run = agent.run("what is this?", images=[Image(content=png, mime_type="image/png")], session_id=session_id, user_id=user_id)
    stored = SqliteDb(db_file=path).get_run(run.run_id)
    print(json.dumps({"run": stored.to_dict() if stored else None, "png": base64.b64encode(png).decode()}, default=str))


if __name__ == "__main__":
    mode, path, key = sys.argv[1], sys.argv[2], sys.argv[3]
    modes = {
        "read": read,
        "write": write,
        "read-schedules": read_schedules,
        "write-schedules": write_schedules,
        "write-workflow": write_workflow,
        "read-workflow": read_workflow,
        "workflow-shape": workflow_shape,
        "compacted-run": compacted_run,
        "media-run": media_run,
    }
    modes[mode](path, key)
