"""The knowledge catalog is built incrementally, and a new similar run learns from old ones."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from app.team import build_collaborators
from multiverse.config import load_runtime_mapping
from multiverse.documents import is_unread
from multiverse.home import Home
from multiverse.models import AssetType, CatalogEntry
from multiverse.store import KNOWLEDGE_CATALOG, TableStore
from orchestrator.crew import upsert
from orchestrator.perform import SUMMARY_WORKERS, refresh_inputs

from journey import cli, copy_assets, once, runs, wait_for


def test_unchanged_inputs_are_not_summarised_again(home: Home) -> None:
    """Only new or changed files (by content hash) get a new summary."""
    copy_assets(home, "market_report_2024.md", "competitor_review.txt")
    crew = build_collaborators(
        home, load_runtime_mapping(home.root), os.environ, console=lambda t: None
    )
    assert refresh_inputs(crew) == 3  # two assets and guidelines/mcp_list.md
    assert refresh_inputs(crew) == 0
    path = home.assets / "competitor_review.txt"
    path.write_text(path.read_text(encoding="utf-8") + "\nA new paragraph.\n", encoding="utf-8")
    assert refresh_inputs(crew) == 1
    rows = TableStore().table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename).rows()
    assert {row.file_path for row in rows} == {
        "assets/competitor_review.txt",
        "assets/market_report_2024.md",
        "guidelines/mcp_list.md",
    }
    assert all(row.summary for row in rows)


def test_a_similar_request_sees_the_past_run_in_its_proposal(home: Home) -> None:
    """CONTINUOUS_RUN: the past run, ranked by BM25, is in the run folder and the proposal."""
    copy_assets(home, "market_report_2024.md")
    cli(home, "submit", "Write a market-entry memo about the European e-bike market.")
    once(home)
    first = runs(home)[0]["run_id"]
    cli(home, "confirm", first)
    once(home)
    cli(home, "submit", "Update the e-bike market memo for the European market.")
    cli(home, "submit", "List the quarterly invoices of the bakery.")
    once(home)
    second = next(
        r["run_id"] for r in runs(home) if r["user_request"].startswith("Update the e-bike")
    )
    context = home.run(second).root / "learning_context.md"
    text = context.read_text(encoding="utf-8")
    assert first in text and "CONTINUOUS_RUN" in text
    assert first in home.run(second).feedback.read_text(encoding="utf-8")


def test_unread_inputs_are_noted_once_and_told_to_the_run(home: Home) -> None:
    """A pipe and a broken link get a note row, not summarised again; one NOTICE says what to do."""
    copy_assets(home, "competitor_review.txt")
    os.mkfifo(home.assets / "feed.csv")
    (home.guidelines / "style.md").symlink_to(home.guidelines / "house_style.md")
    mapping = load_runtime_mapping(home.root)
    crew = build_collaborators(home, mapping, os.environ, console=lambda t: None)
    run_id = "run-20250101-000000-001"
    assert refresh_inputs(crew, run_id) == 4  # the review, mcp_list.md and the two notes
    assert refresh_inputs(crew) == 0  # same reasons: the notes are not written again
    rows = {row.file_path: row for row in crew.catalog.rows()}
    style = rows["guidelines/style.md"]
    assert is_unread(style) and style.asset_type is AssetType.GUIDELINE_DOC
    assert style.summary.startswith("Not read: a broken symbolic link")
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    assert messages.count("· NOTICE") == 1
    assert "`assets/feed.csv`: a named pipe (FIFO)" in messages and "regular file" in messages
    assert "`guidelines/style.md`: a broken symbolic link" in messages
    assert "remove the link" in messages

    # The link's target appears: the next refresh reads it as the file it leads to.
    (home.guidelines / "house_style.md").write_text("# House style\n\nShort sentences.\n", "utf-8")
    assert refresh_inputs(crew) == 2  # house_style.md itself, and the link now readable
    style = {row.file_path: row for row in crew.catalog.rows()}["guidelines/style.md"]
    assert not is_unread(style) and "House style" in style.summary


def test_a_file_catalogued_again_keeps_a_persons_edit_of_its_row() -> None:
    """An entry equal to the one last written says nothing new: the edited row stays; a new
    entry changes only the cells the person left as written (their edit wins its cell)."""
    ours = CatalogEntry(file_path="a.md", asset_type=AssetType.TOOL_OUTPUT, summary="ours")
    edited = ours.model_copy(update={"summary": "ours, and the person's note"})
    newer = ours.model_copy(update={"summary": "the file changed", "source_task_id": "T9"})
    written = {"a.md": ours}
    assert upsert([edited], {"a.md": 0}, [ours], written) == [edited]
    merged = upsert([edited], {"a.md": 0}, [newer], written)
    assert merged == [newer.model_copy(update={"summary": "ours, and the person's note"})]
    assert upsert([ours], {"a.md": 0}, [newer], written) == [newer]  # no edit: all new
    assert upsert([], {}, [ours], written) == [ours]  # a lost row is written again


class _HeldSummaries:
    """The builtin Executor, whose summaries wait for a gate and count how many run at once."""

    def __init__(self, executor: Any) -> None:
        self._executor = executor
        self.gate = threading.Event()
        self.in_flight = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._executor, name)

    def summarize(self, path: Path) -> str:
        with self._lock:
            self.in_flight += 1
        self.gate.wait(60)
        with self._lock:
            self.in_flight -= 1
        return str(self._executor.summarize(path))


def test_t03_summarises_several_inputs_at_once(home: Home) -> None:
    for n in range(12):
        (home.assets / f"note_{n:02d}.md").write_text(f"# Note {n}\n\nText {n}.\n", "utf-8")
    mapping = load_runtime_mapping(home.root)
    crew = build_collaborators(home, mapping, os.environ, console=lambda t: None)
    held = _HeldSummaries(crew.executor)
    crew.executor = held
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(refresh_inputs(crew)))
    worker.start()
    try:  # 13 files (12 notes and mcp_list.md): SUMMARY_WORKERS of them at once, no more
        wait_for(lambda: held.in_flight == SUMMARY_WORKERS, "summaries in parallel")
    finally:
        held.gate.set()
        worker.join(timeout=60)
    assert done == [13] and held.in_flight == 0
    rows = TableStore().table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename).rows()
    assert sorted(row.file_path for row in rows)[:2] == ["assets/note_00.md", "assets/note_01.md"]
    assert len(rows) == 13 and all(row.summary for row in rows)
