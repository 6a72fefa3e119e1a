"""Start a Python AgentOS 3.1 the way the shape-parity test (and a developer comparing by hand)
needs it: one agent `demo` on an OpenAI-compatible server, storage in SQLite or PostgreSQL.

Usage: python_agentos.py --port PORT --db URL --model-base-url URL [--jwt-secret SECRET]

    --db sqlite:///path/to.db  or  postgresql://user@host:port/db?schema=name

The agent mirrors what the test configures in agno serve: `demo`, OpenAIChat gpt-4o-mini at the
given base URL, history on; team `desk` (leader on the same model, member demo); and workflow
`flow`: step `draft` (agent demo), then loop `polish` (two iterations of step `again`, agent demo). Prints "ready" on stdout once uvicorn serves; runs until killed.
Needs `agno==3.1.*` with fastapi, uvicorn, sqlalchemy and psycopg (the CI venv has them).
"""

import argparse
import urllib.parse


def make_db(url):
    if url.startswith("sqlite://"):
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_file=url[len("sqlite://"):])
    from agno.db.postgres import PostgresDb

    parsed = urllib.parse.urlparse(url)
    schema = urllib.parse.parse_qs(parsed.query).get("schema", ["ai"])[0]
    base = urllib.parse.urlunparse(parsed._replace(query="", scheme="postgresql+psycopg"))
    return PostgresDb(db_url=base, db_schema=schema)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--model-base-url", required=True)
    parser.add_argument("--jwt-secret")
    args = parser.parse_args()

    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
    from agno.os import AgentOS

    agent = Agent(
        id="demo",
        name="Demo",
        model=OpenAIChat(id="gpt-4o-mini", base_url=args.model_base_url, api_key="sk-test"),
        db=make_db(args.db),
        add_history_to_context=True,
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
    agent_os = AgentOS(id="parity-os", agents=[agent], teams=[team], workflows=[workflow], **kwargs)
    app = agent_os.get_app()

    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning")
    server = uvicorn.Server(config)
    print("starting", flush=True)
    server.run()


if __name__ == "__main__":
    main()
