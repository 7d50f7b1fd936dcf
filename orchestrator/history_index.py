"""What history reads need from the archive shards, rebuilt from a shard when its file changes.

A shard of `db/archive/` holds an hour's whole rows; the reads that span all history need two
cells of a past run (its id and request, which the learning context ranks) and the highest
instruction id (ids are global). So each shard file is streamed once, line by line, into that
summary (only those columns are decoded; no row is validated or kept), and read again only
when its stamp changes (every write of a table is a new file). The shards stay the source of
truth: the index holds nothing they do not, and a process that has never seen it builds it
from them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from multiverse.archive import shard_dirs
from multiverse.home import Home
from multiverse.schemas import PROCESS_RUNS, USER_INSTRUCTIONS, TableSpec
from multiverse.settled import Stamp, stamp_of
from multiverse.tablecodec import decode_cell, split_row
from orchestrator.past_requests import RequestBook

S = TypeVar("S")


class HistoryIndex:
    """Summaries of the archive shards, each kept while its file is unchanged."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self._known: dict[Path, tuple[Stamp, Any]] = {}
        self._guard = threading.Lock()

    def requests(self) -> list[RequestBook]:
        """Every archived run's request: a book per shard, oldest shard first."""
        return self._summaries(PROCESS_RUNS, _requests, "run_id", "user_request")

    def highest_instruction(self) -> int:
        """The highest number of an archived instruction id (`I0042` → 42), 0 if none."""
        highest = self._summaries(USER_INSTRUCTIONS, _highest_number, "instruction_id")
        return max(highest, default=0)

    def _summaries(
        self, spec: TableSpec[Any], summarise: Callable[[Iterator[list[str]]], S], *names: str
    ) -> list[S]:
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
                try:
                    known = (stamp, summarise(column_values(path, spec.columns, names)))
                except (OSError, UnicodeDecodeError):  # unreadable now: it counts when readable
                    continue
                with self._guard:
                    self._known[path] = known
            found.append(known[1])
        return found


def column_values(path: Path, columns: Sequence[str], names: Sequence[str]) -> Iterator[list[str]]:
    """The decoded cells of the named columns, row by row, streamed from a table file.

    For summaries only: a row with the wrong number of cells is skipped, not reported (the
    table store reports it where the table is read as such).
    """
    positions = [list(columns).index(name) for name in names]
    with path.open(encoding="utf-8", newline="\n") as lines:
        for line in lines:  # the header: the first row naming every column
            cells = split_row(line.rstrip("\n").lstrip("\ufeff"))
            if [decode_cell(cell) for cell in cells] == list(columns):
                break
        else:
            return
        next(lines, None)  # the delimiter row
        for line in lines:
            if not line.strip():
                return  # a blank line ends a pipe table
            cells = split_row(line.rstrip("\n"))
            if len(cells) == len(columns):
                yield [decode_cell(cells[position]) for position in positions]


def _requests(rows: Iterator[list[str]]) -> RequestBook:
    return RequestBook((run_id, request) for run_id, request in rows)


def _highest_number(rows: Iterator[list[str]]) -> int:
    return max((int(key[1:]) for (key,) in rows if key[1:].isdigit()), default=0)
