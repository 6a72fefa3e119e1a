"""Python Agno 3.1 reads a legacy database that agno-rs migrated, and compares it, whole, with
what Agno 2.9 read from the same data before (fixtures/legacy_v2/expected*.json).

Used by crates/agno-db/tests/legacy_sqlite.rs and postgres.rs (AGNO_PYTHON: a Python with
`agno==3.1.*`, `sqlalchemy[asyncio]` and `psycopg`; `scripts/test --all` creates it).

    python legacy_readback.py <expected.json> sqlite <file>
    python legacy_readback.py <expected.json> postgres <sqlalchemy-url> <schema>

For each session of the fixture it compares `get_session(...).to_dict()` (the session with its
runs), every run of `get_runs(session_id)` and `get_run(run_id)` with Agno 2.9's read. A key absent
on one side and None on the other is no difference (`to_dict` drops None fields). Prints one JSON
line: {"sessions": n, "runs": n, "differences": ["path: 2.9 -> 3.1", ...]}.
"""
import json
import sys

from agno.db.base import SessionType


def differences(want, got, path, out):
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            differences(want.get(key), got.get(key), f"{path}.{key}", out)
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (w, g) in enumerate(zip(want, got)):
            differences(w, g, f"{path}[{i}]", out)
    elif want != got:
        out.append(f"{path}: {json.dumps(want)[:200]} -> {json.dumps(got)[:200]}")


def open_db(kind, args):
    if kind == "sqlite":
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_file=args[0])
    from agno.db.postgres import PostgresDb

    return PostgresDb(db_url=args[0], db_schema=args[1])


def main():
    expected = json.load(open(sys.argv[1]))
    db = open_db(sys.argv[2], sys.argv[3:])
    out, runs = [], 0
    for want in expected["sessions"]:
        want = dict(want)
        kind = SessionType(want.pop("session_type", "agent"))
        sid = want["session_id"]
        session = db.get_session(session_id=sid, session_type=kind)
        if session is None:
            out.append(f"{sid}: missing")
            continue
        differences(want, session.to_dict(), sid, out)
        listed = db.get_runs(session_id=sid) or []
        want_runs = want.get("runs") or []
        if [r.run_id for r in listed] != [r["run_id"] for r in want_runs]:
            out.append(f"{sid}: get_runs lists {[r.run_id for r in listed]}")
            continue
        for w, got in zip(want_runs, listed):
            differences(w, got.to_dict(), f"{sid}/get_runs/{w['run_id']}", out)
            single = db.get_run(w["run_id"])
            differences(w, single.to_dict() if single else None, f"{sid}/get_run/{w['run_id']}", out)
            runs += 1
    print(json.dumps({"sessions": len(expected["sessions"]), "runs": runs, "differences": out}))


if __name__ == "__main__":
    main()
