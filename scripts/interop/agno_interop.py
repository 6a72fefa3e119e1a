"""Interop probe: Python Agno 3.1.x reads what agno-rs wrote, and writes what agno-rs reads.

Used by crates/agno-db/tests/python_interop.rs (run with AGNO_PYTHON pointing at a Python that
has `agno==3.1.*` and `sqlalchemy[asyncio]`; .ci/run sets that up).

    python agno_interop.py read  <sqlite-file> <session-id>   # prints what Agno reads, as JSON
    python agno_interop.py write <sqlite-file> <session-id>   # writes a session with 2 runs, prints them
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


if __name__ == "__main__":
    mode, path, session_id = sys.argv[1], sys.argv[2], sys.argv[3]
    {"read": read, "write": write}[mode](path, session_id)
