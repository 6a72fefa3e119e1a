"""Python Agno 3.1 workflow overhead, the shapes of crates/agno-runtime/benches/workflow.rs.

    python workflow_overhead.py [--runs N]

Prints one JSON object: for each shape, the runs timed, microseconds per run and per step (median
of 5 batches). Function steps: the framework's own cost per step, no model; the `_sqlite` shape
stores each run (and its session) in a SQLite file. Agent steps and team delegations run on
`BenchModel`, an offline model defined here that answers at once as agno-rs's `TestModel` does
("This is the test model answering: <input>"), so they measure the framework around the model.
"""

import argparse
import json
import statistics
import time

from dataclasses import dataclass

from agno.models.base import Model
from agno.models.response import ModelResponse
from agno.workflow import Condition, Loop, Parallel, Router, Step, Steps, Workflow
from agno.workflow.types import StepInput, StepOutput


@dataclass
class BenchModel(Model):
    """Answers at once, offline: the last user message echoed; as a team leader (when it has the
    delegation tool) it first delegates to five members in one turn, then answers."""

    id: str = "bench"
    name: str = "BenchModel"
    provider: str = "Bench"

    def _answer(self, messages, tools=None, **_):
        names = [t.get("function", {}).get("name") for t in (tools or []) if isinstance(t, dict)]
        if "delegate_task_to_member" in names and not any(m.role == "tool" for m in messages):
            calls = [
                {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {"name": "delegate_task_to_member", "arguments": json.dumps({"member_id": f"m{i}", "task": f"part {i}"})},
                }
                for i in range(5)
            ]
            return ModelResponse(role="assistant", tool_calls=calls)
        if "delegate_task_to_member" in names:
            return ModelResponse(role="assistant", content="done")
        last = next((m.content for m in reversed(messages) if m.role == "user"), "")
        return ModelResponse(role="assistant", content=f"This is the test model answering: {last}")

    def invoke(self, messages, **kwargs):
        return self._answer(messages, **kwargs)

    async def ainvoke(self, messages, **kwargs):
        return self._answer(messages, **kwargs)

    def invoke_stream(self, messages, **kwargs):
        yield self._answer(messages, **kwargs)

    async def ainvoke_stream(self, messages, **kwargs):
        yield self._answer(messages, **kwargs)

    def _parse_provider_response(self, response, **kwargs):
        return response

    def _parse_provider_response_delta(self, response):
        return response


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


def agent_steps():
    from agno.agent import Agent

    agent = Agent(id="writer", model=BenchModel())
    return Workflow(id="agents", name="Agents", steps=[Step(name=f"a{i}", agent=agent) for i in range(5)]), 5


def team_delegations():
    from agno.agent import Agent
    from agno.team import Team

    members = [Agent(id=f"m{i}", name=f"m{i}", model=BenchModel()) for i in range(5)]
    return Team(id="bench-team", name="BenchTeam", model=BenchModel(), members=members), 5


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
        "agent_steps_5_test_model": measure(agent_steps, max(10, args.runs // 4)),
        "team_5_delegations": measure(team_delegations, max(10, args.runs // 4)),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
