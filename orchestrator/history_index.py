"""What history reads need from the archive shards, rebuilt from a shard when its file changes.

A shard of `db/archive/` holds a month of whole rows; the reads that span all history need two
cells of a past run (its id and request, which the learning context ranks) and the highest
instruction id (ids are global). So each shard file is read once into that summary, by a
store of its own so that no whole row stays in memory, and read again only when its stamp
changes (every write of a table is a new file). The shards stay the source of truth: the
index holds nothing they do not, and a process that has never seen it builds it from them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from multiverse.archive import shard_dirs
from multiverse.home import Home
from multiverse.models import ProcessRun, UserInstruction
from multiverse.schemas import PROCESS_RUNS, USER_INSTRUCTIONS, TableSpec
from multiverse.settled import Stamp, stamp_of
from multiverse.store import TableStore

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class PastRequest:
    """One archived run as ranking sees it."""

    run_id: str
    user_request: str


class HistoryIndex:
    """Summaries of the archive shards, each kept while its file is unchanged."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self._known: dict[Path, tuple[Stamp, Any]] = {}
        self._guard = threading.Lock()

    def requests(self) -> list[PastRequest]:
        """Every archived run's request, oldest shard first."""
        found: list[PastRequest] = []
        for requests in self._summaries(PROCESS_RUNS, _requests):
            found.extend(requests)
        return found

    def highest_instruction(self) -> int:
        """The highest number of an archived instruction id (`I0042` → 42), 0 if none."""
        return max(self._summaries(USER_INSTRUCTIONS, _highest_number), default=0)

    def _summaries(self, spec: TableSpec[Any], summarise: Callable[[Sequence[Any]], S]) -> list[S]:
        found: list[S] = []
        for shard in shard_dirs(self.home):
            path = shard / spec.filename
            try:
                stamp = stamp_of(os.stat(path))
            except FileNotFoundError:
                continue
            with self._guard:
                known = self._known.get(path)
            if known is None or known[0] != stamp:
                # A store of its own: the rows are parsed, summarised and let go.
                known = (stamp, summarise(TableStore().snapshot(spec, path).rows))
                with self._guard:
                    self._known[path] = known
            found.append(known[1])
        return found


def _requests(rows: Sequence[ProcessRun]) -> tuple[PastRequest, ...]:
    return tuple(PastRequest(row.run_id, row.user_request) for row in rows)


def _highest_number(rows: Sequence[UserInstruction]) -> int:
    return max((int(row.instruction_id[1:]) for row in rows), default=0)
