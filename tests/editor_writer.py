"""A person's editor, as a child process: loads tables, edits a cell, saves, every few ms.

It takes no lock, as no editor does. Each round it reads a table file, appends a marker to one
cell of one row (rows in turn), and saves the whole file back either the way most editors do
(truncate, then write in two chunks) or atomically (temporary file, then rename). Every edit it
saved is logged as a JSON line (file, key, column, marker) once the save is complete, so a test
can check afterwards that none was lost. It stops when the stop file appears.

usage: editor_writer.py MODE INTERVAL_MS STOP_FILE LOG_FILE TABLE:KEY_COLUMN:EDIT_COLUMN...
(a TABLE with `*` is a pattern: the last file matching it, in name order, is edited)
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time
from pathlib import Path

from multiverse.errors import TableError
from multiverse.store import parse_table_text
from multiverse.store.schemas import encode_cell


def _columns(text: str) -> list[str]:
    for line in text.splitlines():
        if line.startswith("|"):
            return [cell.strip() for cell in line.strip().strip("|").split("|")]
    return []


def _save(path: Path, data: bytes, mode: str) -> None:
    if mode == "truncate":
        half = len(data) // 2
        with open(path, "wb") as handle:  # truncates at once, as an editor's save does
            handle.write(data[:half])
            handle.flush()
            time.sleep(0.001)  # the file sits half-written for a moment
            handle.write(data[half:])
    else:
        temporary = path.with_name(f".{path.name}.editor-save")
        temporary.write_bytes(data)
        os.replace(temporary, path)


def _edit_once(path: Path, key_column: str, edit_column: str, turn: int) -> tuple[str, str] | None:
    """Append a marker to one cell; returns (key, marker) or None when there is nothing to edit."""
    try:
        text = path.read_bytes().decode("utf-8")
        columns = _columns(text)
        table = parse_table_text(text, path, columns)
    except (OSError, UnicodeDecodeError, TableError):
        return None
    if not table.rows or key_column not in columns or edit_column not in columns:
        return None
    row = table.rows[turn % len(table.rows)]
    key = row[columns.index(key_column)]
    marker = f"edit{turn:05d}"
    row[columns.index(edit_column)] = f"{row[columns.index(edit_column)]} {marker}".strip()
    line = "| " + " | ".join(encode_cell(cell) for cell in row) + " |\n"
    lines = list(table.lines)
    lines[table.start + 2 + turn % len(table.rows)] = line
    _save(path, "".join(lines).encode("utf-8"), MODE)
    return key, marker


def _newest(pattern: str) -> str | None:
    """The table a pattern names: itself, or with a `*` the last match in name order (the
    newest run's, as run ids sort by time); None while nothing matches."""
    if "*" not in pattern:
        return pattern
    found = sorted(glob.glob(pattern))
    return found[-1] if found else None


MODE = sys.argv[1] if len(sys.argv) > 1 else "atomic"


def main() -> None:
    """Edit the given tables until the stop file appears."""
    interval = int(sys.argv[2]) / 1000
    stop, log = Path(sys.argv[3]), Path(sys.argv[4])
    targets = [argument.split(":") for argument in sys.argv[5:]]
    turn = 0
    with log.open("a", encoding="utf-8") as journal:
        while not stop.exists():
            for pattern, key_column, edit_column in targets:
                name = _newest(pattern)
                if name is None:
                    continue
                done = _edit_once(Path(name), key_column, edit_column, turn)
                if done is not None:
                    entry = {"file": name, "key": done[0], "column": edit_column}
                    journal.write(json.dumps({**entry, "marker": done[1]}) + "\n")
                    journal.flush()
                turn += 1
            time.sleep(interval)


if __name__ == "__main__":
    main()
