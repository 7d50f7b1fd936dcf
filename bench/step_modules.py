"""How many of the project's modules one step runs through: a newcomer's path through the code.

Run: `.venv/bin/python bench/step_modules.py` (or `make bench-step-modules`). A run of the
builtin offline engine is driven in-process from intake to completion; each EXECUTE_TASK step
of the master loop is performed under `sys.setprofile`, and every project module one of whose
functions was called is counted. The same is done with instant no-op roles behind the same
interfaces, so the orchestration's own share is seen apart from the offline engine's.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import structlog

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from app.team import build_collaborators  # noqa: E402
from multiverse.atomic import atomic_write_text  # noqa: E402
from multiverse.config import load_runtime_mapping  # noqa: E402
from multiverse.home import Home, init_home  # noqa: E402
from orchestrator.crew import Collaborators  # noqa: E402
from orchestrator.decide import Step, StepKind  # noqa: E402
from orchestrator.intake import take_in  # noqa: E402
from orchestrator.perform import StepRunner  # noqa: E402

PROJECT = ("multiverse", "offline", "orchestrator", "planner", "executor", "communicator", "app")
ASSETS = _HERE.parent / "tests" / "fixtures" / "assets"
REQUEST = "Analyse the market report and write a one-page memo with a chart of revenue by quarter."


def _bench_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, _HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def modules_per_task(crew: Collaborators) -> dict[str, list[str]]:
    """For each EXECUTE_TASK step of a whole run, the project modules its functions ran in."""
    atomic_write_text(crew.home.inbox / "memo.md", REQUEST + "\n")
    run_id = take_in(crew, crew.home.inbox / "memo.md", 1 << 20)
    assert run_id is not None
    runner = StepRunner(crew)
    found: dict[str, list[str]] = {}
    for _ in range(1000):
        decided = runner.decide(run_id)
        assert decided is not None
        view, step = decided
        if step.kind is StepKind.IDLE:
            return found
        if step.kind is StepKind.WAIT:
            atomic_write_text(crew.home.run(run_id).user_response, "CONFIRM\n")
            continue
        if step.kind is StepKind.EXECUTE_TASK and step.task_id:
            found[step.task_id] = _profiled(runner, view, step)
        else:
            runner.perform(view, step)
    raise AssertionError("the run never finished")


def _profiled(runner: StepRunner, view: Any, step: Step) -> list[str]:
    seen: set[str] = set()

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.split(".")[0] in PROJECT:
                seen.add(name)

    sys.setprofile(profile)
    try:
        runner.perform(view, step)
    finally:
        sys.setprofile(None)
    return sorted(seen)


def _home(folder: Path) -> Home:
    home = Home(folder)
    init_home(home)
    for path in sorted(ASSETS.iterdir()):
        shutil.copy(path, home.assets / path.name)
    return home


def main() -> None:
    """Print how many modules each EXECUTE_TASK step runs through, builtin and no-op roles."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    noop = _bench_module("noop_roles")
    with tempfile.TemporaryDirectory() as folder:
        home = _home(Path(folder))
        crew = build_collaborators(
            home, load_runtime_mapping(home.root), os.environ, console=lambda _t: None
        )
        builtin = modules_per_task(crew)
    with tempfile.TemporaryDirectory() as folder:
        home = _home(Path(folder))
        crew = build_collaborators(
            home, load_runtime_mapping(home.root), os.environ, console=lambda _t: None
        )
        crew.planner, crew.executor = noop.NoopPlanner(), noop.NoopExecutor()
        bare = modules_per_task(crew)
    for label, found in (("builtin offline engine", builtin), ("no-op roles", bare)):
        counts = {task: len(modules) for task, modules in found.items()}
        widest = max(counts, key=lambda task: counts[task])
        print(f"{label}: {len(found)} EXECUTE_TASK steps; project modules per step: "
              f"min {min(counts.values())}, max {counts[widest]} ({widest})")
        print("  " + " ".join(f"{task}={count}" for task, count in counts.items()))
        print(f"  the widest step runs through: {', '.join(found[widest])}")


if __name__ == "__main__":
    main()
