"""Answers never overwrite each other (SPEC §13): each answer a command gives is its own file,
created exclusively and handled in order, so `cancel` racing `confirm` can never be lost.

Real processes: a serving daemon (`multiverse start`) and, for each of 20 runs awaiting
confirmation, a `confirm` and a `cancel` started together (in either order; forked children,
real processes that skip a fresh interpreter's second of imports). Every run ends
CANCELLED, or its cancel was refused with a reason; none completes with a cancel that left no
trace.
"""

from __future__ import annotations

import os
from contextlib import ExitStack

from multiverse.home import Home
from multiverse.models import Status
from multiverse.store import PROCESS_RUNS, TableStore
from orchestrator.evidence import give_answer, take_next_answer, waiting_answers

from forked import Forked, forked
from journey import cli, once, running_daemon, wait_for

TRIALS = 20


def _statuses(home: Home) -> dict[str, Status]:
    rows = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
    return {row.run_id: row.status for row in rows}


def _ended(child: Forked) -> tuple[str, str]:
    """Wait for the command to end; what it printed on stdout and on stderr."""
    child.wait(timeout=120)
    return child.stdout(), child.stderr()


def test_cancel_racing_confirm_is_never_lost(home: Home) -> None:
    (home.assets / "note.md").write_text("# Note\n\nRevenue grew 5 % in 2024.\n", "utf-8")
    for number in range(TRIALS):
        asked = f"Write a short memo on the note, number {number}."
        assert cli(home, "submit", asked).returncode == 0
    assert once(home).returncode == 0
    waiting = sorted(run for run, status in _statuses(home).items()
                     if status is Status.AWAITING_CONFIRMATION)  # fmt: skip
    assert len(waiting) == TRIALS
    refused: dict[str, str] = {}
    with running_daemon(home, quiet=True):
        for number, run_id in enumerate(waiting):
            order = ("confirm", "cancel") if number % 2 else ("cancel", "confirm")
            with ExitStack() as children:  # both started before either is waited for
                started = {name: children.enter_context(forked(home, name, run_id))
                           for name in order}  # fmt: skip
                ended = {name: _ended(child) for name, child in started.items()}
            if started["confirm"].returncode != 0:  # only once the cancel ended the run
                assert "CANCELLED" in ended["confirm"][1], ended["confirm"]
            if started["cancel"].returncode != 0:
                refused[run_id] = ended["cancel"][1]
        wait_for(lambda: all(_statuses(home)[run] in (Status.CANCELLED, Status.COMPLETED,
                                                      Status.FAILED) for run in waiting),
                 "every run to end")  # fmt: skip
    statuses = _statuses(home)
    for run_id in waiting:
        if run_id in refused:  # refused, saying why: never silently dropped
            assert refused[run_id].strip(), run_id
        else:
            assert statuses[run_id] is Status.CANCELLED, (run_id, statuses[run_id])
    assert len(refused) < TRIALS  # the race was run, not refused every time


def test_waiting_answers_are_taken_one_at_a_time_oldest_first(home: Home) -> None:
    """Three answers given at once wait in order; each is moved in only once the one before
    was handled (moved aside), and one a person wrote by hand is never replaced."""
    paths = home.run("run-20990101-000000-001")
    paths.root.mkdir(parents=True)
    given = [give_answer(paths, f"{word}\n") for word in ("PAUSE", "RESUME", "CANCEL")]
    assert waiting_answers(paths) == given
    paths.user_response.write_text("CONFIRM\n", encoding="utf-8")  # by hand, before them
    take_next_answer(paths)
    assert paths.user_response.read_text(encoding="utf-8") == "CONFIRM\n"
    taken = []
    for _ in given:
        paths.user_response.unlink()  # handled
        take_next_answer(paths)
        taken.append(paths.user_response.read_text(encoding="utf-8").strip())
        take_next_answer(paths)  # a second look before it is handled changes nothing
    assert taken == ["PAUSE", "RESUME", "CANCEL"] and waiting_answers(paths) == []


def test_a_move_cut_short_between_link_and_unlink_is_finished_not_repeated(home: Home) -> None:
    """The state a crash between the two names leaves: the same file at both; the next look
    drops the queue's name, and the answer is read once."""
    paths = home.run("run-20990101-000000-002")
    paths.root.mkdir(parents=True)
    queued = give_answer(paths, "CANCEL\n")
    os.link(queued, paths.user_response)  # the crash: linked, not yet unlinked
    take_next_answer(paths)
    assert waiting_answers(paths) == [] and paths.user_response.read_text("utf-8") == "CANCEL\n"
