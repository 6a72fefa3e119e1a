"""Python Agno 3.1 with LanceDb on the knowledge benchmark's corpus (see
crates/agno-knowledge/benches/knowledge.rs, which runs this when AGNO_PYTHON is set).

Same generator, same sizes, same 384-dimension bag-of-words embedder (FNV-1a of each word),
same 3-word queries, top 10. Prints one JSON object per size on stdout:
{"chunks", "store", "ingest_chunks_per_s", "keyword": [p50_ms, p99_ms], "vector": [...], "hybrid": [...]}.
With --pgvector URL, PgVector (HNSW, Agno's defaults) is measured too.

Usage: knowledge_bench.py --dir SCRATCH_DIR 10000 100000
"""

import argparse
import json
import sys
import time

DIMS = 384
VOCABULARY = 5000
WORDS_PER_CHUNK = 30
QUERIES = 200
PG_QUERIES = 50
MASK = (1 << 64) - 1


class Lcg:
    def __init__(self, seed):
        self.state = seed

    def next(self, n):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & MASK
        return (self.state >> 33) % n


def text(rng, words):
    return " ".join(f"w{rng.next(VOCABULARY)}" for _ in range(words))


def fnv_vector(s):
    v = [0.0] * DIMS
    for word in s.lower().split():
        h = 0xCBF29CE484222325
        for b in word.encode():
            h ^= b
            h = (h * 0x100000001B3) & MASK
        v[h % DIMS] += 1.0
    norm = sum(x * x for x in v) ** 0.5 or 1.0
    return [x / norm for x in v]


def percentile(sorted_ms, p):
    i = round((len(sorted_ms) - 1) * p)
    return sorted_ms[min(i, len(sorted_ms) - 1)]


def measure(n, folder, pgvector_url=None):
    from agno.knowledge.document import Document
    from agno.knowledge.embedder.base import Embedder
    from agno.vectordb.lancedb import LanceDb
    from agno.vectordb.search import SearchType

    class FnvEmbedder(Embedder):
        def get_embedding(self, s):
            return fnv_vector(s)

        def get_embedding_and_usage(self, s):
            return fnv_vector(s), None

        async def async_get_embedding(self, s):
            return fnv_vector(s)

        async def async_get_embedding_and_usage(self, s):
            return fnv_vector(s), None

    rng = Lcg(42)
    if pgvector_url:
        from agno.vectordb.pgvector import PgVector

        db = PgVector(table_name=f"agno_pybench_{n}", schema="ai", search_type=SearchType.hybrid,
                      db_url=pgvector_url.replace("postgresql://", "postgresql+psycopg://", 1),
                      embedder=FnvEmbedder(dimensions=DIMS))
        db.drop()
        store = "PgVector (exact: Agno builds its index on optimize())"
    else:
        db = LanceDb(uri=f"{folder}/lance-{n}", table_name="bench", search_type=SearchType.hybrid,
                     embedder=FnvEmbedder(dimensions=DIMS))
        store = "LanceDb"
    db.create()
    started = time.perf_counter()
    stored, content = 0, 0
    while stored < n:
        batch = []
        for i in range(min(500, n - stored)):
            batch.append(Document(content=text(rng, WORDS_PER_CHUNK), name=f"doc{content}", id=f"c{content}_{i}",
                                  content_id=f"c{content}"))
        db.insert(content_hash=f"h{content}", documents=batch)
        stored += len(batch)
        content += 1
    ingest = time.perf_counter() - started
    queries = [text(rng, 3) for _ in range(QUERIES)]
    if pgvector_url:
        queries = queries[:PG_QUERIES]  # its hybrid search ranks every row
    out = {"chunks": n, "store": store, "ingest_chunks_per_s": n / ingest}
    for search_type in (SearchType.keyword, SearchType.vector, SearchType.hybrid):
        db.search_type = search_type
        db.search(queries[0], limit=10)
        times = []
        for q in queries:
            t = time.perf_counter()
            db.search(q, limit=10)
            times.append((time.perf_counter() - t) * 1000.0)
        times.sort()
        out[search_type.value] = [percentile(times, 0.5), percentile(times, 0.99)]
    if pgvector_url:
        db.drop()
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--pgvector", help="also measure PgVector at this postgresql:// URL")
    parser.add_argument("sizes", nargs="+", type=int)
    args = parser.parse_args()
    import logging

    logging.getLogger("agno").setLevel(logging.ERROR)
    for n in args.sizes:
        print(json.dumps(measure(n, args.dir)), flush=True)
        if args.pgvector:
            print(json.dumps(measure(n, args.dir, args.pgvector)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
