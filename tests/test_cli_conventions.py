"""The CLI's conventions (issue 14): version, help, --json errors, one unknown-run message,
exit codes, and `submit`/`doctor` telling whether a daemon serves the home."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from app.cli import app
from app.cli_app import EXAMPLES
from app.cli_schemas import schema_for
from app.commands import stopped_line
from multiverse.home import BEAT_SECONDS, Beat, Home, probe, serving_state

from forked import Forked, forked_daemon
from journey import cli, serving

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error", "code"],
    "properties": {"error": {"type": "string", "minLength": 1}, "code": {"type": "integer"}},
    "additionalProperties": False,
}
SUBMIT_SCHEMA = {
    "type": "object",
    "required": ["inbox", "daemon", "taken", "run_id", "path", "status", "proposal", "timed_out"],
    "properties": {
        "inbox": {"type": "string"},
        "daemon": {"enum": ["serving", "not running"]},
        "taken": {"enum": ["run", "reply", "rejected", None]},
        "run_id": {"type": ["string", "null"]},
        "proposal": {"type": ["string", "null"]},
        "timed_out": {"type": "boolean"},
    },
}
DOCTOR_SCHEMA = {
    "type": "object",
    "required": ["home", "mapping", "tiers", "packages", "daemon", "healthy", "serving"],
    "properties": {
        "healthy": {"type": "boolean"},
        "serving": {"type": "boolean"},
        "daemon": {
            "type": "object",
            "required": ["state", "pid", "since"],
            "properties": {"state": {"enum": ["serving", "stuck", "not running"]}},
        },
    },
}
UNKNOWN = "run-20990101-000000-001"
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _beat(age: float) -> Beat:
    return Beat(pid=42, started_at=NOW - timedelta(hours=1), beat_at=NOW - timedelta(seconds=age))


def test_serving_needs_the_lock_and_a_recent_beat() -> None:
    """Serving = lock held and a beat under three intervals old; else stuck or not running."""
    assert serving_state(True, _beat(1.0), NOW).serving
    assert serving_state(True, _beat(1.0), NOW).pid == 42
    assert serving_state(True, _beat(3 * BEAT_SECONDS + 0.1), NOW).state == "stuck"
    assert serving_state(True, None, NOW).state == "stuck"
    assert serving_state(False, _beat(0.0), NOW).state == "not running"
    assert serving_state(False, None, NOW).state == "not running"


def test_version_prints_the_package_version() -> None:
    """`multiverse --version` prints `multiverse X.Y.Z` and exits 0."""
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"multiverse {version('multiverse')}"


def test_every_command_help_has_an_example_and_readable_metavars() -> None:
    """Each command's --help ends with an example and shows no `<bool>`, `<str>` or `{run}`."""
    runner = CliRunner()
    main = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert "Exit codes: 0 ok" in main.output and "--install-completion" in main.output
    commands = re.findall(r"│ (\w[\w-]*) {2,}", main.output.split("Commands")[1])
    assert set(commands) == set(EXAMPLES), "every command has an example"
    for name in commands:
        shown = runner.invoke(app, [name, "--help"], env={"COLUMNS": "200"}).output
        assert f"Example: {EXAMPLES[name]}" in " ".join(shown.split()), name
        assert not re.search(r"<\w+>|\{\w+\}", shown), (name, shown)


@pytest.mark.parametrize("command", ["status", "show", "confirm", "cancel", "resume", "retry"])
def test_an_unknown_run_gets_one_message_everywhere(home: Home, command: str) -> None:
    """Every command says the same words for a run id the home does not hold, exit 2."""
    for run_id in (UNKNOWN, "not-a-run"):
        result = cli(home, command, run_id)
        assert result.returncode == 2, result.stderr
        expected = f"error: no run {run_id} in this home (`multiverse status` lists the runs)"
        assert result.stderr.strip() == expected


@pytest.mark.parametrize(
    "command", [["status", UNKNOWN], ["show", UNKNOWN], ["submit"], ["status", "--bogus"]]
)
def test_json_errors_are_json_with_their_code(home: Home, command: list[str]) -> None:
    """Under --json an error is one JSON object on stdout carrying the exit code."""
    result = cli(home, *command, "--json")
    error = json.loads(result.stdout)
    jsonschema.validate(error, ERROR_SCHEMA)
    assert error["code"] == result.returncode == 2


def test_submit_without_a_request_says_what_to_give(home: Home) -> None:
    """`submit` with neither TEXT nor --file says how to give one (not "not both")."""
    result = cli(home, "submit")
    assert result.returncode == 2
    assert "not both" not in result.stderr and "--file FILE" in result.stderr


def test_submit_with_no_daemon_queues_and_warns(home: Home) -> None:
    """With no daemon serving, `submit` prints the inbox file, warns on stderr, exits 0."""
    result = cli(home, "submit", "Write a memo about the market.")
    assert result.returncode == 0
    assert result.stdout.startswith(f"submitted: {home.inbox}")
    assert "no daemon serves this home: start one with `multiverse start`" in result.stderr
    data = json.loads(cli(home, "submit", "--json", "Another memo.").stdout)
    jsonschema.validate(data, SUBMIT_SCHEMA)
    assert data["daemon"] == "not running" and data["taken"] is None


def test_doctor_says_no_daemon_serves(home: Home) -> None:
    """`doctor` on a home no daemon serves says so and how to start one; --json too."""
    result = cli(home, "doctor")
    assert result.returncode == 0
    assert "✗ daemon: not running: start one with `multiverse start`" in result.stdout
    assert "all good" not in result.stdout
    data = json.loads(cli(home, "doctor", "--json").stdout)
    jsonschema.validate(data, DOCTOR_SCHEMA)
    assert data["serving"] is False and data["daemon"]["state"] == "not running"


@pytest.fixture
def daemon(home: Home) -> Iterator[Forked]:
    """`multiverse start` serving the home (a forked child) once its heartbeat says so."""
    with forked_daemon(home, ready=lambda: probe(home.state).serving) as process:
        yield process


def test_submit_wait_prints_the_run_and_its_proposal(home: Home) -> None:
    """Against a serving daemon, `submit --wait` prints the run id, then the proposal."""
    with serving(home):
        _submit_wait_prints_the_run_and_its_proposal(home)


def _submit_wait_prints_the_run_and_its_proposal(home: Home) -> None:
    result = cli(home, "submit", "--wait", "Write a 2-page memo about the e-bike market.")
    assert result.returncode == 0, result.stderr
    assert "no daemon" not in result.stderr
    run_id = re.search(r"^run: (run-\d{8}-\d{6}-\d{3})$", result.stdout, re.M)
    assert run_id is not None, result.stdout
    assert f"proposal: {home.run(run_id[1]).feedback}" in result.stdout
    assert home.run(run_id[1]).feedback.read_text(encoding="utf-8").strip() in result.stdout
    taken = json.loads(cli(home, "submit", "--json", "Write a memo about bikes.").stdout)
    jsonschema.validate(taken, SUBMIT_SCHEMA)
    assert taken["daemon"] == "serving" and taken["taken"] == "run" and taken["run_id"]
    asked = cli(home, "submit", "what's in the assets folder?")
    assert asked.returncode == 0, asked.stderr
    replied = re.search(
        rf"^answered: ({re.escape(str(home.inbox_done))}/\S+\.reply\.md)$", asked.stdout, re.M
    )
    assert replied is not None, asked.stdout
    reply = Path(replied[1]).read_text(encoding="utf-8").strip()
    assert reply and reply in asked.stdout  # the answer itself, on stdout
    answered = json.loads(cli(home, "submit", "--json", "what's in the assets folder?").stdout)
    jsonschema.validate(answered, SUBMIT_SCHEMA)
    assert answered["taken"] == "reply" and answered["answer"]
    assert answered["answer"] == Path(answered["path"]).read_text(encoding="utf-8").rstrip()


def test_modify_prints_the_revised_proposal(home: Home) -> None:
    """Against a serving daemon, `modify` waits for the revised proposal and prints it (and
    in --json); --no-wait only writes the answer; with no daemon, a warning says it waits."""
    with serving(home):
        submitted = cli(home, "submit", "--wait", "Write a 2-page memo about the e-bike market.")
        run_id = re.search(r"^run: (run-\S+)$", submitted.stdout, re.M)
        assert run_id is not None, submitted.stdout
        result = cli(home, "modify", run_id[1], "Make it one page, for the board.")
        assert result.returncode == 0, result.stderr
        revised = home.run(run_id[1]).feedback.read_text(encoding="utf-8")
        assert "Make it one page, for the board." in revised  # the revision, not the first
        assert f"proposal: {home.run(run_id[1]).feedback}" in result.stdout
        assert revised.strip() in result.stdout
        data = json.loads(cli(home, "modify", "--json", run_id[1], "In English.").stdout)
        jsonschema.validate(data, schema_for("modify"))
        assert data["proposal"] == home.run(run_id[1]).feedback.read_text(encoding="utf-8")
        assert "In English." in data["proposal"] and data["status"] == "AWAITING_CONFIRMATION"
    quiet = cli(home, "modify", "--no-wait", run_id[1], "Add a title.")
    assert quiet.returncode == 0 and quiet.stdout.startswith("modify: answer written to")
    assert "proposal:" not in quiet.stdout and not quiet.stderr
    alone = cli(home, "modify", run_id[1], "Shorter.")
    assert alone.returncode == 0 and "no daemon serves this home" in alone.stderr
    assert "the answer waits" in alone.stderr


def test_the_stop_line_says_what_was_done() -> None:
    """The daemon's last line counts the steps finished and the runs waiting for the user."""
    assert stopped_line(1, 0).startswith("stopped: 1 step finished since start;")
    assert "3 steps finished since start, 2 runs wait for you" in stopped_line(3, 2)


def test_doctor_shows_the_serving_daemon_and_ctrl_c_says_what_it_did(
    home: Home, daemon: Forked
) -> None:
    """`doctor` says since when and which pid serves; Ctrl-C prints what it did, no traceback."""
    shown = cli(home, "doctor")
    assert "✓ daemon: serving since " in shown.stdout and f"(pid {daemon.pid})" in shown.stdout
    assert "✓ all good" in shown.stdout
    daemon.send_signal(signal.SIGINT)
    daemon.wait(timeout=60)
    out, err = daemon.stdout(), daemon.stderr()
    assert daemon.returncode == 0
    assert "Traceback" not in out + err
    assert out.strip().splitlines()[-1].startswith("stopped: 0 steps finished since start")
    assert not probe(home.state).serving
    assert not (home.state / "heartbeat.json").exists()


@pytest.mark.parametrize(("typed", "ours"), [("ls", "runs"), ("stop", "cancel"), ("rm", "archive")])
def test_a_command_from_another_cli_names_ours(home: Home, typed: str, ours: str) -> None:
    result = cli(home, typed, "x")
    assert result.returncode == 2 and f"use `multiverse {ours}" in result.stderr
    as_json = cli(home, typed, "--json")
    assert (
        as_json.returncode == 2 and f"use `multiverse {ours}" in json.loads(as_json.stdout)["error"]
    )


def test_no_guess_hides_a_real_command() -> None:
    from app.cli_app import GUESSES

    names = {command.name or command.callback.__name__ for command in app.registered_commands}
    assert not names & set(GUESSES)
