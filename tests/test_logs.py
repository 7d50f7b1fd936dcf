"""`multiverse logs` and the times of `status`, through the real CLI over a real home."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from app.runs_view import daemon_log
from multiverse.home import Home

from journey import cli, cli_popen, once, only_run, run_tree


def _confirmed_run(home: Home) -> str:
    """A run taken in, confirmed and worked to its end by `start --once`."""
    assert cli(home, "submit", "Write a memo about the market.").returncode == 0
    once(home)
    run_id = str(only_run(home)["run_id"])
    assert cli(home, "confirm", run_id).returncode == 0
    once(home)
    return run_id


def _created_earlier(home: Home, run_id: str, minutes: int) -> None:
    """Move the run's `created` event back in time (a run made a while ago, without waiting)."""
    path = home.run(run_id).root / "timeline.jsonl"
    first, *rest = path.read_text(encoding="utf-8").splitlines(keepends=True)
    event = json.loads(first)
    assert event["event"] == "created"
    moment = datetime.fromisoformat(event["at"]) - timedelta(minutes=minutes)
    event["at"] = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    path.write_text(json.dumps(event) + "\n" + "".join(rest), encoding="utf-8")


def test_status_shows_age_and_elapsed_and_json_carries_the_times(home: Home) -> None:
    """A finished run's line says when it was created and how long its work took (its steps,
    not the time since it was created); JSON has the times."""
    run_id = _confirmed_run(home)
    _created_earlier(home, run_id, minutes=2)
    line = next(line for line in cli(home, "status").stdout.splitlines() if run_id in line)
    assert "created " in line and " ago · took " in line
    assert "created 2 min ago · took " in line and "took 2m" not in line, line
    row = only_run(home)
    assert row["status"] == "COMPLETED"
    assert row["created_at"] < row["confirmed_at"] <= row["ended_at"]
    assert row["elapsed_seconds"] > 0
    timeline = (home.run(run_id).root / "timeline.jsonl").read_text(encoding="utf-8")
    events = [json.loads(line)["event"] for line in timeline.splitlines()]
    assert events[0] == "created" and events[-1] == "completed" and "confirmed" in events


def test_status_of_a_run_shows_each_nodes_elapsed_time(home: Home) -> None:
    """`status RUN` ends each phase/stage/task line with its time; JSON has elapsed_seconds."""
    run_id = _confirmed_run(home)
    lines = cli(home, "status", run_id).stdout.splitlines()
    task = next(line for line in lines if " T00 " in line)
    assert task.rstrip().endswith("s"), task
    tree = run_tree(home, run_id)
    assert all(task["elapsed_seconds"] is not None for task in tree["tasks"])
    assert tree["run"]["in_flight"] is None and tree["run"]["ended_at"]


def test_logs_of_a_run_print_only_its_lines(home: Home) -> None:
    """Two runs: `logs RUN` prints readable lines of that run alone; `--json` prints JSON."""
    for text in ("Write a memo about the market.", "Write a note about the prices."):
        assert cli(home, "submit", text).returncode == 0
        once(home)
    first, second = sorted(os.listdir(home.runs))
    result = cli(home, "logs", first)
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and any(" step_started " in line for line in lines)
    assert all(f"run_id={first}" in line for line in lines) and second not in result.stdout
    raw = cli(home, "logs", "--json").stdout.splitlines()
    records = [json.loads(line) for line in raw]
    assert {record.get("run_id") for record in records} >= {first, second}


def test_logs_of_an_unknown_run_and_of_a_home_never_started(home: Home) -> None:
    """An unknown run is the usual error (exit 2); no daemon log yet is said, with exit 0."""
    unknown = cli(home, "logs", "run-20990101-000000-001")
    assert unknown.returncode == 2 and "no run run-20990101-000000-001" in unknown.stderr
    empty = cli(home, "logs")
    assert empty.returncode == 0 and "no daemon log yet" in empty.stderr
    assert "multiverse start" in empty.stderr and empty.stdout == ""


def _reader(stream: object, lines: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.put(line)


def _expect(lines: queue.Queue[str], text: str, child: subprocess.Popen[str]) -> None:
    """Wait for the child to print a line holding `text`, however long a loaded machine takes
    to start it (pytest's timeout bounds a hang); a child that ended without it fails at once."""
    while True:
        try:
            if text in lines.get(timeout=0.1):
                return
        except queue.Empty:
            if child.poll() is not None and lines.empty():
                raise AssertionError(
                    f"the child ended ({child.returncode}) without printing {text!r}"
                ) from None


def test_logs_follow_prints_appended_lines_and_stops_quietly_on_ctrl_c(home: Home) -> None:
    """`logs --follow` prints a line appended after it started; Ctrl-C exits 0, no traceback."""
    path = daemon_log(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = {"timestamp": "2026-11-23T10:00:00Z", "level": "info", "event": "daemon_started"}
    path.write_text(json.dumps(old) + "\n", encoding="utf-8")
    child = cli_popen(home, "logs", "--follow")
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_reader, args=(child.stdout, lines), daemon=True).start()
    try:
        _expect(lines, "daemon_started", child)
        new = {
            "timestamp": "2026-11-23T10:00:01Z",
            "level": "info",
            "event": "step_started",
            "run_id": "run-20261123-100000-001",
            "step": "PROPOSE",
        }
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(new) + "\n")
        _expect(lines, "step_started run_id=run-20261123-100000-001 step=PROPOSE", child)
        child.send_signal(signal.SIGINT)
        assert child.wait() == 0  # bounded by pytest's timeout, not by a guess of ours
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.stderr is not None and "Traceback" not in child.stderr.read()


def test_follow_reads_a_rotated_and_a_truncated_file(tmp_path: Path) -> None:
    """A file replaced or cut shorter is read again from its start; a partial line waits."""
    from app.runs_view import _Reader

    path = tmp_path / "log"
    path.write_text("one\ntw", encoding="utf-8")
    reader = _Reader(path)
    assert reader.new_lines() == ["one"]
    with path.open("a", encoding="utf-8") as handle:
        handle.write("o\n")
    assert reader.new_lines() == ["two"]
    replacement = tmp_path / "new"
    replacement.write_text("three\n", encoding="utf-8")
    os.replace(replacement, path)
    assert reader.new_lines() == ["three"]
    path.write_text("", encoding="utf-8")
    assert reader.new_lines() == []
    with path.open("a", encoding="utf-8") as handle:
        handle.write("4\n")
    assert reader.new_lines() == ["4"]
    reader.close()


def test_a_log_file_on_a_full_device_is_said_once_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The log file on /dev/full (every write: no space left): lines logged, then logging
    closed, print one plain sentence on stderr and raise nothing; no traceback."""
    import structlog

    from multiverse.logs import close_logging, configure_logging

    configure_logging(Path("/dev/full"))
    try:
        log = structlog.get_logger("t")
        for number in range(5):
            log.info("line", n=number)
    finally:
        close_logging()
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "could not write the log file /dev/full" in lines[0], lines
    assert "free some disk space" in lines[0]
    assert "Traceback" not in err and "Logging error" not in err
