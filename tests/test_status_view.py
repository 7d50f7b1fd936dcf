"""The status views: the plain tree `status RUN` prints and the live tree `--watch` redraws;
what status says of broken, missing and healthy global tables (real files, in process)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.text import Text
from rich.tree import Tree
from wcwidth import wcswidth

from app.status_view import PAUSED_NOTE, live_tree, render_tree, show_status
from multiverse.home import Home, init_home
from multiverse.models import AssetType, CatalogEntry, Phase, ProcessRun, Status, UserInstruction
from multiverse.runs.timeline import TIME_FIELDS
from multiverse.store import (
    GLOBAL_TABLES,
    KNOWLEDGE_CATALOG,
    PHASES,
    PROCESS_RUNS,
    TASKS,
    USER_INSTRUCTIONS,
    TableStore,
    clip,
)

from journey import cli


def _data() -> dict[str, Any]:
    run = {
        "run_id": "run-20261121-000000-001",
        "user_request": "시장 분석 memo",
        "status": "PENDING",
        "current_phase_id": "P1",
        "current_stage_id": "P1-S01",
        "current_task_id": "P1-S01-T02",
    }
    stage = {"stage_id": "P1-S01", "phase_id": "P1", "stage_name": "Facts", "status": "PENDING"}
    tasks = [
        {
            "task_id": "P1-S01-T01",
            "stage_id": "P1-S01",
            "task_name": "Extract",
            "status": "COMPLETED",
        },
        {"task_id": "P1-S01-T02", "stage_id": "P1-S01", "task_name": "Chart", "status": "PENDING"},
    ]
    tool = {
        "tool_task_id": "P1-S01-T02-POST-01",
        "parent_task_id": "P1-S01-T02",
        "tool_type": "data_visualization",
        "status": "FAILED",
    }
    phases = [
        {"phase_id": "P0", "phase_name": "INSTRUCTION_AMENDMENT", "status": "COMPLETED"},
        {"phase_id": "P1", "phase_name": "ANALYZING", "status": "PENDING"},
    ]
    return {"run": run, "phases": phases, "stages": [stage], "tasks": tasks, "tool_tasks": [tool]}


def _label(node: Tree) -> Text:
    assert isinstance(node.label, Text)
    return node.label


def test_live_tree_nests_like_the_plain_tree() -> None:
    """Every line of the plain tree appears in the live tree, in the same order and nesting."""
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(live_tree(_data()))
    drawn = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    plain = render_tree(_data()).splitlines()
    assert len(drawn) == len(plain)
    for live_line, plain_line in zip(drawn, plain, strict=True):
        assert live_line.endswith(plain_line.strip())
    depth = [len(line) - len(line.lstrip(" │├└─")) for line in drawn]
    assert depth[0] < depth[1] == depth[2] < depth[3] < depth[4] == depth[5] < depth[6]


def test_live_tree_colours_statuses_and_bolds_the_current_work() -> None:
    """A failed tool task is red, a completed task green, the current task bold."""
    root = live_tree(_data())
    assert isinstance(root, Tree)
    stage = root.children[1].children[0]
    done, current = stage.children
    failed_tool = current.children[0]
    assert any("green" in str(span.style) for span in _label(done).spans)
    assert any("red" in str(span.style) for span in _label(failed_tool).spans)
    assert any(str(span.style) == "bold" for span in _label(current).spans)
    assert not any(str(span.style) == "bold" for span in _label(done).spans)


WORKING, WAITING, DONE = (f"run-20261121-000000-00{n}" for n in (1, 2, 3))
DEFECTS = {  # how a person breaks a table → what status must say about it
    "cells": "row has 2 cells, expected",
    "duplicate": "duplicate key",
    "utf8": "not valid UTF-8 at byte",
}
Broken = tuple[Home, str]  # a home and `db/<file>:<line>: ` of the row broken in it


def _populated(root: Path) -> Home:
    """A home with a working, a waiting and a completed run, one instruction, one catalog row."""
    home = Home(root)
    init_home(home)
    store = TableStore()
    runs = [
        ProcessRun(run_id=WORKING, user_request="Write the memo", current_phase_id="P1"),
        ProcessRun(run_id=WAITING, user_request="Chart it", status=Status.AWAITING_CONFIRMATION),
        ProcessRun(run_id=DONE, user_request="Done long ago", status=Status.COMPLETED),
    ]
    store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).insert(*runs)
    for run in runs:
        home.run(run.run_id).root.mkdir(parents=True)
        home.run(run.run_id).request.write_text(run.user_request + "\n", encoding="utf-8")
    store.table(PHASES, home.run(WORKING).db / PHASES.filename).insert(
        Phase(phase_id="P1", run_id=WORKING, phase_name="ANALYZING")
    )
    store.table(USER_INSTRUCTIONS, home.db / USER_INSTRUCTIONS.filename).insert(
        UserInstruction(
            instruction_id="I0001", run_id=WORKING, instruction_type="format", content="memo"
        )
    )
    store.table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename).insert(
        CatalogEntry(file_path="assets/a.md", asset_type=AssetType.ORIGINAL_INPUT)
    )
    return home


def _break(home: Home, filename: str, defect: str) -> str:
    """Append a broken row as a person would; returns `db/<file>:<line>:` of it."""
    path = home.db / filename
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    added = {
        "cells": b"| only | two |\n",
        "duplicate": lines[-1],
        "utf8": lines[-1].replace(b"|", b"| \xff\xfe", 1),
    }[defect]
    path.write_bytes(data + added)
    return f"db/{filename}:{len(lines) + 1}: "


@pytest.fixture(scope="module")
def broken_homes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Broken]:
    """One home per global table and defect, all broken first: a freshly saved broken file is
    trusted only once it has been quiet for a second, so they age together."""
    homes = {}
    for spec in GLOBAL_TABLES:
        for defect in DEFECTS:
            home = _populated(tmp_path_factory.mktemp(f"{spec.filename[:-3]}-{defect}"))
            homes[spec.filename, defect] = (home, _break(home, spec.filename, defect))
    return homes


def _status(
    capsys: pytest.CaptureFixture[str], home: Home, run: str | None = None, as_json: bool = False
) -> tuple[str, str]:
    show_status(str(home.root), run, watch=False, as_json=as_json)
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_status_of_a_healthy_home_has_no_paused_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Healthy tables: the runs as they are; JSON rows hold the table's columns, then the times."""
    home = _populated(tmp_path / "home")
    out, _ = _status(capsys, home)
    assert out.startswith(f"· {WORKING}  PENDING") and "paused" not in out
    out, err = _status(capsys, home, as_json=True)
    columns = [*PROCESS_RUNS.columns, *TIME_FIELDS]
    assert err == "" and all(list(row) == columns for row in json.loads(out))


@pytest.mark.parametrize("defect", list(DEFECTS))
@pytest.mark.parametrize("filename", [KNOWLEDGE_CATALOG.filename, USER_INSTRUCTIONS.filename])
def test_a_broken_global_table_pauses_the_working_runs(
    broken_homes: dict[tuple[str, str], Broken],
    capsys: pytest.CaptureFixture[str],
    filename: str,
    defect: str,
) -> None:
    """Its line comes first; the working run is paused, the waiting and the done one are not."""
    home, where = broken_homes[filename, defect]
    out, _ = _status(capsys, home)
    first, *runs = out.splitlines()
    reason = first.removesuffix(f" — {PAUSED_NOTE}")
    assert reason.startswith(where + DEFECTS[defect]) and reason != first
    assert runs[0].startswith(f"· {WORKING}") and runs[1] == f"    paused: {reason}"
    assert "paused" not in "\n".join(runs[2:])
    out, err = _status(capsys, home, as_json=True)
    rows = {row["run_id"]: row for row in json.loads(out)}
    assert rows[WORKING]["paused"] == reason
    assert "paused" not in rows[WAITING] and "paused" not in rows[DONE]
    assert err.splitlines() == [first]


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_a_broken_process_runs_lists_the_run_folders_paused(
    broken_homes: dict[tuple[str, str], Broken], capsys: pytest.CaptureFixture[str], defect: str
) -> None:
    """Statuses unknown (`?`, null), every run folder listed with its request and paused."""
    home, where = broken_homes[PROCESS_RUNS.filename, defect]
    out, _ = _status(capsys, home)
    first, *runs = out.splitlines()
    reason = first.removesuffix(f" — {PAUSED_NOTE}")
    assert reason.startswith(where + DEFECTS[defect])
    assert runs[0].startswith(f"‖ {WORKING}  ?") and runs[0].endswith("Write the memo")
    assert runs[1::2] == [f"    paused: {reason}"] * 3
    out, err = _status(capsys, home, as_json=True)
    rows = json.loads(out)
    assert [(row["run_id"], row["status"], row["paused"]) for row in rows] == [
        (run_id, None, reason) for run_id in (WORKING, WAITING, DONE)
    ]
    assert rows[1]["user_request"] == "Chart it" and err.splitlines() == [first]


def test_a_broken_process_runs_still_shows_a_runs_tree(
    broken_homes: dict[tuple[str, str], Broken], capsys: pytest.CaptureFixture[str]
) -> None:
    """`status RUN` reads the run's own tables and says why it is paused, text and JSON."""
    home, where = broken_homes[PROCESS_RUNS.filename, "cells"]
    out, _ = _status(capsys, home, WORKING)
    lines = out.splitlines()
    assert lines[1] == f"{WORKING}  ?  Write the memo"
    assert lines[2].startswith("  created ") and lines[2].endswith(" · waiting for you")
    assert lines[3].startswith(f"  paused: {where}") and lines[4] == "  · P1 ANALYZING"
    out, err = _status(capsys, home, WORKING, as_json=True)
    tree = json.loads(out)
    assert tree["run"]["status"] is None and tree["run"]["paused"].startswith(where)
    assert [phase["phase_id"] for phase in tree["phases"]] == ["P1"] and err.startswith(where)


@pytest.mark.parametrize("spec", GLOBAL_TABLES, ids=lambda spec: spec.filename)
def test_a_missing_global_table_is_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: Any
) -> None:
    """Missing catalog or instructions: nothing paused; missing process_runs: the folders, said."""
    home = _populated(tmp_path / "home")
    (home.db / spec.filename).unlink()
    out, _ = _status(capsys, home)
    assert "paused" not in out
    if spec is PROCESS_RUNS:
        assert out.startswith("db/process_runs.md is missing: the daemon rebuilds it")
        assert f"‖ {DONE}  ?" in out
    else:
        assert out.startswith(f"· {WORKING}  PENDING")


def test_an_unreadable_global_table_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A table that cannot be opened or read (a folder in its place) is said, never raised."""
    home = _populated(tmp_path / "home")
    (home.db / USER_INSTRUCTIONS.filename).unlink()
    (home.db / USER_INSTRUCTIONS.filename).mkdir()
    out, _ = _status(capsys, home)
    assert out.startswith("db/user_instructions.md: cannot read: Is a directory — ")
    assert "    paused: db/user_instructions.md: cannot read" in out


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_a_global_table_without_read_permission_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A table the user may not read is said with the reason, never raised."""
    home = _populated(tmp_path / "home")
    (home.db / KNOWLEDGE_CATALOG.filename).chmod(0)
    out, _ = _status(capsys, home)
    assert out.startswith("db/knowledge_base_catalog.md: cannot read: Permission denied — ")


def test_a_broken_run_table_shows_the_tree_it_can_and_the_problem(tmp_path: Path) -> None:
    """`status RUN` on a run whose own table is broken: the tree of the tables it can read, and
    the broken one's file, line and problem (text and --json); no traceback."""
    home = _populated(tmp_path / "home")
    columns = " | ".join(TASKS.columns)
    (home.run(WORKING).db / TASKS.filename).write_text(
        f"# Tasks\n\n| {columns} |\n|{'---|' * len(TASKS.columns)}\n| T9 |\n", encoding="utf-8"
    )
    result = cli(home, "status", WORKING)
    assert result.returncode == 0 and not result.stderr
    lines = result.stdout.splitlines()
    problem = next(line for line in lines if line.startswith("  cannot be read: "))
    assert f"runs/{WORKING}/db/tasks.md:" in problem and "row has 1 cells" in problem
    assert "  · P1 ANALYZING" in lines  # the phases and stages it could read
    tree = json.loads(cli(home, "status", WORKING, "--json").stdout)
    assert tree["run"]["broken"] == [problem.removeprefix("  cannot be read: ")]
    assert tree["phases"] and tree["tasks"] == []


def test_watch_shows_the_broken_line_and_ends_when_the_run_is_final(
    broken_homes: dict[tuple[str, str], Broken], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--watch` of a finished run shows the broken table's line, then stops by itself."""
    home, where = broken_homes[KNOWLEDGE_CATALOG.filename, "cells"]
    show_status(str(home.root), DONE, watch=True, as_json=False)
    assert where in capsys.readouterr().out


def test_the_live_tree_of_a_paused_run_with_an_unknown_status() -> None:
    """The live tree says `?` and the `paused:` line where the plain tree does."""
    data = _data()
    data["run"] |= {"status": None, "paused": "db/process_runs.md:9: row has 2 cells"}
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(live_tree(data))
    drawn = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    plain = render_tree(data).splitlines()
    heading = ["run-20261121-000000-001  ?  시장 분석 memo", "  paused: " + data["run"]["paused"]]
    assert drawn[:2] == plain[:2] == heading


def _answered(done: Path, request: str, reply: str, text: str, at: int) -> None:
    done.mkdir(parents=True, exist_ok=True)
    (done / request).write_text(text, encoding="utf-8")
    (done / reply).write_text("> reply\n", encoding="utf-8")
    os.utime(done / reply, (at, at))


def test_status_lists_the_requests_answered_without_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last ten replies in inbox/done/ follow the runs, oldest first, each with its request's
    first line (old `<name>.reply.md` replies too); in JSON as `simple_reply` entries; status
    writes nothing."""
    home = _populated(tmp_path / "home")
    done = home.inbox_done
    _answered(done, "old.md", "old.md.reply.md", "---\ntitle: x\n---\n# Old question\n", 1_000)
    for index in range(11):
        text = f"Question {index}?\n"
        _answered(done, f"ask-{index}.txt", f"ask-{index}.reply.md", text, 2_000 + index)
    (done / "run-request.md").write_text("Write a memo\n", encoding="utf-8")  # a run's: no reply
    before = sorted((p, p.stat().st_mtime_ns) for p in home.root.rglob("*"))
    out, _ = _status(capsys, home)
    assert out.startswith(f"· {WORKING}  PENDING")
    listed = out.split("answered without a run (the last 10):\n", 1)[1].splitlines()
    assert len(listed) == 10 and "old.md" not in out and "ask-0." not in out
    assert listed[0].startswith("↩ inbox/done/ask-1.reply.md  1970-01-01 00:33:21 UTC  Question 1?")
    assert listed[-1].endswith("Question 10?")
    rows = json.loads(_status(capsys, home, as_json=True)[0])
    replies = [row for row in rows if row.get("kind") == "simple_reply"]
    assert [row["run_id"] for row in rows if "run_id" in row] == [WORKING, WAITING, DONE]
    assert replies[-1] == {
        "kind": "simple_reply",
        "reply": "inbox/done/ask-10.reply.md",
        "request": "inbox/done/ask-10.txt",
        "first_line": "Question 10?",
        "answered_at": "1970-01-01 00:33:30 UTC",
    }
    assert sorted((p, p.stat().st_mtime_ns) for p in home.root.rglob("*")) == before


def test_old_replies_pair_with_their_request(tmp_path: Path) -> None:
    """`ask.md.reply.md` (the old naming) answers `ask.md`; a reply alone names no request."""
    from orchestrator.inbox import recent_replies

    home = Home(tmp_path)
    _answered(home.inbox_done, "ask.md", "ask.md.reply.md", "---\nmode: simple\n---\nList it\n", 5)
    (home.inbox_done / "lone.reply.md").write_text("x", encoding="utf-8")
    os.utime(home.inbox_done / "lone.reply.md", (9, 9))
    first, lone = recent_replies(home)
    assert (first.request, first.first_line) == (home.inbox_done / "ask.md", "List it")
    assert (lone.request, lone.first_line) == (None, "")


def test_requests_are_cut_by_terminal_columns_not_characters() -> None:
    """A Korean request takes two columns a character: it is cut as wide as an English one."""
    korean = "미국 실업률과 물가 상승률의 관계를 분석하고 1982년 이후 추세를 보여 주세요 " * 3
    english = "Analyse the relation of US unemployment and inflation since 1982 " * 3
    for text in (korean, english, "짧다"):
        cut = clip(text, 60)
        assert wcswidth(cut) <= 60 and " ".join(text.split()).startswith(cut)
    assert wcswidth(clip(korean, 60)) >= 58 and len(clip(korean, 60)) < 40
    assert clip("a\n  b", 60) == "a b"
