"""Durable evidence of finished steps, under runs/<run_id>/signals/ (SPEC §15).

Each file is written atomically once its step's work is done, so that after a crash the next
step is decided from the files alone: what has evidence is never done twice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from multiverse.atomic import atomic_write_text
from multiverse.contracts import Proposal, ResultSignal
from multiverse.errors import TableError

M = TypeVar("M", bound=BaseModel)
HISTORY = "history"  # records a retry set aside: the run's earlier failures


class Evidence(BaseModel):
    """Base of the small records kept as signals."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ProposalRecord(Evidence):
    """Revision `revision` of the amendment proposal and the MODIFY text that asked for it."""

    revision: int
    proposal: Proposal
    modification: str | None = None


class ModifyRequest(Evidence):
    """The user asked for revision `revision` with this text."""

    revision: int
    text: str


class Mark(Evidence):
    """A step that leaves no other trace (asked, confirmed, reported) happened."""

    revision: int = 0
    detail: str = ""


class FailureRecord(Evidence):
    """Where and why a run failed (SPEC §8.1): the report is built from it."""

    role: str
    phase_id: str | None = None
    stage_id: str | None = None
    task_id: str | None = None
    tool_task_id: str | None = None
    purpose: str = ""
    error: str


class SignalBox:
    """Reads and writes the evidence files of one run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def names(self) -> set[str]:
        """Every evidence file name present (without the .json suffix)."""
        try:
            return {entry[:-5] for entry in os.listdir(self.folder) if entry.endswith(".json")}
        except FileNotFoundError:
            return set()

    def history(self) -> set[str]:
        """Names of the records moved into history/ (earlier failures of a retried run)."""
        try:
            folder = self.folder / HISTORY
            return {entry[:-5] for entry in os.listdir(folder) if entry.endswith(".json")}
        except FileNotFoundError:
            return set()

    def move_to_history(self, name: str, new_name: str) -> bool:
        """Keep a record as history under a new name (idempotent); whether it was moved."""
        folder = self.folder / HISTORY
        folder.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(self.path(name), folder / f"{new_name}.json")
        except FileNotFoundError:
            return False  # moved before a crash, or never written
        return True

    def read_history(self, name: str, model: type[M]) -> M | None:
        """Read one record of the history, or None."""
        return SignalBox(self.folder / HISTORY).read(name, model)

    def path(self, name: str) -> Path:
        """The file of one evidence record."""
        return self.folder / f"{name}.json"

    def write(self, name: str, record: BaseModel) -> None:
        """Write one record atomically (replacing an older one of the same name)."""
        atomic_write_text(self.path(name), record.model_dump_json(indent=2) + "\n")

    def read(self, name: str, model: type[M]) -> M | None:
        """Read one record, or None if absent; a corrupt record is a TableError."""
        path = self.path(name)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return model.model_validate(json.loads(raw))
        except (ValueError, ValidationError) as error:
            raise TableError(path, None, f"unreadable signal: {error}") from error

    def result(self, step_id: str) -> ResultSignal | None:
        """The result signal of a task or tool task, if it finished."""
        return self.read(step_id, ResultSignal)
