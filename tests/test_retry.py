"""`multiverse retry RUN` (SPEC §8): a FAILED run goes on from its failed step, nothing redone.

After a task failure, a plan failure (on a scripted model: no call paid twice) and a table
broken by hand; refused, with the reason, while the cause is still there.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest
from test_model_journey import (
    KEY_ENV,
    SECRET,
    RunScript,
    configure,
    serve_once,
    the_run,
    to_confirmation,
    wording,
)

from app.commands import answer_run, retry_run
from multiverse.atomic import atomic_write_text
from multiverse.home import Home
from multiverse.models import Status
from orchestrator.decide import StepKind
from orchestrator.perform import StepRunner

from fake_openai import FakeOpenAI, text
from forked import forked_once
from journey import FIXTURE_ASSETS, cli, copy_assets, once, only_run, run_tree
from stepping import builtin_collaborators, confirmed_run


def _until(runner: StepRunner, run_id: str, kind: StepKind, skip: int = 0) -> list[str]:
    """Perform steps until the next one is the `skip`+1-th of `kind`; returns what was done."""
    done: list[str] = []
    for _ in range(300):
        decided = runner.decide(run_id)
        assert decided is not None
        if decided[1].kind is kind:
            if skip == 0:
                return done
            skip -= 1
        done.append(decided[1].describe())
        runner.perform(*decided)
    raise AssertionError(f"never reached {kind}")


def _settle(runner: StepRunner, run_id: str) -> list[str]:
    """Advance until nothing is left to do; the steps performed, described."""
    done: list[str] = []
    for _ in range(300):
        step = runner.advance(run_id)
        if step is None or not step.is_work:
            return done
        done.append(step.describe())
    raise AssertionError("the run never settled")


def test_retry_after_a_task_failure_redoes_only_the_failed_task(home: Home) -> None:
    """The failed task runs again; every COMPLETED task is kept; the failure stays in history."""
    copy_assets(home, "market_report_2024.md", "competitor_review.txt")
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    before = _until(runner, run_id, StepKind.EXECUTE_TASK)  # the first master-loop task
    (home.assets / "competitor_review.txt").unlink()  # its reference vanishes: it fails
    failing = runner.advance(run_id)
    assert failing is not None and failing.kind is StepKind.EXECUTE_TASK
    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is Status.FAILED
    failed_task = run.current_task_id
    assert failed_task is not None

    shutil.copy(FIXTURE_ASSETS / "competitor_review.txt", home.assets)  # the cause is fixed
    atomic_write_text(home.run(run_id).user_response, "RETRY\n")
    after = _settle(runner, run_id)
    assert [step.split()[0] for step in after[:2]] == ["HANDLE_RETRY", "REOPEN"]

    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is Status.COMPLETED
    executed = Counter(step for step in before + after if step.startswith("EXECUTE"))
    assert executed[f"EXECUTE_TASK {failed_task}"] == 1  # again, after the failed attempt
    assert all(count == 1 for count in executed.values()), executed  # nothing done twice

    paths = home.run(run_id)
    history = json.loads((paths.signals / "history" / "failure-1.json").read_text("utf-8"))
    assert "competitor_review.txt" in history["error"]
    messages = paths.messages.read_text(encoding="utf-8")
    assert messages.index("· FAILURE") < messages.index("· RETRY") < messages.index("· COMPLETION")
    assert "competitor_review.txt" in messages
    assert not paths.user_response.exists()
    assert any(p.name.endswith("-retry.md") for p in paths.responses.iterdir())


def test_retry_is_refused_while_a_broken_table_stays_broken(home: Home) -> None:
    """A run table broken by hand: retry refused with file and line; after the fix it goes on."""
    copy_assets(home, "market_report_2024.md")
    assert cli(home, "submit", "Analyse the market report and write a memo").returncode == 0
    assert once(home).returncode == 0
    run_id = only_run(home)["run_id"]
    assert cli(home, "confirm", run_id).returncode == 0
    crew = builtin_collaborators(home)
    runner = StepRunner(crew)
    _until(runner, run_id, StepKind.EXECUTE_TASK)
    tasks = home.run(run_id).db / "tasks.md"
    good = tasks.read_text(encoding="utf-8")
    lines = good.splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if line.startswith("| P1-S01-T01"))
    lines[row] = lines[row].rstrip("\n") + " extra |\n"
    tasks.write_text("".join(lines), encoding="utf-8")
    assert once(home).returncode == 1
    assert only_run(home)["status"] == "FAILED"

    refused = cli(home, "retry", run_id)
    assert refused.returncode == 1
    assert "tasks.md:" in refused.stderr and "cells" in refused.stderr
    assert "Traceback" not in refused.stderr
    # The same word written by hand is refused by the daemon, with the reason, and set aside.
    atomic_write_text(home.run(run_id).user_response, "\ufeffRETRY  \n")
    refusal = once(home)
    assert refusal.returncode == 1 and "Traceback" not in refusal.stdout + refusal.stderr
    assert only_run(home)["status"] == "FAILED"
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    assert "cannot retry" in messages and "tasks.md:" in messages
    assert not home.run(run_id).user_response.exists()

    tasks.write_text(good, encoding="utf-8")  # the person fixes the file
    accepted = cli(home, "retry", run_id)
    assert accepted.returncode == 0, accepted.stderr
    assert once(home).returncode == 0
    assert only_run(home)["status"] == "COMPLETED"
    tree = run_tree(home, run_id)
    for level in ("phases", "stages", "tasks"):
        assert {row["status"] for row in tree[level]} == {"COMPLETED"}


def test_retry_of_a_run_that_did_not_fail_is_refused(home: Home) -> None:
    """Only a FAILED run can be retried; the message says what the run is."""
    copy_assets(home, "market_report_2024.md")
    assert cli(home, "submit", "Analyse the market report and write a memo").returncode == 0
    assert once(home).returncode == 0
    run_id = only_run(home)["run_id"]
    result = cli(home, "retry", run_id)
    assert result.returncode == 1
    assert "AWAITING_CONFIRMATION" in result.stderr and "only a FAILED run" in result.stderr


def test_retry_after_a_plan_failure_pays_no_call_twice(
    home: Home, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A phase plan still malformed after its repairs: the retry asks only for that plan again
    (the first analysis, done before it, is not asked twice)."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    copy_assets(home, "market_report_2024.md")
    configure(home, fake_openai)
    model_home = home
    run_id = to_confirmation(model_home, fake_openai)
    script = RunScript(run_id)
    raw = "RAW-ANSWER {stages: [oops"
    fake_openai.script(
        *script.execute(script.first_analysis, "# First analysis\n\nRevenue €18.5 bn.\n"),
        text(raw), text(raw), text(raw),
        wording("The run stopped while planning the analysis."),
    )  # fmt: skip
    answer_run(str(model_home.root), run_id, "CONFIRM")
    assert serve_once(model_home) == 1
    assert the_run(model_home).status is Status.FAILED
    paid = fake_openai.count

    rest = script.after_confirm()[2:]  # the first analysis is done: from P1's plan on
    fake_openai.script(*rest)
    retry_run(str(model_home.root), run_id)
    assert serve_once(model_home) == 0
    assert the_run(model_home).status is Status.COMPLETED
    assert fake_openai.count == paid + len(rest)  # nothing asked twice that was answered
    asked = [json.dumps(r["messages"]) for r in fake_openai.requests[paid:]]
    assert "stages:P1" in asked[0]


def test_a_retry_killed_at_every_write_completes_once(home: Home) -> None:
    """SIGKILL after each write of the retry's steps: restarted, it reopens and reports once."""
    copy_assets(home, "market_report_2024.md", "competitor_review.txt")
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    _until(runner, run_id, StepKind.EXECUTE_TASK)
    (home.assets / "competitor_review.txt").unlink()
    runner.advance(run_id)
    assert only_run(home)["status"] == "FAILED"
    shutil.copy(FIXTURE_ASSETS / "competitor_review.txt", home.assets)
    assert cli(home, "retry", run_id).returncode == 0
    kills = 0
    for point in (1, 1, 1, 1, 2, 2, 3, 3):  # the retry's steps are its first writes
        result = forked_once(home, env={"MULTIVERSE_KILL_AFTER_WRITES": str(point)})
        if result.returncode != -9:
            break
        kills += 1
    else:
        result = once(home)
    assert result.returncode == 0, result.stderr
    assert kills >= 3
    assert only_run(home)["status"] == "COMPLETED"
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    assert messages.count("· RETRY") == 1 and messages.count("· COMPLETION") == 1
    history = home.run(run_id).signals / "history"
    assert (history / "failure-1.json").is_file()
    assert not (home.run(run_id).signals / "failure.json").exists()
