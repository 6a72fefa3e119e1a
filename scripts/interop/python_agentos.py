"""Start a Python AgentOS 3.1 the way the shape-parity test (and a developer comparing by hand)
needs it: one agent `demo` on an OpenAI-compatible server, storage in SQLite or PostgreSQL.

Usage: python_agentos.py --port PORT --db URL --model-base-url URL [--jwt-secret SECRET] [--mcp] [--tracing]
                          [--approvals] [--compaction] [--media-dir DIR] [--a2a] [--agui] [--components]

    --db sqlite:///path/to.db  or  postgresql://user@host:port/db?schema=name

The agent mirrors what the test configures in agno serve: `demo`, OpenAIChat gpt-4o-mini at the
given base URL, history on; team `desk` (leader on the same model, member demo); and workflow
`flow`: step `draft` (agent demo), then loop `polish` (two iterations of step `again`, agent demo).
With --approvals, also agent `approver` (named Approver, same model) whose tool `add` needs an
admin's approval (`@approval`), and `/approvals` on the OS database. With --compaction, also agent
`folder` (named Folder, same model, history on) that compacts when asked, keeping its newest run
(`Compaction(compact_at_tokens=None, uncompacted_runs=1)`). With --media-dir, the OS serves media
from `LocalMediaStorage(base_path=DIR)`. With --components, `/components` and `/registry` on the OS
database. With --a2a, the agents, the team and the workflow are
also served over A2A v0.3 at `/a2a` (`a2a_interface=True`); with --agui, agent `demo` over AG-UI at `/agui`
(`interfaces=[AGUI(agent=demo)]`). Prints "ready" on stdout
once uvicorn serves; runs until killed.
Needs `agno==3.1.*` with fastapi, uvicorn, sqlalchemy and psycopg (the CI venv has them).
"""

import argparse
import urllib.parse


def make_db(url):
    if url.startswith("sqlite://"):
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_file=url[len("sqlite://"):])
    if url.startswith("mysql://"):
        from agno.db.mysql import MySQLDb

        parsed = urllib.parse.urlparse(url)
        database = parsed.path.lstrip("/")
        return MySQLDb(db_url=urllib.parse.urlunparse(parsed._replace(scheme="mysql+pymysql")), db_schema=database)
    from agno.db.postgres import PostgresDb

    parsed = urllib.parse.urlparse(url)
    schema = urllib.parse.parse_qs(parsed.query).get("schema", ["ai"])[0]
    base = urllib.parse.urlunparse(parsed._replace(query="", scheme="postgresql+psycopg"))
    return PostgresDb(db_url=base, db_schema=schema)


def make_knowledge(folder, contents_db):
    """Knowledge `docs` on LanceDb with an offline bag-of-words embedder (agno-rs's `hash:256`)."""
    import re
    import zlib

    from agno.knowledge.embedder.base import Embedder
    from agno.knowledge.knowledge import Knowledge
    from agno.vectordb.lancedb import LanceDb
    from agno.vectordb.search import SearchType

    class HashEmbedder(Embedder):
        def get_embedding(self, text):
            v = [0.0] * self.dimensions
            for word in re.findall(r"\w+", text.lower()):
                v[zlib.crc32(word.encode()) % self.dimensions] += 1.0
            norm = sum(x * x for x in v) ** 0.5 or 1.0
            return [x / norm for x in v]

        def get_embedding_and_usage(self, text):
            return self.get_embedding(text), None

        async def async_get_embedding(self, text):
            return self.get_embedding(text)

        async def async_get_embedding_and_usage(self, text):
            return self.get_embedding(text), None

    vector_db = LanceDb(
        uri=folder, table_name="docs", search_type=SearchType.hybrid, embedder=HashEmbedder(dimensions=256)
    )
    return Knowledge(name="docs", contents_db=contents_db, vector_db=vector_db)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--model-base-url", required=True)
    parser.add_argument("--jwt-secret")
    parser.add_argument("--knowledge-dir", help="serve knowledge base `docs` (LanceDb in this folder)")
    parser.add_argument("--scheduler", action="store_true", help="serve /schedules (the OS database, a poller)")
    parser.add_argument("--mcp", action="store_true", help="serve /mcp (mcp_server=True; needs fastmcp)")
    parser.add_argument(
        "--tracing",
        action="store_true",
        help="trace runs into the database (tracing=True; needs opentelemetry-sdk and openinference-instrumentation-agno)",
    )
    parser.add_argument(
        "--approvals", action="store_true", help="serve agent `approver` (its `add` needs approval) and /approvals"
    )
    parser.add_argument("--compaction", action="store_true", help="serve agent `folder`, which compacts when asked")
    parser.add_argument("--media-dir", help="serve /sessions/{id}/media/{key} from this LocalMediaStorage directory")
    parser.add_argument("--a2a", action="store_true", help="serve the A2A interface at /a2a (a2a_interface=True; needs a2a-sdk<1.0)")
    parser.add_argument("--agui", action="store_true", help="serve agent demo over AG-UI at /agui (needs ag-ui-protocol)")
    parser.add_argument("--components", action="store_true", help="serve /components and /registry (the OS database)")
    parser.add_argument("--filesystem", action="store_true", help="serve agent `notes` with filesystem=True, seeded (seed_files.py)")
    args = parser.parse_args()

    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
    from agno.os import AgentOS

    knowledge = make_knowledge(args.knowledge_dir, make_db(args.db)) if args.knowledge_dir else None
    agent = Agent(
        id="demo",
        name="Demo",
        model=OpenAIChat(id="gpt-4o-mini", base_url=args.model_base_url, api_key="sk-test"),
        db=make_db(args.db),
        add_history_to_context=True,
        knowledge=knowledge,
    )
    kwargs = {}
    if args.jwt_secret:
        from agno.os.config import AuthorizationConfig

        kwargs["authorization"] = True
        kwargs["authorization_config"] = AuthorizationConfig(verification_keys=[args.jwt_secret], algorithm="HS256")
    from agno.workflow import Loop, Step, Workflow

    workflow = Workflow(
        id="flow",
        name="Flow",
        description="Draft then polish",
        db=make_db(args.db),
        steps=[
            Step(name="draft", agent=agent),
            Loop(name="polish", steps=[Step(name="again", agent=agent)], max_iterations=2),
        ],
    )
    from agno.team import Team

    team = Team(
        id="desk",
        name="Desk",
        description="A desk",
        model=OpenAIChat(id="gpt-4o-mini", base_url=args.model_base_url, api_key="sk-test"),
        members=[agent],
        db=make_db(args.db),
    )
    if knowledge is not None:
        kwargs["knowledge"] = [knowledge]
    if args.scheduler:
        import agno.scheduler

        class QuickExecutor(agno.scheduler.ScheduleExecutor):
            """Looks at a triggered run every second instead of every 30 s (only the wait changes)."""

            def __init__(self, *a, **kw):
                kw.setdefault("poll_interval", 1)
                super().__init__(*a, **kw)

        # The scheduler's lifespan imports the executor from `agno.scheduler` when it starts.
        agno.scheduler.ScheduleExecutor = QuickExecutor
        kwargs.update(
            db=make_db(args.db),
            scheduler=True,
            scheduler_poll_interval=1,
            scheduler_base_url=f"http://127.0.0.1:{args.port}",
        )
    if args.mcp:
        kwargs["mcp_server"] = True
    if args.tracing:
        kwargs["tracing"] = True
        # FastAPI 0.16x traces every HTTP request itself once an OpenTelemetry provider is set, so
        # each of AgentOS's run traces would hang under a request span with none of the run's ids
        # (named after its first child, `fastapi.dependencies`). AgentOS 3.1.10 roots its traces at
        # runs, as with the FastAPI it was released with: its HTTP spans are turned off here.
        import fastapi

        plain_init = fastapi.FastAPI.__init__

        def init_without_http_spans(self, *a, **kw):
            kw.setdefault("telemetry", {"tracing": False})
            plain_init(self, *a, **kw)

        fastapi.FastAPI.__init__ = init_without_http_spans
    agents = [agent]
    if args.approvals:
        from agno.approval import approval
        from agno.tools import tool

        @approval
        @tool
        def add(a: int = 0, b: int = 0) -> str:
            """Add two numbers."""
            return str(a + b)

        agents.append(
            Agent(
                id="approver",
                name="Approver",
                model=OpenAIChat(id="gpt-4o-mini", base_url=args.model_base_url, api_key="sk-test"),
                db=make_db(args.db),
                tools=[add],
            )
        )
        kwargs["db"] = make_db(args.db)
    if args.compaction:
        from agno.compaction import Compaction

        agents.append(
            Agent(
                id="folder",
                name="Folder",
                model=OpenAIChat(id="gpt-4o-mini", base_url=args.model_base_url, api_key="sk-test"),
                db=make_db(args.db),
                add_history_to_context=True,
                compaction=Compaction(compact_at_tokens=None, uncompacted_runs=1),
            )
        )
    if args.media_dir:
        from agno.media.storage.local import LocalMediaStorage

        kwargs["media_storage"] = LocalMediaStorage(base_path=args.media_dir)
    if args.a2a:
        kwargs["a2a_interface"] = True
    if args.components:
        kwargs["db"] = make_db(args.db)
    if args.filesystem:
        from seed_files import seed

        seed(make_db(args.db))
        agents.append(
            Agent(
                id="notes",
                name="Notes",
                model=OpenAIChat(id="gpt-4o-mini", base_url=args.model_base_url, api_key="sk-test"),
                db=make_db(args.db),
                filesystem=True,
            )
        )
    if args.agui:
        from agno.os.interfaces.agui import AGUI

        kwargs["interfaces"] = [AGUI(agent=agent)]
    agent_os = AgentOS(id="parity-os", agents=agents, teams=[team], workflows=[workflow], **kwargs)
    app = agent_os.get_app()

    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning")
    server = uvicorn.Server(config)
    print("starting", flush=True)
    server.run()


if __name__ == "__main__":
    main()
