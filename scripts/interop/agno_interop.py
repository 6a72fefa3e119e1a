"""Interop probe: Python Agno 3.1.x reads what agno-rs wrote, and writes what agno-rs reads.

Used by crates/agno-db/tests/python_interop.rs (run with AGNO_PYTHON pointing at a Python that
has `agno==3.1.*` and `sqlalchemy[asyncio]`; .ci/run sets that up).

    python agno_interop.py read  <sqlite-file> <session-id>   # prints what Agno reads, as JSON
    python agno_interop.py write <sqlite-file> <session-id>   # writes a session with 2 runs, prints them
    python agno_interop.py read-schedules <sqlite-file> <schedule-id>   # Agno's view of a schedule, its runs, metrics
    python agno_interop.py write-schedules <sqlite-file> <schedule-id>  # a schedule, a run, and today's metrics
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


if __name__ == "__main__":
    mode, path, key = sys.argv[1], sys.argv[2], sys.argv[3]
    modes = {"read": read, "write": write, "read-schedules": read_schedules, "write-schedules": write_schedules}
    modes[mode](path, key)
