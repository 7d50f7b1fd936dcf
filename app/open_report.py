"""`multiverse open RUN`: the run's report in the desktop's opener, or its path where none is.

The report is the run's first FINAL_OUTPUT document in the catalog (live or archived), else the
first document in outputs/<run_id>/; `--folder` takes the folder itself. The opener is the
platform's (`open` on macOS, `xdg-open` on a Linux desktop, the file association on Windows),
through typer's `launch`; with no desktop (no DISPLAY or WAYLAND_DISPLAY on Linux), or no
opener on PATH, the path is printed to open by hand.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from multiverse.archive import shards_of
from multiverse.errors import RunStateError, UnknownRun
from multiverse.home import Home, require_home, resolve_home, visible_files
from multiverse.models import AssetType
from multiverse.schemas import KNOWLEDGE_CATALOG
from multiverse.store import TableStore

DOCUMENTS = (".md", ".html", ".pdf", ".docx", ".pptx", ".xlsx", ".txt", ".csv")


def report_path(home: Home, run_id: str) -> Path | None:
    """The run's report: its first FINAL_OUTPUT document that exists, else the first document
    file in outputs/<run_id>/; None if it has none."""
    store = TableStore()
    tables = [home.db / KNOWLEDGE_CATALOG.filename]
    tables += [home.archive_db / shard / KNOWLEDGE_CATALOG.filename for shard in shards_of(run_id)]
    for path in tables:
        if not path.exists():
            continue
        for row in store.table(KNOWLEDGE_CATALOG, path).rows_with("run_id", [run_id]):
            found = home.root / row.file_path
            if row.asset_type is AssetType.FINAL_OUTPUT and _document(found) and found.is_file():
                return found
    return next((path for path in visible_files(home.outputs / run_id) if _document(path)), None)


def _document(path: Path) -> bool:
    return path.suffix.lower() in DOCUMENTS


def opener(environ: dict[str, str] | None = None, platform: str | None = None) -> str | None:
    """The program that opens files here, or None (no desktop, nothing on PATH)."""
    environ = dict(os.environ) if environ is None else environ
    platform = platform or sys.platform
    if platform == "darwin":
        return shutil.which("open", path=environ.get("PATH"))
    if platform.startswith("win"):
        return "start"
    if not (environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY")):
        return None
    return shutil.which("xdg-open", path=environ.get("PATH"))


def open_run(
    home_option: str | None, run_id: str, folder: bool, print_only: bool
) -> dict[str, object]:
    """Open the run's report (or its outputs folder); what was opened, and with what."""
    import typer

    home = require_home(resolve_home(home_option))
    outputs = home.outputs / run_id
    folders = (home.runs / run_id, home.archive_runs / run_id, outputs)
    if not any(path.is_dir() for path in folders):
        raise UnknownRun(run_id)
    target = outputs if folder else report_path(home, run_id)
    if target is None or not target.exists():
        raise RunStateError(
            f"run {run_id} has no report yet (outputs/{run_id}/ holds no document): "
            f"`multiverse status {run_id}` says where it is"
        )
    program = None if print_only else opener()
    opened = program is not None and typer.launch(str(target), wait=True) == 0
    return {
        "run_id": run_id,
        "path": str(target),
        "opened": opened,
        "opener": program if opened else None,
    }
