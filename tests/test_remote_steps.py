"""Remote steps (issue 28), with real parts: a real `redis-server` on a loopback port, real
`multiverse worker` processes (Celery, prefork), the daemon in process or as a child process,
and for the slow steps a real agent command (tests/fake_agent.py) run by the worker.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fake_agent import instance
from workers import AGENT, redis_server, remote_mapping, workers

from multiverse.gateway.limits import model_key
from multiverse.home import Home
from multiverse.remote import Exchange, step_of, task_id_of
from multiverse.store import KNOWLEDGE_CATALOG, TableStore
from orchestrator.evidence import SignalBox

from fake_openai import FakeOpenAI, Reply, text
from journey import (
    cli,
    copy_assets,
    once,
    only_run,
    run_tree,
    running_daemon,
    runs,
    serving,
    wait_for,
)

REQUEST = (
    "Analyse these reports and write a 2-page market-entry memo with a chart of revenue by region."
)
pytestmark = pytest.mark.timeout(300)


def _confirmed(home: Home) -> str:
    """Submit the request, make its proposal (in process) and confirm it; the run's id."""
    copy_assets(home)
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    run_id = str(only_run(home)["run_id"])
    assert cli(home, "confirm", run_id).returncode == 0
    return run_id


def _attempts(home: Home, run_id: str) -> list[dict[str, Any]]:
    path = home.run(run_id).logs / "remote.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _first_key(home: Home, run_id: str, step: str) -> str:
    """The key of the step's first attempt, as the daemon recorded it when it sent it."""
    return next(item["key"] for item in _attempts(home, run_id) if item["step"] == step)


def _step(home: Home, run_id: str, step: str) -> str:
    """The key every attempt of the step shares (home, run, step)."""
    return step_of(_first_key(home, run_id, step))


def _texts(home: Home, run_id: str) -> dict[str, str]:
    """The run's text outputs, its id written RUN (the binary exports carry dates)."""
    folder = home.run(run_id).outputs
    return {
        path.relative_to(folder).as_posix(): path.read_text(encoding="utf-8").replace(run_id, "RUN")
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.suffix in (".md", ".html", ".csv", ".json", ".svg")
    }


def _rows(home: Home, run_id: str) -> dict[str, list[tuple[str, str]]]:
    tree = run_tree(home, run_id)
    shown = {name: [(str(row.get("task_id") or row.get("tool_task_id") or row.get("stage_id")
                         or row.get("phase_id")), str(row["status"])) for row in tree[name]]
             for name in ("phases", "stages", "tasks", "tool_tasks")}  # fmt: skip
    catalog = TableStore().table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename).rows()
    shown["catalog"] = sorted((row.file_path.replace(run_id, "RUN"), row.summary.replace(
        run_id, "RUN")) for row in catalog)  # fmt: skip
    return shown


def test_a_run_with_the_executor_remote_matches_a_local_one(
    home: Home, tmp_path: Path
) -> None:
    """The whole run on a worker: the same tables, catalog and text outputs as a local run, and
    every Executor step sent once and taken once."""
    local_run = _confirmed(home)
    assert once(home).returncode == 0
    local = (_rows(home, local_run), _texts(home, local_run))

    remote_home = Home(tmp_path / "remote-home")
    assert cli(remote_home, "init").returncode == 0
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        remote_home.mapping_file.write_text(remote_mapping(redis.url), encoding="utf-8")
        crew.start("w1", "--home", str(remote_home.root))
        run_id = _confirmed(remote_home)
        result = once(remote_home)
        assert result.returncode == 0, result.stderr
        assert only_run(remote_home)["status"] == "COMPLETED"
        attempts = _attempts(remote_home, run_id)
        exchange = Exchange(redis.url)
        for step in {item["step"] for item in attempts}:
            assert exchange.runs_of(_step(remote_home, run_id, step)) == 1, step
    events = [item["event"] for item in attempts]
    assert events.count("sent") == events.count("taken") > 5
    assert all(item["worker"] == "w1" for item in attempts if item["event"] == "taken")
    assert (_rows(remote_home, run_id), _texts(remote_home, run_id)) == local
    # The worker wrote nothing but through the daemon: no scratch path leaked into the home.
    assert "multiverse-worker-" not in "".join(_texts(remote_home, run_id).values())


def _slow_home(home: Home, redis_url: str, state: Path, seconds: float, **remote: float) -> None:
    state.mkdir(parents=True, exist_ok=True)
    (state / "seconds").write_text(str(seconds), encoding="utf-8")
    command = [sys.executable, str(AGENT), "slow-first", str(state)]
    home.mapping_file.write_text(remote_mapping(redis_url, command=command, **remote),
                                 encoding="utf-8")  # fmt: skip


def _slow_step(state: Path) -> str:
    """The task the fake agent was slow on (the first one after Phase 0)."""
    return next(task for task in _starts(state) if not task.startswith("T"))


def _starts(state: Path) -> list[str]:
    path = state / "starts.log"
    return path.read_text(encoding="utf-8").split()[0::2] if path.exists() else []


def test_a_worker_killed_mid_step_has_the_step_run_once_more_elsewhere(
    home: Home, tmp_path: Path
) -> None:
    """SIGKILL of the worker doing a step (its whole process group, as a machine lost): the step
    runs again once on the other worker, its result is taken once, the run completes."""
    state = tmp_path / "agent"
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        _slow_home(home, redis.url, state, seconds=600, lost_after_seconds=2)
        crew.start("w1", "--home", str(home.root))
        crew.start("w2", "--home", str(home.root))
        run_id = _confirmed(home)
        exchange = Exchange(redis.url)
        with serving(home):
            wait_for(lambda: (state / "slowed").exists(), "the slow step to start")
            step = _slow_step(state)
            holder = exchange.holder(task_id_of(_first_key(home, run_id, step)))
            assert holder in ("w1", "w2")
            crew.kill(holder)
            wait_for(lambda: only_run(home)["status"] == "COMPLETED", "the run to complete")
        assert exchange.runs_of(_step(home, run_id, step)) == 2
        attempts = [item for item in _attempts(home, run_id) if item["step"] == step]
        assert [item["event"] for item in attempts] == ["sent", "lost", "sent", "taken"]
        assert attempts[-1]["worker"] != holder
        assert _starts(state).count(step) == 2


def test_cancel_stops_the_remote_step_and_its_process(home: Home, tmp_path: Path) -> None:
    """`multiverse cancel` of a run whose step runs on a worker: the worker stops the step's
    command (SIGTERM, as a local step's), the run is CANCELLED, nothing is taken."""
    state = tmp_path / "agent"
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        _slow_home(home, redis.url, state, seconds=600)
        crew.start("w1", "--home", str(home.root))
        run_id = _confirmed(home)
        with serving(home):
            wait_for(lambda: (state / "slowed").exists(), "the slow step to start")
            step = _slow_step(state)
            assert cli(home, "cancel", run_id).returncode == 0
            wait_for(lambda: only_run(home)["status"] == "CANCELLED", "the run to be cancelled")
            wait_for(lambda: (state / f"terminated-{step}").exists(), "the command to stop")
        attempts = [item for item in _attempts(home, run_id) if item["step"] == step]
        assert [item["event"] for item in attempts] == ["sent", "interrupted"]
        assert Exchange(redis.url).runs_of(_step(home, run_id, step)) == 1


def test_a_broker_down_fails_the_step_clearly_and_retry_redoes_it(
    home: Home, tmp_path: Path
) -> None:
    """No broker: the step fails at once with what to do; with the broker and a worker up,
    `multiverse retry` completes the run."""
    from workers import Redis, free_port

    redis = Redis(free_port())
    home.mapping_file.write_text(remote_mapping(redis.url), encoding="utf-8")
    run_id = _confirmed(home)
    failed = once(home)
    assert (failed.returncode, only_run(home)["status"]) == (1, "FAILED")
    assert "cannot be reached" in failed.stdout, failed.stdout
    assert f"multiverse retry {run_id}" in failed.stdout
    with workers(tmp_path / "workers") as crew:
        redis.start(tmp_path / "redis")
        try:
            crew.start("w1", "--home", str(home.root))
            assert cli(home, "retry", run_id).returncode == 0
            assert once(home).returncode == 0
            assert only_run(home)["status"] == "COMPLETED"
        finally:
            redis.stop()


def test_no_worker_for_the_queue_fails_the_step_within_its_deadline(
    home: Home, tmp_path: Path
) -> None:
    """A queue no worker serves: the step fails after `pickup_timeout_seconds`, saying which
    queue and how to serve it; nothing hangs."""
    with redis_server(tmp_path / "redis") as redis:
        home.mapping_file.write_text(
            remote_mapping(redis.url, queue="nobody", pickup_timeout_seconds=1), encoding="utf-8"
        )
        run_id = _confirmed(home)
        failed = once(home)
    assert (failed.returncode, only_run(home)["status"]) == (1, "FAILED")
    attempts = _attempts(home, run_id)
    assert [item["event"] for item in attempts] == ["sent", "failed"]
    assert "no worker took the step from queue 'nobody'" in attempts[-1]["why"]
    assert "multiverse worker --queue nobody" in attempts[-1]["why"]
    assert f"multiverse retry {run_id}" in failed.stdout


def test_a_result_too_large_is_a_clear_failure(home: Home, tmp_path: Path) -> None:
    """Files past `max_result_bytes` are not sent back: the step fails saying the limit."""
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        home.mapping_file.write_text(remote_mapping(redis.url, max_result_bytes=10),
                                     encoding="utf-8")  # fmt: skip
        crew.start("w1", "--home", str(home.root))
        _confirmed(home)
        failed = once(home)
    assert (failed.returncode, only_run(home)["status"]) == (1, "FAILED")
    assert re.search(r"over remote\.max_result_bytes \(10\)", failed.stdout), failed.stdout


def test_a_daemon_killed_mid_step_takes_the_stored_result_at_restart(
    home: Home, tmp_path: Path
) -> None:
    """The daemon SIGKILLed while a worker does a step: at the next start the step's stored
    outcome is taken (the role is not run again), and the run completes."""
    state = tmp_path / "agent"
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        _slow_home(home, redis.url, state, seconds=2)
        crew.start("w1", "--home", str(home.root))
        run_id = _confirmed(home)
        with running_daemon(home, quiet=True) as daemon:
            wait_for(lambda: (state / "slowed").exists(), "the slow step to start")
            daemon.kill()
            daemon.wait(timeout=30)
        step = _slow_step(state)
        exchange = Exchange(redis.url)
        first = task_id_of(_first_key(home, run_id, step))
        wait_for(lambda: exchange.outcome(first) is not None, "the worker to finish the step")
        assert once(home).returncode == 0
        assert only_run(home)["status"] == "COMPLETED"
        assert exchange.runs_of(_step(home, run_id, step)) == 1
    attempts = [item for item in _attempts(home, run_id) if item["step"] == step]
    assert [item["event"] for item in attempts] == ["sent", "taken"]
    assert attempts[-1]["after_restart"] is True


MEMO = "# Memo\n\nThe market grows (source: `assets/market_report_2024.md`).\n"


def _answer(body: dict[str, Any]) -> Reply:
    """A model that follows the request's shape: JSON of its schema, else a short memo."""
    shape = body.get("response_format") or {}
    if shape.get("type") != "json_schema":
        return text(MEMO)
    schema = shape["json_schema"]["schema"]
    return text(json.dumps(instance(schema, schema.get("$defs", {}))))


def test_the_workers_model_calls_are_admitted_by_the_daemons_limits(
    home: Home, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """Two workers, two runs, an endpoint allowed one call in flight (`concurrency: 1`): one
    call reaches the server while the other waits at the daemon's desk, though each worker
    would let one through; released, both runs complete, and each run's usage.json counts the
    calls its remote steps made."""
    held = threading.Event()
    fake_openai.hold = held
    fake_openai.responder = _answer
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        mapping = (
            "tier_mapping:\n  MEDIUM:\n    model: openai/fake-model\n"
            f"    api_base: {fake_openai.base_url}\n    concurrency: 1\n"
            "    executor_mode: single_shot\n"
            f'    remote: {{broker: "{redis.url}", queue: steps}}\n'
            "daemon:\n  inbox_settle_ms: 0\n  max_parallel_runs: 2\n"
        )
        home.mapping_file.write_text(mapping, encoding="utf-8")
        crew.start("w1", "--home", str(home.root))
        crew.start("w2", "--home", str(home.root))
        copy_assets(home)
        for number in (1, 2):
            assert cli(home, "submit", f"{REQUEST} ({number})").returncode == 0
        assert once(home).returncode == 0
        run_ids = [str(row["run_id"]) for row in runs(home)]
        for run_id in run_ids:
            assert cli(home, "confirm", run_id).returncode == 0
        key = model_key("openai/fake-model", fake_openai.base_url)
        with serving(home) as served:
            desk = served.daemon.crew.executor.desk  # type: ignore[attr-defined]
            wait_for(lambda: fake_openai.count == 1 and desk.limits.waiting(key) == 1,
                     "one call at the server, one waiting at the desk")  # fmt: skip
            assert fake_openai.count == 1
            held.set()
            wait_for(lambda: all(row["status"] in ("COMPLETED", "FAILED") for row in runs(home)),
                     "both runs to end")  # fmt: skip
        assert [row["status"] for row in runs(home)] == ["COMPLETED", "COMPLETED"]
    for run_id in run_ids:
        usage = json.loads((home.run(run_id).root / "usage.json").read_text(encoding="utf-8"))
        assert usage["calls"] >= 1 and usage["by_role"]["executor"]["calls"] == usage["calls"]


def test_pause_stops_the_remote_step_and_resume_redoes_it(home: Home, tmp_path: Path) -> None:
    """`multiverse pause` of a run whose step runs on a worker: the step's command is stopped
    and the run holds; `resume` sends the step again (a new attempt) and the run completes."""
    state = tmp_path / "agent"
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        _slow_home(home, redis.url, state, seconds=600)
        crew.start("w1", "--home", str(home.root))
        run_id = _confirmed(home)
        with serving(home):
            wait_for(lambda: (state / "slowed").exists(), "the slow step to start")
            step = _slow_step(state)
            assert cli(home, "pause", run_id).returncode == 0
            wait_for(lambda: (state / f"terminated-{step}").exists(), "the command to stop")
            box = SignalBox(home.run(run_id).signals)
            wait_for(lambda: "hold-user-1" in box.names(), "the run to hold")
            assert cli(home, "resume", run_id).returncode == 0
            wait_for(lambda: only_run(home)["status"] == "COMPLETED", "the run to complete")
        attempts = [item for item in _attempts(home, run_id) if item["step"] == step]
        assert [item["event"] for item in attempts] == ["sent", "interrupted", "sent", "taken"]
        assert Exchange(redis.url).runs_of(_step(home, run_id, step)) == 2


@pytest.mark.parametrize("visibility", [None, "1"], ids=["worker-settings", "misconfigured"])
def test_a_step_longer_than_a_visibility_timeout_is_not_run_twice(
    home: Home, tmp_path: Path, visibility: str | None
) -> None:
    """A step outliving Redis's visibility timeout: with `multiverse worker`'s settings the
    broker never hands it to a second worker; with a timeout shorter than the step (set by
    hand), the second worker's start hands it over, and the delivery is dropped by its key."""
    state = tmp_path / "agent"
    options = ["--visibility-timeout", visibility] if visibility else []
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        _slow_home(home, redis.url, state, seconds=6)
        crew.start("w1", "--home", str(home.root), *options)
        run_id = _confirmed(home)
        with serving(home):
            wait_for(lambda: (state / "slowed").exists(), "the slow step to start")
            # The broker's record of the delivery (kombu's unacked index) ages past 1 s, the
            # misconfigured timeout; the second worker's start then sweeps what is past it.
            client = Exchange(redis.url).client
            wait_for(lambda: any(time.time() - score > 1.5 for _, score in
                                 client.zrange("unacked_index", 0, -1, withscores=True)),
                     "the delivery to be older than the short visibility timeout")  # fmt: skip
            crew.start("w2", "--home", str(home.root), *options)
            wait_for(lambda: only_run(home)["status"] == "COMPLETED", "the run to complete")
        step = _slow_step(state)
        assert Exchange(redis.url).runs_of(_step(home, run_id, step)) == 1
        assert _starts(state).count(step) == 1
        dropped = "worker_duplicate_dropped" in crew.log("w2")
        assert dropped is (visibility is not None), crew.log("w2")


def test_doctor_checks_the_broker_and_lists_the_live_workers(home: Home, tmp_path: Path) -> None:
    """`doctor` on the daemon's side: a broker down, a queue no worker serves, and one served,
    each said with what to do."""
    from workers import Redis, free_port

    down = Redis(free_port())
    home.mapping_file.write_text(remote_mapping(down.url), encoding="utf-8")
    said = cli(home, "doctor")
    assert said.returncode != 0 and "cannot be reached" in said.stdout, said.stdout
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        home.mapping_file.write_text(remote_mapping(redis.url), encoding="utf-8")
        said = cli(home, "doctor")
        assert "✗ queue 'steps'" in said.stdout and "multiverse worker --queue steps" in said.stdout
        crew.start("w1", "--home", str(home.root))
        said = cli(home, "doctor", "--json")
        report = json.loads(said.stdout)
        assert report["workers"][0]["workers"] == ["w1"] and report["workers"][0]["reachable"]
        assert "served by w1" in cli(home, "doctor").stdout


def test_a_question_is_answered_on_a_worker_by_the_tiers_role(
    home: Home, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """A SIMPLE_TASK with the Executor's tier remote: a worker answers it (here from the table,
    computed and cited, as the model-backed Executor does), the reply lands in inbox/done/."""
    corpus = Path(__file__).resolve().parent / "corpus" / "tables"
    for suffix in (".csv", ".md"):
        shutil.copy(corpus / f"grunfeld{suffix}", home.assets / f"grunfeld{suffix}")
    question = "Quick one: what was Atlantic Refining's gross investment in 1950?"
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        home.mapping_file.write_text(
            "tier_mapping:\n  MEDIUM:\n    model: openai/fake-model\n"
            f"    api_base: {fake_openai.base_url}\n"
            f'    remote: {{broker: "{redis.url}", queue: steps}}\n'
            "daemon:\n  inbox_settle_ms: 0\n", encoding="utf-8")  # fmt: skip
        crew.start("w1", "--home", str(home.root))
        (home.inbox / "ask.md").write_text(question, encoding="utf-8")
        assert once(home).returncode == 0
        assert "worker_step_done" in crew.log("w1") and "simple/" in crew.log("w1")
    reply = (home.inbox_done / "ask.reply.md").read_text(encoding="utf-8")
    assert "assets/grunfeld.csv row" in reply and not any(home.runs.iterdir())


def test_the_desk_takes_back_the_slots_of_a_lost_attempt(tmp_path: Path) -> None:
    """A worker's slot at the daemon's desk is held until released; an attempt given up (its
    worker lost) has its slots taken back, so the endpoint is not blocked until the lease."""
    from multiverse.gateway import CallLimits, RateLimits
    from multiverse.remote import DeskLimits, RateDesk

    key = "openai/m@http://model"
    with redis_server(tmp_path / "redis") as redis:
        limits = CallLimits({key: 1})
        desk = RateDesk(Exchange(redis.url), limits, RateLimits())
        with desk.open() as name:
            lost = DeskLimits(Exchange(redis.url), name, 30, "attempt-1", lease=600)
            held = lost.slot(key)
            held.__enter__()  # the lost worker's call: never released
            other = DeskLimits(Exchange(redis.url), name, 30, "attempt-2", lease=600).slot(key)
            waiting = threading.Thread(target=other.__enter__)
            waiting.start()
            wait_for(lambda: limits.waiting(key) == 1, "the second call to wait for the slot")
            assert desk.release_all("attempt-1") == 1
            waiting.join(timeout=30)
            assert not waiting.is_alive() and limits.waiting(key) == 0
            for call in (other, held):  # both calls end (the lost one's release is a no-op)
                call.__exit__(None, None, None)


def test_homes_sharing_a_broker_never_take_each_others_steps(home: Home, tmp_path: Path) -> None:
    """A copy of a home (the same run ids, the same files) served by the same broker and worker:
    its steps are its own (the key names the home), none is dropped as a duplicate of the
    other's, and each run's outputs are its own."""
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        home.mapping_file.write_text(remote_mapping(redis.url), encoding="utf-8")
        crew.start("w1", "--home", str(home.root))
        copy_assets(home)
        assert cli(home, "submit", REQUEST).returncode == 0
        assert once(home).returncode == 0
        run_id = str(only_run(home)["run_id"])
        twin = Home(tmp_path / "twin")
        shutil.copytree(home.root, twin.root, symlinks=True)
        (twin.assets / "twin_notes.md").write_text("# Twin\n\nOnly the twin has this.\n",
                                                  encoding="utf-8")  # fmt: skip
        for each in (home, twin):
            assert cli(each, "confirm", run_id).returncode == 0
            assert once(each).returncode == 0
            assert only_run(each)["status"] == "COMPLETED"
        assert "worker_duplicate_dropped" not in crew.log("w1")
    mine, theirs = _attempts(home, run_id), _attempts(twin, run_id)
    assert {item["key"] for item in mine}.isdisjoint(item["key"] for item in theirs)
    assert all(item["event"] != "lost" for item in [*mine, *theirs])


def test_a_step_queued_behind_a_busy_worker_waits_its_turn(home: Home, tmp_path: Path) -> None:
    """Two runs, one worker, `pickup_timeout_seconds: 1`: the step queued behind a 4-second
    step is not failed as "no worker" (a live worker serves its queue); both runs complete."""
    state = tmp_path / "agent"
    with redis_server(tmp_path / "redis") as redis, workers(tmp_path / "workers") as crew:
        _slow_home(home, redis.url, state, seconds=4, pickup_timeout_seconds=1)
        text = home.mapping_file.read_text(encoding="utf-8")
        home.mapping_file.write_text(text + "  max_parallel_runs: 2\n", encoding="utf-8")
        crew.start("w1", "--home", str(home.root))
        copy_assets(home)
        for number in (1, 2):
            assert cli(home, "submit", f"{REQUEST} ({number})").returncode == 0
        assert once(home).returncode == 0
        run_ids = [str(row["run_id"]) for row in runs(home)]
        for run_id in run_ids:
            assert cli(home, "confirm", run_id).returncode == 0
        assert once(home).returncode == 0
        assert [row["status"] for row in runs(home)] == ["COMPLETED", "COMPLETED"]
    events = [item["event"] for run_id in run_ids for item in _attempts(home, run_id)]
    assert "failed" not in events and events.count("sent") == events.count("taken")
    said = (home.state / "logs" / "daemon.jsonl").read_text(encoding="utf-8")
    assert '"remote_step_queued"' in said  # it did wait past its pickup time, behind the other
