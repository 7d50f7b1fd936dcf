"""LangGraph's side of bench/langgraph_anchor.py: the master loop's shape as a LangGraph graph.

Runs in LangGraph's own environment (bench/.venv-langgraph), never in the project's. The graph
runs the master loop of bench/orchestrator.py as LangGraph would: 4 phases × 3 stages × 4 tasks,
one super-step per step of ours in the same order (a phase's stage plan, then per stage its task
plan and its 4 tasks; then the run's completion: 65 super-steps), every node a no-op that appends
its one-line result and moves the cursor. Two shapes of the same 65 steps:
- "loop" (the default): four nodes (plan_stages, plan_tasks, task, complete_run) and a router
  reading the cursor, as a plan made at run time must be written in LangGraph;
- "chain": 65 distinct nodes in a fixed chain (each checkpoint then also carries the versions
  every one of the 65 nodes has seen: ~7 KB a checkpoint instead of ~1.6 KB).
The checkpointer is `SqliteSaver` on a file (WAL, SQLite's default synchronous=FULL: every
commit reaches the disk) with durability="sync", so each super-step's checkpoint is committed
before the next step starts, as ours is.

Two variants of the `results` channel: "plain", a reducer (`operator.add`) whose whole value is
in every checkpoint, and "delta", `langgraph.channels.DeltaChannel` (beta in 1.2), which keeps
only each step's write and rebuilds the value from the ancestors' writes when a thread is loaded.

    langgraph_side.py seed --db DB --channel plain|delta [--shape loop|chain] --past N
    langgraph_side.py run --db DB --channel plain|delta [--shape loop|chain] [--mark DIR]

`seed` fills DB with N finished threads; `run` prints JSON: the milliseconds of one whole graph
run on a new thread_id, after a warm-up run on a scratch database; interpreter start-up,
imports, the connection and the compile are not timed. With `--mark DIR` it calls chdir(DIR)
just before and just after the timed run, so that `strace -e trace=fsync,fdatasync,chdir` of
the process can count that run's fsyncs alone.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import sqlite3
import time
import uuid
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.channels import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

PHASES, STAGES, TASKS = 4, 3, 4
FIRST_PAST = "past-00000"


def extend(state: list[str], batches: Sequence[list[str]]) -> list[str]:
    """DeltaChannel's reducer: the batches' items appended, in order (batching-invariant)."""
    return state + [item for batch in batches for item in batch]


class PlainState(TypedDict):
    """Every checkpoint holds the whole list of results (a reducer channel)."""

    results: Annotated[list[str], operator.add]
    cursor: int


class DeltaState(TypedDict):
    """Checkpoints hold each step's delta of the results (DeltaChannel)."""

    results: Annotated[list[str], DeltaChannel(extend)]
    cursor: int


def step_names() -> list[str]:
    """The master loop's 65 steps, in its order."""
    names = []
    for phase in range(1, PHASES + 1):
        names.append(f"plan_stages_P{phase}")
        for stage in range(1, STAGES + 1):
            names.append(f"plan_tasks_P{phase}_S{stage}")
            names.extend(f"task_P{phase}_S{stage}_T{task}" for task in range(1, TASKS + 1))
    names.append("complete_run")
    return names


STEPS = step_names()
KINDS = ("plan_stages", "plan_tasks", "task", "complete_run")


def kind(step: str) -> str:
    """The loop shape's node for a step: plan_stages, plan_tasks, task or complete_run."""
    return next(k for k in KINDS if step.startswith(k))


def noop(state: dict[str, Any]) -> dict[str, Any]:
    """A step that does nothing but report itself done: a tiny state update."""
    cursor = state["cursor"]
    return {"results": [f"{STEPS[cursor]}: done"], "cursor": cursor + 1}


def route(state: dict[str, Any]) -> str:
    """The loop shape's next node: the kind of the step under the cursor, or the end."""
    cursor = state["cursor"]
    return kind(STEPS[cursor]) if cursor < len(STEPS) else END


def build(channel: str, shape: str) -> StateGraph[Any]:
    """The graph of the 65 steps, in the shape asked for."""
    graph: StateGraph[Any] = StateGraph(DeltaState if channel == "delta" else PlainState)
    if shape == "loop":
        for name in KINDS:
            graph.add_node(name, noop)  # type: ignore[call-overload]
            graph.add_conditional_edges(name, route)
        graph.add_conditional_edges(START, route)
        return graph
    previous = START
    for name in STEPS:
        graph.add_node(name, noop)  # type: ignore[call-overload]
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph


def saver(db: Path) -> SqliteSaver:
    """A durable SQLite checkpointer on `db`, its tables created (not timed)."""
    # check_same_thread=False as SqliteSaver's docs say: durability="sync" still saves on
    # LangGraph's background thread, then waits for it.
    checkpointer = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    checkpointer.setup()
    return checkpointer


def run_once(graph: Any, thread_id: str) -> dict[str, Any]:
    """One whole run of the graph on a new thread, each step's checkpoint committed first."""
    config = {"configurable": {"thread_id": thread_id}}
    result: dict[str, Any] = graph.invoke({"results": [], "cursor": 0}, config, durability="sync")
    return result


def seed(db: Path, channel: str, shape: str, past: int) -> dict[str, Any]:
    """`past` finished threads in `db`: one real run, copied row for row under new ids."""
    began = time.perf_counter()
    checkpointer = saver(db)
    graph = build(channel, shape).compile(checkpointer=checkpointer)
    run_once(graph, FIRST_PAST)
    conn = checkpointer.conn
    for table in ("checkpoints", "writes"):
        # The installed checkpointer's own columns, thread_id replaced: a copy of each row.
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        chosen = ", ".join("printf('past-%05d', n.i)" if c == "thread_id" else c for c in columns)
        conn.execute(
            f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            f"INSERT INTO {table} ({', '.join(columns)}) "
            f"SELECT {chosen} FROM n CROSS JOIN {table} WHERE {table}.thread_id = ?",
            (past - 1, FIRST_PAST),
        )
    conn.commit()
    # A long-lived database has its WAL folded back regularly (SQLite's autocheckpoint).
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    threads = conn.execute("SELECT COUNT(DISTINCT thread_id) FROM checkpoints").fetchone()[0]
    rows = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    conn.close()
    return {
        "seconds": time.perf_counter() - began,
        "threads": threads,
        "checkpoints": rows,
        "db_mb": db.stat().st_size / 1e6,
    }


def timed_run(db: Path, channel: str, shape: str, mark: Path | None) -> dict[str, Any]:
    """Milliseconds of one whole graph run on a new thread of `db`, after a warm-up run."""
    builder = build(channel, shape)
    # The warm-up pays what only a first run pays (lazy imports, first queries), as our
    # master loop follows the intake and Phase 0 of its run in the same process.
    scratch = db.with_name(db.name + ".warm")
    warm_saver = saver(scratch)
    run_once(builder.compile(checkpointer=warm_saver), "warm-up")
    warm_saver.conn.close()
    for leftover in scratch.parent.glob(scratch.name + "*"):
        leftover.unlink()
    checkpointer = saver(db)
    graph = builder.compile(checkpointer=checkpointer)
    thread_id = f"bench-{uuid.uuid4()}"
    if mark is not None:
        os.chdir(mark)
    began = time.perf_counter()
    result = run_once(graph, thread_id)
    ms = (time.perf_counter() - began) * 1000
    if mark is not None:
        os.chdir(mark)
    conn = checkpointer.conn
    checkpoints = conn.execute(
        "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread_id,)
    ).fetchone()[0]
    writes = conn.execute(
        "SELECT COUNT(*) FROM writes WHERE thread_id = ?", (thread_id,)
    ).fetchone()[0]
    synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
    conn.close()
    assert len(result["results"]) == len(step_names()), result
    return {
        "ms": ms,
        "steps": len(result["results"]),
        "checkpoints": checkpoints,
        "writes": writes,
        "synchronous": synchronous,
        "langgraph": _version(),
    }


def _version() -> str:
    """The installed LangGraph and checkpointer versions."""
    sqlite_saver = version("langgraph-checkpoint-sqlite")
    return f"langgraph {version('langgraph')}, langgraph-checkpoint-sqlite {sqlite_saver}"


def main() -> None:
    """Seed a database or time one run, printing JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("action", choices=["seed", "run"])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--channel", choices=["plain", "delta"], default="plain")
    parser.add_argument("--shape", choices=["loop", "chain"], default="loop")
    parser.add_argument("--past", type=int, default=0)
    parser.add_argument("--mark", type=Path, default=None)
    args = parser.parse_args()
    if args.action == "seed":
        print(json.dumps(seed(args.db, args.channel, args.shape, args.past)))
    else:
        print(json.dumps(timed_run(args.db, args.channel, args.shape, args.mark)))


if __name__ == "__main__":
    main()
