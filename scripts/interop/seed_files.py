"""Writes the same few agent files into an Agno database with Python Agno's own `FileSystem`
(the namespace of agent `notes` with `filesystem=True`, shared partition), so that the
filesystem parity steps browse equal stores on Python AgentOS and agno-rs.

Usage: seed_files.py DB_URL   (sqlite://..., postgresql://...?schema=...)
"""

import sys

FILES = {
    "notes/plan.md": "step one\nstep two\nstep three\n",
    "notes/deep/idea.md": "an idea about steps\n",
    "todo.md": "buy milk\n",
}


def seed(db):
    from agno.fs import FileSystem

    store = FileSystem(db, namespace="{agent_id}").resolve(agent_id="notes")
    for path, content in FILES.items():
        store.write(path, content)


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from python_agentos import make_db

    seed(make_db(sys.argv[1]))
    print("seeded", len(FILES))
