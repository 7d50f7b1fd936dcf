"""Output paths of a model's task plan, made by code (SPEC §7.4): the model only names the file.

Each task writes a new file inside its phase's workspace folder; in the last, publishing stage of
GENERATING_OUTPUT the tasks marked as deliverables (the last task when none is marked) write into
`outputs/<run_id>/`. A file name is a safe slug of what the model suggested, unique among the
catalog, the other tasks of the run, this plan and the files already on disk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from multiverse.contracts import PlanContext
from multiverse.models import MajorStage, Phase
from planner.model.answers import TaskAnswer
from planner.validation import is_publishing_stage

SAFE_SUFFIXES = frozenset({"md", "txt", "csv", "json", "html", "svg", "yaml", "yml"})
DEFAULT_SUFFIX = "md"
STEM_LIMIT = 60


def file_slug(suggested: str, name: str, number: int) -> str:
    """A safe file name from the model's suggestion, else the task's name: `words_joined.md`."""
    base = (suggested.strip() or name).replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, suffix = base.rpartition(".")
    if not dot or suffix.lower() not in SAFE_SUFFIXES:
        stem, suffix = base, DEFAULT_SUFFIX
    # Word characters only: no dots, slashes or spaces can reach a path (Hangul stays).
    words = re.findall(r"[^\W_]+", stem.casefold())
    slug = "_".join(words)[:STEM_LIMIT].strip("_") or f"task_{number:02d}"
    return f"{slug}.{suffix.lower()}"


def free_path(folder: str, file_name: str, taken: set[str], home: Path) -> str:
    """`folder/file_name`, or a numbered variant when that path is taken or exists."""
    stem, _, suffix = file_name.rpartition(".")
    candidate, number = f"{folder}/{file_name}", 1
    while candidate in taken or (home / candidate).exists():
        number += 1
        candidate = f"{folder}/{stem}_{number}.{suffix}"
    return candidate


def deliverable_marks(items: Sequence[TaskAnswer], publishing: bool) -> list[bool]:
    """Which tasks publish to outputs/: the marked ones of a publishing stage, else its last."""
    if not publishing:
        return [False] * len(items)
    marks = [bool(getattr(item, "deliverable", False)) for item in items]
    if not any(marks):
        marks[-1] = True
    return marks


def output_paths(
    context: PlanContext, stage: MajorStage, phase: Phase, items: Sequence[TaskAnswer]
) -> list[str]:
    """One new, allowed output path per task of the answer, in order."""
    workspace = f"runs/{context.run_id}/workspace/{phase.phase_name}"
    published = f"outputs/{context.run_id}"
    # The rows of this stage are what the plan replaces, so their paths are free again.
    taken = {entry.file_path for entry in context.catalog} | {
        task.output_path for task in context.tasks if task.stage_id != stage.stage_id
    }
    home = Path(context.home)
    marks = deliverable_marks(items, is_publishing_stage(context, stage))
    paths = []
    for number, (item, deliverable) in enumerate(zip(items, marks, strict=True), start=1):
        folder = published if deliverable else workspace
        path = free_path(folder, file_slug(item.file_name, item.name, number), taken, home)
        taken.add(path)
        paths.append(path)
    return paths
