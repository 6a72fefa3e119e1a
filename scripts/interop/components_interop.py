"""Python Agno 3.1 writes and reads the component catalog (agno_components, agno_component_configs,
agno_component_links) of a database agno-rs shares, so tests can check both read what the other
wrote, and that Agno's rules hold on what agno-rs stored.

Used by agno_testkit::components_interop (AGNO_PYTHON: a Python with `agno==3.1.*`,
`sqlalchemy` and `psycopg`; `scripts/test --all` creates it).

    python components_interop.py write|read|publish sqlite   <file>
    python components_interop.py write|read|publish postgres <sqlalchemy-url> <schema>

write:   creates agent `py-agent` (v1 published, v2 draft) and team `py-team` (v1 published,
         pinning py-agent v1).
read:    prints every component with its configs (newest first, with their config) and the
         links of each version.
publish: publishes draft v2 of `rs-agent` (written by agno-rs), then tries to delete `rs-agent`
         (agno-rs's team pins it: Agno must refuse) and prints what happened.
Prints one JSON line.
"""
import json
import sys


def open_db(kind, args):
    if kind == "sqlite":
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_file=args[0])
    from agno.db.postgres import PostgresDb

    return PostgresDb(db_url=args[0], db_schema=args[1])


def write(db):
    from agno.db.base import ComponentType

    agent = {"name": "Py Agent", "model": {"id": "gpt-4o-mini", "provider": "OpenAI"}, "instructions": ["Be brief"]}
    db.create_component_with_config(
        component_id="py-agent",
        component_type=ComponentType.AGENT,
        name="Py Agent",
        config=agent,
        description="written by Python",
        metadata={"origin": "python"},
        label="first",
        stage="published",
        notes="v1",
    )
    db.upsert_config(component_id="py-agent", config=dict(agent, name="Py Agent Two"), notes="v2 draft")
    team = {"name": "Py Team", "members": [{"type": "agent", "agent_id": "py-agent"}], "mode": "coordinate"}
    link = {
        "link_kind": "member",
        "link_key": "member_0",
        "child_component_id": "py-agent",
        "child_version": 1,
        "position": 0,
        "meta": {"type": "agent"},
    }
    db.create_component_with_config(
        component_id="py-team",
        component_type=ComponentType.TEAM,
        name="Py Team",
        config=team,
        stage="published",
        links=[link],
    )
    return {"written": ["py-agent", "py-team"]}


def read(db):
    components, _ = db.list_components(limit=1000)
    out = []
    for c in components:
        configs = db.list_configs(c["component_id"], include_config=True)
        for config in configs:
            config.pop("deleted_at", None)  # PostgreSQL's configs table has it; nothing writes it
        links = {}
        for config in configs:
            version = config["version"]
            links[str(version)] = db.get_links(c["component_id"], version)
        out.append({"component": c, "configs": configs, "links": links})
    return {"components": out}


def publish(db):
    config = db.upsert_config(component_id="rs-agent", version=2, stage="published")
    component = db.get_component("rs-agent")
    try:
        db.delete_component("rs-agent")
        refused = None
    except Exception as e:  # Agno's ComponentDependencyError
        refused = f"{type(e).__name__}: {e}"
    return {"published": config["version"], "current_version": component["current_version"], "refused": refused}


def main():
    action, kind = sys.argv[1], sys.argv[2]
    db = open_db(kind, sys.argv[3:])
    answer = {"write": write, "read": read, "publish": publish}[action](db)
    print(json.dumps(answer, default=str))


if __name__ == "__main__":
    main()
