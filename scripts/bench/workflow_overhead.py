"""Python Agno 3.1 workflow overhead, the shapes of crates/agno-runtime/benches/workflow.rs.

    python workflow_overhead.py [--runs N]

Prints one JSON object: for each shape, the runs timed, microseconds per run and per step (median
of 5 batches). Function steps only: the framework's own cost per step, no model; the `_sqlite`
shape stores each run (and its session) in a SQLite file.
"""

import argparse
import json
import statistics
import time

from agno.workflow import Condition, Loop, Parallel, Router, Step, Steps, Workflow
from agno.workflow.types import StepInput, StepOutput


def add_x(step_input: StepInput) -> StepOutput:
    return StepOutput(content=(step_input.previous_step_content or "") + "x")


def sequential():
    return Workflow(id="seq", name="Seq", steps=[Step(name=f"s{i}", executor=add_x) for i in range(10)]), 10


def sequential_sqlite():
    import os
    import tempfile

    from agno.db.sqlite import SqliteDb

    path = os.path.join(tempfile.mkdtemp(prefix="agno-py-bench-"), "wf.db")
    steps = [Step(name=f"s{i}", executor=add_x) for i in range(10)]
    return Workflow(id="seq-db", name="SeqDb", db=SqliteDb(db_file=path), steps=steps), 10


def mixed():
    pick_b = Step(name="b", executor=add_x)

    def pick(_):
        return [pick_b]

    steps = [
        Step(name="first", executor=add_x),
        Steps(name="group", steps=[Step(name="g1", executor=add_x), Step(name="g2", executor=add_x)]),
        Loop(name="loop", steps=[Step(name="l1", executor=add_x)], max_iterations=3),
        Condition(name="cond", evaluator=True, steps=[Step(name="c1", executor=add_x)]),
        Router(name="route", selector=pick, choices=[Step(name="a", executor=add_x), pick_b]),
        Parallel(Step(name="p1", executor=add_x), Step(name="p2", executor=add_x), name="par"),
    ]
    # Leaf steps run per workflow run: 1 + 2 + 3 + 1 + 1 + 2.
    return Workflow(id="mixed", name="Mixed", steps=steps), 10


def measure(make, runs):
    workflow, steps = make()
    for _ in range(max(10, runs // 20)):
        workflow.run(input="hello")
    batches = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(runs):
            workflow.run(input="hello")
        batches.append((time.perf_counter() - start) / runs * 1e6)
    per_run = statistics.median(batches)
    return {"runs": runs * 5, "us_per_run": round(per_run, 1), "us_per_step": round(per_run / steps, 2)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    out = {
        "sequential_10_function_steps": measure(sequential, args.runs),
        "mixed_primitives_10_steps": measure(mixed, args.runs),
        "sequential_10_function_steps_sqlite": measure(sequential_sqlite, max(10, args.runs // 4)),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
