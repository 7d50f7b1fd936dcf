"""A full disk is the machine's fault, not the run's (SPEC §8, §14).

No traceback anywhere; the run FAILED with the same report as any failure; `retry` is refused
while the disk is still full and resumes the run once space is back. Three ways: a real small
file system (tmpfs, where the machine lets the test mount one), and the write layer's fault
hook (MULTIVERSE_FAULT_ENOSPC) failing the deliverables' writes, or every write.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from multiverse.home import Home, init_home

from forked import forked, forked_cli, forked_once
from journey import cli, copy_assets, once, only_run, wait_for
from mappings import take_requests_at_once

REQUEST = "Analyse the market report and write a memo with a chart of the revenue figures."


def _confirmed(home: Home) -> str:
    copy_assets(home, "market_report_2024.md", "quarterly_revenue.csv")
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    run_id = str(only_run(home)["run_id"])
    assert cli(home, "confirm", run_id).returncode == 0
    return run_id


def _no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text, text


def _messages(home: Home, run_id: str) -> str:
    return home.run(run_id).messages.read_text(encoding="utf-8")


def test_deliverables_that_do_not_fit_fail_the_run_and_retry_completes_it(
    home: Home, tmp_path: Path
) -> None:
    """ENOSPC on outputs/: FAILED with a clear report; retry refused while full, then done."""
    run_id = _confirmed(home)
    trigger = tmp_path / "disk-full"
    trigger.write_text(f"{home.root}/outputs/*\n", encoding="utf-8")
    full = {"MULTIVERSE_FAULT_ENOSPC": str(trigger)}  # read as the program starts: children

    result = forked_once(home, env=full)
    assert result.returncode == 1
    _no_traceback(result.stdout, result.stderr)
    assert only_run(home)["status"] == "FAILED"
    report = _messages(home, run_id)
    assert "· FAILURE" in report and "No space left on device" in report
    assert f"multiverse retry {run_id}" in report

    refused = forked_cli(home, "retry", run_id, env=full)
    assert refused.returncode == 1 and "No space left on device" in refused.stderr
    _no_traceback(refused.stderr)

    trigger.unlink()  # space is back
    assert cli(home, "retry", run_id).returncode == 0
    assert once(home).returncode == 0
    assert only_run(home)["status"] == "COMPLETED"
    outputs = home.run(run_id).outputs
    assert (outputs / "report.md").is_file()
    assert not [p for p in outputs.rglob("*") if p.name.endswith(".tmp")]
    assert _messages(home, run_id).count("· RETRY") == 1


def test_a_disk_refusing_every_write_holds_the_failure_until_it_can_be_recorded(
    home: Home, tmp_path: Path
) -> None:
    """Nothing can be written: the console says so; the failure lands once space is back."""
    run_id = _confirmed(home)
    trigger = tmp_path / "disk-full"
    trigger.write_text("", encoding="utf-8")  # every write fails
    env = {"MULTIVERSE_FAULT_ENOSPC": str(trigger)}  # read as the program starts: a child
    log = home.state / "logs" / "daemon.jsonl"
    with forked(home, "start", env=env) as daemon:
        try:
            wait_for(lambda: log.exists() and "machine_fault" in log.read_text("utf-8"), "a fault")
            assert only_run(home)["status"] == "AWAITING_CONFIRMATION"  # nothing was written
            trigger.unlink()
            wait_for(lambda: only_run(home)["status"] == "FAILED", "the failure to be recorded")
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)
        console = daemon.stdout() + daemon.stderr()
    _no_traceback(console)
    assert "The disk refused a write" in console and "No space left on device" in console
    assert "· FAILURE" in _messages(home, run_id)

    # The failed step was handling the CONFIRM: the answer was kept and is handled again.
    assert cli(home, "retry", run_id).returncode == 0
    assert once(home).returncode == 0
    assert only_run(home)["status"] == "COMPLETED"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs mounted for the test (skipped where the machine does not allow it)."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder: Path, name: str) -> Path:
    """Write a file until the disk is full; returns it."""
    filler = folder / name
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                continue
    finally:
        os.close(fd)
    return filler


def test_a_real_full_disk(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a real full file system: one-line CLI errors, a recorded FAILED run, then retry."""
    home = Home(small_disk / "home")
    init_home(home)
    take_requests_at_once(home)
    monkeypatch.setenv("MULTIVERSE_HOME", str(home.root))
    run_id = _confirmed(home)  # the daemon's first life made its space reserve
    filler = _fill(small_disk, "filler.bin")
    result = forked_once(home)  # on the full disk: children, as a user's commands are
    _no_traceback(result.stdout, result.stderr)
    assert result.returncode == 1
    assert only_run(home)["status"] == "FAILED"
    assert "No space left on device" in _messages(home, run_id)

    filler_again = _fill(small_disk, "filler-2.bin")  # the reserve's space is taken again
    refused = forked_cli(home, "retry", run_id)
    assert refused.returncode == 1 and "No space left on device" in refused.stderr
    _no_traceback(refused.stderr)
    submit = forked_cli(home, "submit", "Another request")
    assert submit.returncode == 4 and submit.stderr.count("\n") == 1
    assert "No space left on device" in submit.stderr
    _no_traceback(submit.stderr)

    filler_again.unlink()
    filler.unlink()
    assert cli(home, "retry", run_id).returncode == 0
    assert once(home).returncode == 0
    assert only_run(home)["status"] == "COMPLETED"
    assert json.loads(cli(home, "status", "--json").stdout)[0]["status"] == "COMPLETED"
