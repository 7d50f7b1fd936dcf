"""Helpers of the in-process tests: drive a run through the real StepRunner over a real home."""

from __future__ import annotations

import os

from app.team import build_collaborators
from multiverse.atomic import atomic_write_text
from multiverse.config import load_runtime_mapping
from multiverse.home import Home
from orchestrator.crew import Collaborators
from orchestrator.decide import StepKind
from orchestrator.intake import take_in
from orchestrator.perform import StepRunner


def builtin_collaborators(home: Home) -> Collaborators:
    """The home's crew as the daemon builds it."""
    return build_collaborators(
        home, load_runtime_mapping(home.root), os.environ, console=lambda t: None
    )


def confirmed_run(crew: Collaborators) -> tuple[str, StepRunner]:
    """A run taken in and confirmed, with Phase 0 still to finish."""
    atomic_write_text(crew.home.inbox / "memo.md", "Analyse the market report and write a memo.\n")
    run_id = take_in(crew, crew.home.inbox / "memo.md", 1 << 20)
    assert run_id is not None
    runner = StepRunner(crew)
    while (step := runner.advance(run_id)) is not None and step.is_work:
        pass
    atomic_write_text(crew.home.run(run_id).user_response, "CONFIRM\n")
    return run_id, runner


def steps_until_settled(runner: StepRunner, run_id: str) -> list[StepKind]:
    """Advance the run until nothing is left to do; returns the kinds of the steps performed."""
    kinds: list[StepKind] = []
    for _ in range(300):
        step = runner.advance(run_id)
        if step is None or not step.is_work:
            return kinds
        kinds.append(step.kind)
    raise AssertionError("the run never settled")
