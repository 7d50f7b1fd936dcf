"""Short forms of a run id: `latest`, any unique part of it (multiverse.home)."""

from __future__ import annotations

import pytest

from multiverse.errors import UnknownRun, UserError
from multiverse.home import Home, pick

from journey import cli, copy_assets, once

KNOWN = ["run-20261121-090000-001", "run-20261122-101500-001", "run-20261122-101500-002"]


def test_short_forms_name_one_run() -> None:
    """`latest`, the id without `run-`, a unique prefix, suffix or inner part."""
    assert pick("latest", KNOWN) == KNOWN[-1]
    assert pick("090000", KNOWN) == KNOWN[0]  # the time part `status` shows
    assert pick("1-0900", KNOWN) == KNOWN[0]
    assert pick("20261121", KNOWN) == KNOWN[0]
    assert pick("run-20261121-09", KNOWN) == KNOWN[0]
    assert pick("-002", KNOWN) == KNOWN[2]
    assert pick(KNOWN[1], KNOWN) == KNOWN[1]


def test_ambiguous_and_unknown_parts_are_refused() -> None:
    """A part fitting several runs names them; one fitting none is the unknown-run error."""
    with pytest.raises(UserError, match="fits 2 runs"):
        pick("20261122", KNOWN)
    with pytest.raises(UserError, match="fits 2 runs"):
        pick("101500", KNOWN)  # one time, two runs in that second
    for reference in ("20261130", "nonsense", "", "latest-ish"):
        with pytest.raises(UnknownRun):
            pick(reference, KNOWN)
    with pytest.raises(UnknownRun):
        pick("latest", [])


def test_commands_take_the_short_forms(home: Home) -> None:
    """`status latest`, `show SUFFIX` and `confirm latest` reach the one run."""
    copy_assets(home, "market_report_2024.md")
    assert cli(home, "submit", "--no-wait", "Write a memo on the e-bike market.").returncode == 0
    assert once(home).returncode == 0
    (run_id,) = [p.name for p in home.runs.iterdir() if p.name.startswith("run-")]
    shown = cli(home, "status", "latest")
    assert shown.returncode == 0 and run_id in shown.stdout
    assert run_id in cli(home, "show", run_id[-10:]).stdout
    confirmed = cli(home, "confirm", "latest")
    assert confirmed.returncode == 0, confirmed.stderr
    unknown = cli(home, "show", "19990101")
    assert unknown.returncode == 2 and "no run 19990101 in this home" in unknown.stderr


def test_run_ids_complete_in_the_shell(home: Home) -> None:
    """The shell's completion of a RUN argument (typer's, as bash asks it): `latest` and the
    home's run ids that start with what is typed, newest first."""
    from typer.testing import CliRunner

    from app.cli import app

    for run_id in KNOWN:
        (home.runs / run_id).mkdir()

    def completed(words: str) -> list[str]:
        env = {"_MULTIVERSE_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": "2",
               "MULTIVERSE_HOME": str(home.root)}  # fmt: skip
        return CliRunner().invoke(app, [], prog_name="multiverse", env=env).output.split()

    assert completed("multiverse show run-20261122") == [KNOWN[2], KNOWN[1]]
    assert completed("multiverse confirm ") == ["latest", *reversed(KNOWN)]
    assert completed("multiverse status la") == ["latest"]
    assert completed("multiverse show run-1999") == []
