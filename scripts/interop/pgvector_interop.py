"""Python Agno 3.1's PgVector against a table agno-rs shares (crates/agno-knowledge/tests/pgvector.rs).

    pgvector_interop.py write  --url URL --table T            # 3 chunks: 2 shared, 1 of user ann
    pgvector_interop.py search --url URL --table T --query Q [--user U] [--type vector|keyword|hybrid]

Both sides embed with the same offline 64-dimension bag of words (FNV-1a of each lowercase
alphanumeric word), so vector search agrees. `search` prints a JSON list of {name, content,
meta_data} on stdout.
"""

import argparse
import json
import re

DIMS = 64
MASK = (1 << 64) - 1


def fnv_vector(text):
    v = [0.0] * DIMS
    for word in re.findall(r"[^\W_]+", text):
        h = 0xCBF29CE484222325
        for b in word.lower().encode():
            h ^= b
            h = (h * 0x100000001B3) & MASK
        v[h % DIMS] += 1.0
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v] if norm else v


def vector_db(url, table, search_type="vector"):
    from agno.knowledge.embedder.base import Embedder
    from agno.vectordb.pgvector import PgVector
    from agno.vectordb.search import SearchType

    class FnvEmbedder(Embedder):
        def get_embedding(self, text):
            return fnv_vector(text)

        def get_embedding_and_usage(self, text):
            return fnv_vector(text), None

        async def async_get_embedding(self, text):
            return fnv_vector(text)

        async def async_get_embedding_and_usage(self, text):
            return fnv_vector(text), None

    db_url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    return PgVector(table_name=table, schema="ai", db_url=db_url, embedder=FnvEmbedder(dimensions=DIMS),
                    search_type=SearchType(search_type))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["write", "search"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--query")
    parser.add_argument("--user")
    parser.add_argument("--type", default="vector")
    args = parser.parse_args()
    import logging

    logging.getLogger("agno").setLevel(logging.CRITICAL)
    from agno.knowledge.document import Document

    if args.mode == "write":
        db = vector_db(args.url, args.table)
        db.create()
        shared = [
            Document(content="Lighthouse keepers trim the lamp wick every evening", name="keepers",
                     meta_data={"kind": "history"}, content_id="py-keepers"),
            Document(content="Harbor pilots guide ships past the rocks", name="pilots",
                     meta_data={"kind": "guide"}, content_id="py-pilots"),
        ]
        db.insert(content_hash="py-shared", documents=shared)
        private = [Document(content="Ann keeps a private lighthouse journal", name="ann-journal",
                            meta_data={"kind": "note"}, content_id="py-ann")]
        db.insert(content_hash="py-ann", documents=private, user_id="ann")
        print("written")
        return
    db = vector_db(args.url, args.table, args.type)
    found = db.search(args.query, limit=10, user_id=args.user)
    print(json.dumps([{"name": d.name, "content": d.content, "meta_data": d.meta_data} for d in found]))


if __name__ == "__main__":
    main()
