"""The numbered files a task plan may reference (SPEC §7.4): the model answers numbers, not paths.

Number 1 is always the run's request file (written at the run's entry, so always real); then the
catalog rows most relevant to the stage, this run's newest work first. A number outside the list
cannot be answered, so a model cannot invent a file.
"""

from __future__ import annotations

from dataclasses import dataclass

from multiverse.contracts import PlanContext
from multiverse.models import MajorStage
from planner.model.blocks import quoted, relevant_catalog, short
from planner.validation import request_path

REFERENCE_LIMIT = 24
REFERENCE_SUMMARY_LIMIT = 200


@dataclass(frozen=True)
class References:
    """The candidate files of one tasks call, numbered from 1, and their descriptions."""

    paths: list[str]
    lines: list[str]

    def block(self) -> str:
        """The numbered list, fenced as data."""
        return quoted("\n".join(self.lines), "text")

    def path(self, number: int) -> str:
        """The file of a (validated) number."""
        return self.paths[number - 1]


def reference_candidates(context: PlanContext, stage: MajorStage) -> References:
    """The request file, then the catalog rows most relevant to `stage`, capped."""
    request = request_path(context.run_id)
    paths = [request]
    lines = [f"1. {request}: the user's request (always available)"]
    query = f"{stage.stage_name}\n{stage.stage_goal}\n{context.request}"
    for entry in relevant_catalog(context, query, REFERENCE_LIMIT):
        if entry.file_path in paths:
            continue
        paths.append(entry.file_path)
        summary = short(" ".join(entry.summary.split()), REFERENCE_SUMMARY_LIMIT)
        about = f": {summary}" if summary else ""
        lines.append(f"{len(paths)}. {entry.file_path} ({entry.asset_type.value}){about}")
    return References(paths, lines)
