"""Assets that are links, pipes or unreadable are skipped with a catalog note, never read."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
from pathlib import Path

import pytest

from executor.builtin.sources import read_references
from multiverse.documents import NOTE_MARKER, Kind, Sighting, is_unread, look, why_unread
from multiverse.home import Home
from multiverse.models import AssetType, CatalogEntry, Status
from multiverse.roles import PlanContext
from multiverse.store import KNOWLEDGE_CATALOG, TableStore
from orchestrator.perform.catalog import HASHES_FILE, refresh_inputs
from planner.model.context import catalog_block

from journey import copy_assets
from stepping import builtin_collaborators, confirmed_run, steps_until_settled

SECRET = "QUOKKA-ZEBRA-271828-SECRET"


def _secret_outside(tmp_path: Path) -> Path:
    """A file outside the home holding the secret marker."""
    outside = tmp_path / "elsewhere" / "private.md"
    outside.parent.mkdir()
    outside.write_text(f"# Private\n\nThe code is {SECRET}.\n", encoding="utf-8")
    return outside


def _catalog(home: Home) -> dict[str, CatalogEntry]:
    rows = TableStore().table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename).rows()
    return {row.file_path: row for row in rows}


def _regular_files(root: Path) -> list[Path]:
    """Every regular file under `root`, links and pipes neither followed nor opened."""
    found = []
    for folder, _, names in os.walk(root, followlinks=False):
        for name in names:
            path = Path(folder) / name
            if stat.S_ISREG(os.lstat(path).st_mode):
                found.append(path)
    return found


@pytest.mark.parametrize(
    ("seen", "expected"),
    [
        (Sighting(Kind.FILE), None),
        (Sighting(Kind.FILE, link_target="/home/x/assets/a.md"), None),
        (
            Sighting(Kind.FILE, "/etc/passwd", "/etc/passwd", False),
            "outside the home (/etc/passwd)",
        ),
        (Sighting(Kind.FILE, None, "/srv/a.md", False), "outside the home (/srv/a.md)"),
        (Sighting(Kind.MISSING, "/h/assets/gone.md"), "broken symbolic link"),
        (Sighting(Kind.LOOP, "/h/assets/l"), "loops"),
        (Sighting(Kind.FOLDER, "/h/guidelines"), "linked folders are not followed"),
        (Sighting(Kind.FOLDER, error="Permission denied"), "cannot be listed (Permission denied)"),
        (Sighting(Kind.FIFO), "named pipe (FIFO), not a regular file"),
        (Sighting(Kind.DEVICE), "device, not a regular file"),
        (Sighting(Kind.FILE, error="Input/output error"), "cannot be read (Input/output error)"),
    ],
)
def test_why_unread_decides_from_what_was_seen(seen: Sighting, expected: str | None) -> None:
    """Links leaving the home, broken or looping links, non-files and read errors are unread."""
    unread = why_unread(seen)
    if expected is None:
        assert unread is None
    else:
        assert unread is not None and expected in unread.reason and unread.advice
        assert unread.note.startswith(NOTE_MARKER)


def test_only_input_rows_with_the_marker_are_unread() -> None:
    """A note is an input row (no run) whose summary starts with the marker."""
    note = f"{NOTE_MARKER}a named pipe (FIFO), not a regular file"
    guideline = CatalogEntry(file_path="g/p", asset_type=AssetType.GUIDELINE_DOC, summary=note)
    read = guideline.model_copy(update={"summary": "Sales. Revenue rose."})
    output = guideline.model_copy(
        update={"run_id": "run-20250101-000000-001", "asset_type": AssetType.ANALYSIS_REPORT}
    )
    assert is_unread(guideline) and not is_unread(read) and not is_unread(output)


def test_look_sees_each_kind_of_entry(tmp_path: Path) -> None:
    """Real entries: a file, links in and out, broken and looping links, a pipe, a socket."""
    home = tmp_path / "home"
    (home / "assets" / "sub").mkdir(parents=True)
    assets = home / "assets"
    (assets / "a.md").write_text("# A\n", encoding="utf-8")
    (assets / "in.md").symlink_to(assets / "a.md")
    (assets / "out.md").symlink_to(_secret_outside(tmp_path))
    (assets / "gone.md").symlink_to(assets / "nothing.md")
    (assets / "loop").symlink_to(assets / "loop")
    (assets / "dir").symlink_to(assets / "sub")
    os.mkfifo(assets / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(assets / "sock"))
    try:
        reasons = {name: why_unread(look(assets / name, home)) for name in os.listdir(assets)}
    finally:
        server.close()
    assert reasons["a.md"] is None and reasons["in.md"] is None and reasons["sub"] is not None
    expected = {"out.md": "outside the home", "gone.md": "broken", "loop": "loops",
                "dir": "linked folders", "pipe": "FIFO", "sock": "socket"}  # fmt: skip
    for name, words in expected.items():
        unread = reasons[name]
        assert unread is not None and words in unread.reason, (name, unread)


def test_home_relative_names_a_link_by_its_own_place(home: Home, tmp_path: Path) -> None:
    """A link leaving the home is named by its place in the home, never by its target."""
    link = home.assets / "shared.md"
    link.symlink_to(_secret_outside(tmp_path))
    assert home.relative(link) == "assets/shared.md"
    assert home.relative(home.db / "process_runs.md") == "db/process_runs.md"


def test_a_run_with_odd_assets_completes_and_nothing_outside_enters_the_home(
    home: Home, tmp_path: Path
) -> None:
    """A link out, a broken link and a pipe are noted, never read; the run still COMPLETES."""
    copy_assets(home, "market_report_2024.md")
    outside = _secret_outside(tmp_path)
    (home.assets / "shared.md").symlink_to(outside)
    (home.assets / "gone.md").symlink_to(home.assets / "deleted.md")
    os.mkfifo(home.assets / "feed.csv")
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    steps_until_settled(runner, run_id)

    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is Status.COMPLETED
    catalog = _catalog(home)
    assert not is_unread(catalog["assets/market_report_2024.md"])
    reasons = {"assets/shared.md": f"outside the home ({outside})",
               "assets/gone.md": "broken symbolic link", "assets/feed.csv": "FIFO"}  # fmt: skip
    for path, reason in reasons.items():
        row = catalog[path]
        assert is_unread(row) and row.asset_type is AssetType.ORIGINAL_INPUT, row
        assert row.run_id is None and reason in row.summary, row
    for task in crew.run(run_id).tasks.rows():  # no plan names a noted file
        assert not set(task.related_references) & set(reasons), task
    for path in _regular_files(home.root):
        assert SECRET.encode() not in path.read_bytes(), path
    hashes = (home.state / HASHES_FILE).read_text(encoding="utf-8")
    assert hashlib.sha256(outside.read_bytes()).hexdigest() not in hashes

    # The link replaced by a real file: the next run's T03 catalogues it as usual.
    (home.assets / "shared.md").unlink()
    (home.assets / "shared.md").write_text("# Shared notes\n\nSales rose 12% in 2024.\n", "utf-8")
    second, runner = confirmed_run(crew)
    for _ in range(20):
        t03 = crew.run(second).tasks.get("T03")
        if t03 is not None and t03.status is Status.COMPLETED:
            break
        runner.advance(second)
    row = _catalog(home)["assets/shared.md"]
    assert not is_unread(row) and "Shared notes" in row.summary


def test_a_file_without_read_permission_gets_a_note(home: Home) -> None:
    """A file its owner may not read is noted with the system's reason."""
    if os.geteuid() == 0:
        pytest.skip("root reads a file whatever its permissions; the pipe and links cover it")
    path = home.assets / "locked.md"
    path.write_text("# Locked\n", encoding="utf-8")
    path.chmod(0)
    try:
        refresh_inputs(builtin_collaborators(home))
    finally:
        path.chmod(0o600)
    row = _catalog(home)["assets/locked.md"]
    assert is_unread(row) and "Permission denied" in row.summary


def test_the_builtin_reader_notes_odd_entries_of_a_folder(home: Home, tmp_path: Path) -> None:
    """A folder reference reads its files and describes a link out and a pipe, reading neither."""
    copy_assets(home, "competitor_review.txt")
    (home.assets / "shared.md").symlink_to(_secret_outside(tmp_path))
    os.mkfifo(home.assets / "feed.csv")
    files, digests = read_references(home.root, ["assets"])
    assert set(files) == {"assets/competitor_review.txt", "assets/shared.md", "assets/feed.csv"}
    notes = {d.source: d.note for d in digests if d.note}
    assert "outside the home" in notes["assets/shared.md"] and "FIFO" in notes["assets/feed.csv"]
    assert SECRET not in repr(digests)


def test_the_model_planner_context_leaves_out_notes(home: Home) -> None:
    """A catalog note is never shown to the model planner as a possible reference."""
    catalog = [
        CatalogEntry(file_path="assets/q3.md", asset_type=AssetType.ORIGINAL_INPUT,
                     summary="Q3. Revenue rose."),
        CatalogEntry(file_path="assets/link.md", asset_type=AssetType.ORIGINAL_INPUT,
                     summary=f"{NOTE_MARKER}a broken symbolic link"),
    ]  # fmt: skip
    context = PlanContext(home=str(home.root), run_id="run-20250101-000000-001",
                          request="Summarise Q3.", catalog=catalog)  # fmt: skip
    block = catalog_block(context, "Q3")
    assert "assets/q3.md" in block and "assets/link.md" not in block and "not shown" not in block
