"""`--json` on every command that prints data (issue 14): one JSON document on stdout that
validates against `app.cli_schemas`, an error as `{error, code}`, the same exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer

from app.cli import app
from app.cli_schemas import SHAPES, schema_for
from multiverse.home import Home
from multiverse.models import AssetType, CatalogEntry
from multiverse.runs import ApprovalBook

from journey import cli, copy_assets, once, only_run
from stepping import builtin_collaborators, confirmed_run

REQUEST = "Analyse the market report and write a memo"
REPORT = "market_report_2024.md"
UNKNOWN = "run-20990101-000000-001"
ANSWERS = {  # every command that answers a run, with the arguments it needs after RUN
    "confirm": (),
    "modify": ("Make it one page.",),
    "cancel": (),
    "pause": (),
    "approve": (),
    "deny": (),
    "retry": (),
    "resume": (),
}


def _json(home: Home, shape: str, *args: str, code: int = 0) -> Any:
    """`multiverse COMMAND ARGS --json`: its exit code checked, its stdout validated against
    the schema of `shape` (the command's, or the error's when `code` is not 0)."""
    result = cli(home, shape.split()[0], *args, "--json")
    assert result.returncode == code, result.stdout + result.stderr
    data = json.loads(result.stdout)
    jsonschema.validate(data, schema_for(shape if code == 0 else "error"))
    assert code == 0 or data["code"] == code
    return data


@pytest.fixture
def waiting(home: Home) -> str:
    """A run waiting for the answer to its proposal (the builtin engine wrote it)."""
    copy_assets(home, REPORT)
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    run_id: str = only_run(home)["run_id"]
    return run_id


@pytest.fixture
def completed(home: Home) -> str:
    """A run confirmed and COMPLETED, and a question answered without a run beside it."""
    copy_assets(home, REPORT)
    assert cli(home, "submit", REQUEST).returncode == 0
    assert cli(home, "submit", "what's in the assets folder?").returncode == 0
    assert once(home).returncode == 0
    run_id: str = only_run(home)["run_id"]
    assert cli(home, "confirm", run_id).returncode == 0
    assert once(home).returncode == 0
    assert only_run(home)["status"] == "COMPLETED"
    return run_id


def test_every_command_with_json_has_a_schema() -> None:
    """Each command taking --json has a schema in cli_schemas, and every schema builds."""
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    with_json = {
        name
        for name, command in group.commands.items()
        if any("--json" in getattr(param, "opts", ()) for param in command.params)
    }
    assert with_json >= {"init", "delete-row", *ANSWERS}
    assert with_json <= set(SHAPES)
    assert all(schema_for(shape)["type"] in ("object", "array") for shape in SHAPES)


def test_init_prints_the_home_and_what_it_created(tmp_path: Path) -> None:
    """`init --json` names the home and the paths created; a second init creates none."""
    fresh = Home(tmp_path / "fresh")
    made = _json(fresh, "init")
    assert made["home"] == str(fresh.root.resolve())
    assert {"inbox", "db", "runs", "runtime-mapping.yaml"} <= set(made["created"])
    assert _json(fresh, "init")["created"] == []


@pytest.mark.parametrize("command", ["confirm", "modify", "cancel"])
def test_an_answer_to_a_proposal_prints_its_file_and_sentence(
    home: Home, waiting: str, command: str
) -> None:
    """confirm/modify/cancel --json: the run, the answer, its file, and the text-mode sentence."""
    answer = _json(home, command, waiting, *ANSWERS[command])
    assert answer["run_id"] == waiting and answer["answer"] == command
    # each answer its own file, waiting to be handled in order (two never overwrite)
    assert answer["path"].startswith(f"runs/{waiting}/answers/") and answer["path"].endswith(".md")
    assert (home.root / answer["path"]).exists()
    said = cli(home, command, waiting, *ANSWERS[command])  # the same answer again, as text
    files = re.compile(r"answers/[^ )]+\.md")
    assert said.returncode == 0
    assert files.sub("…", said.stdout.strip()) == files.sub("…", answer["message"])
    assert len(list(home.run(waiting).answers.iterdir())) == 2  # a second file: none replaced


def test_approve_and_deny_name_the_approval_they_answered(home: Home, waiting: str) -> None:
    """With two actions waiting, an id is needed; approve and deny print the one answered."""
    book = ApprovalBook(home.run(waiting).root)
    first = book.request(waiting, "T01", "run_shell", {"command": "ls"}, 600)
    second = book.request(waiting, "T01", "run_shell", {"command": "pwd"}, 600)
    assert "2 approvals are waiting" in _json(home, "approve", waiting, code=2)["error"]
    approved = _json(home, "approve", waiting, first.id)
    assert approved["approval_id"] == first.id and approved["status"] == "APPROVED"
    assert approved["answer"] == "approve" and approved["action"] == first.shown()
    denied = _json(home, "deny", waiting)  # the only one left
    assert denied["approval_id"] == second.id and denied["status"] == "DENIED"
    assert "no approval is waiting" in _json(home, "deny", waiting, code=2)["error"]


def test_a_run_waiting_for_an_approval_says_which_and_how_to_answer(
    home: Home, waiting: str
) -> None:
    """`status`, `runs` and `status RUN` (text and --json) name the action waiting, shortened,
    and the commands that answer it, with no "running" time; once answered, the line goes."""
    book = ApprovalBook(home.run(waiting).root)
    long_command = "wc -l " + " ".join(f"assets/file-{n}.csv" for n in range(40))
    book.request(waiting, "T01", "run_shell", {"command": long_command}, 600)
    rows = _json(home, "status")
    line = next(row["waiting"] for row in rows if row["run_id"] == waiting)
    assert line.startswith("waiting for your approval: run_shell")
    assert f"`multiverse approve {waiting}`" in line and f"`multiverse deny {waiting}`" in line
    assert "…" in line and len(line) < 250  # the arguments shortened
    assert line == _json(home, "status RUN", waiting)["run"]["waiting"]
    for command in ("status", "runs"):
        text = cli(home, command).stdout
        assert line in text and "running" not in text, text
    assert "waiting for your approval" in cli(home, "status", waiting).stdout
    _json(home, "approve", waiting)
    assert all("waiting" not in row or row["waiting"] is None for row in _json(home, "status"))


def test_pause_then_resume_prints_what_the_run_was_held_for(home: Home) -> None:
    """pause --json on a confirmed run; once held, a second pause is a JSON error (exit 1);
    resume --json lists what held it."""
    copy_assets(home, REPORT)
    run_id, runner = confirmed_run(builtin_collaborators(home))
    assert runner.advance(run_id) is not None  # the CONFIRM
    paused = _json(home, "pause", run_id)
    assert paused["answer"] == "pause" and paused["path"].startswith(f"runs/{run_id}/answers/")
    assert once(home).returncode == 0
    assert "held already" in _json(home, "pause", run_id, code=1)["error"]
    resumed = _json(home, "resume", run_id)
    assert resumed["answer"] == "resume" and resumed["held"]
    assert resumed["message"].endswith(", ".join(resumed["held"]))


def test_retry_prints_where_the_run_failed(home: Home) -> None:
    """A run FAILED for a vanished source: retry --json says the place it resumes from."""
    copy_assets(home, REPORT)
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    run_id = only_run(home)["run_id"]
    assert cli(home, "confirm", run_id).returncode == 0
    (home.assets / REPORT).unlink()
    once(home)
    assert only_run(home)["status"] == "FAILED"
    copy_assets(home, REPORT)  # the cause is fixed
    retried = _json(home, "retry", run_id)
    assert retried["answer"] == "retry" and retried["from"]
    assert retried["message"].endswith(f"from {retried['from']}")


def test_delete_row_prints_the_table_and_key(home: Home) -> None:
    """delete-row --json names the table (home-relative) and key; a missing row exits 2."""
    entry = CatalogEntry(file_path="assets/a.md", asset_type=AssetType.ORIGINAL_INPUT)
    builtin_collaborators(home).catalog.insert(entry)
    table = "db/knowledge_base_catalog.md"
    deleted = _json(home, "delete-row", table, "assets/a.md")
    assert deleted["table"] == table and deleted["key"] == "assets/a.md"
    assert "has no row" in _json(home, "delete-row", table, "assets/a.md", code=2)["error"]


@pytest.mark.parametrize("command", list(ANSWERS))
def test_an_unknown_run_is_a_json_error_exit_2(home: Home, command: str) -> None:
    """Every answer command says an unknown run id as `{error, code: 2}`, exit 2."""
    error = _json(home, command, UNKNOWN, *ANSWERS[command], code=2)
    assert error["error"] == f"no run {UNKNOWN} in this home (`multiverse status` lists the runs)"


def test_the_read_commands_print_a_completed_run(home: Home, completed: str) -> None:
    """submit, status (list and tree), show, logs and doctor --json all fit their schemas."""
    queued = _json(home, "submit", "Another memo, please.")
    assert queued["daemon"] == "not running" and queued["taken"] is None
    listed = _json(home, "status")
    assert [entry.get("kind") for entry in listed] == [None, "simple_reply"]
    tree = _json(home, "status RUN", completed)
    assert tree["run"]["status"] == "COMPLETED" and tree["tasks"]
    assert {row["status"] for row in tree["phases"] + tree["tasks"]} == {"COMPLETED"}
    shown = _json(home, "show", completed)
    assert shown["status"] == "COMPLETED" and f"outputs/{completed}/report.md" in shown["outputs"]
    logs = cli(home, "logs", completed, "--json")
    assert logs.returncode == 0 and logs.stdout.strip(), logs.stderr
    for line in logs.stdout.splitlines():
        jsonschema.validate(json.loads(line), schema_for("logs"))
    assert _json(home, "doctor")["healthy"] is True


def test_answers_to_a_completed_run_are_json_errors(home: Home, completed: str) -> None:
    """A run in the wrong state: exit 1 with a JSON error; no approval waiting: exit 2."""
    for command, code in {**dict.fromkeys(ANSWERS, 1), "approve": 2, "deny": 2}.items():
        error = _json(home, command, completed, *ANSWERS[command], code=code)
        assert completed in error["error"], (command, error)
    assert not home.run(completed).user_response.exists()
