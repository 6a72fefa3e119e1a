"""The Python side of the serve benchmark (`scripts/bench/compare-python`): a Python AgentOS 3.1
configured like the `agno serve` it is compared with.

Usage: python_agentos.py --port PORT --db URL --model-base-url URL [--agents N] [--queue-concurrency C]

    --db sqlite:///path/to.db  or  postgresql://user@host:port/db?schema=name

Agents `bench` then `helper-1` .. `helper-{N-1}` (N = 10 by default), each OpenAIChat gpt-4o-mini
at the given base URL with the database as storage and nothing else. `--queue-concurrency C`
turns on the durable background queue (`QueueConfig(durable=True, max_concurrency=C)`, polled
every 100 ms like agno serve's bench config; Python's durable queue needs PostgreSQL). Serves on
127.0.0.1 with uvicorn, one process, access log off, until killed.
"""

import argparse
import importlib.util
import pathlib


def make_db(url):
    """The database as the interop script opens it (`scripts/interop/python_agentos.py`)."""
    path = pathlib.Path(__file__).resolve().parent.parent / "interop" / "python_agentos.py"
    spec = importlib.util.spec_from_file_location("interop_python_agentos", path)
    interop = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(interop)
    return interop.make_db(url)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--model-base-url", required=True)
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--queue-concurrency", type=int)
    args = parser.parse_args()

    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
    from agno.os import AgentOS

    db = make_db(args.db)
    ids = ["bench"] + [f"helper-{i}" for i in range(1, args.agents)]
    agents = [
        Agent(
            id=agent_id,
            name=agent_id,
            model=OpenAIChat(id="gpt-4o-mini", base_url=args.model_base_url, api_key="sk-bench"),
            db=db,
        )
        for agent_id in ids
    ]
    kwargs = {}
    if args.queue_concurrency:
        from agno.job_queue.config import QueueConfig

        kwargs["queue"] = QueueConfig(durable=True, max_concurrency=args.queue_concurrency, poll_interval=0.1)
    agent_os = AgentOS(id="bench-os", agents=agents, db=db, telemetry=False, **kwargs)
    app = agent_os.get_app()

    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
