"""Process adapters (SPEC §11, seed 001 §17): a tier served by a real child process.

A fake coding-agent CLI (tests/fake_agent.py, a real script) serves the tier. Each way a child
can end gives the exact §17.2.2 outcome; a whole run completes on it; a daemon killed with
SIGKILL while a child that ignores SIGTERM runs leaves no process behind after the next start,
and the task is done again exactly once.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from executor.process import ProcessExecutor
from multiverse.config import ProcessSpec, TierConfig, resolve_tier
from multiverse.errors import StepInterrupted
from multiverse.home import Home
from multiverse.processes import Place, ProcessSession, PromptInProgress, read_events
from multiverse.processes.keeper import (
    CGROUP_PREFIX,
    cgroup_home,
    end_leftover_cgroups,
    pid_alive,
)

from forked import forked
from journey import cli, copy_assets, once, only_run, run_tree, serving, wait_for
from mappings import quick_intake

AGENT = Path(__file__).resolve().parent / "fake_agent.py"
REQUEST = "Analyse the market report and write a memo with a chart of the revenue figures."


def spec(mode: str, *extra: str, timeout: float = 60, silence: float | None = None) -> ProcessSpec:
    """The fake agent in `mode` as a tier's command."""
    tier = TierConfig(
        adapter_type="process",
        command=[sys.executable, str(AGENT), mode, *extra],
        timeout_seconds=timeout,
        no_output_timeout_seconds=silence,
    )
    made = tier.process_spec()
    assert made is not None
    return made


def place(tmp_path: Path, task_id: str = "P1-S01-T01") -> Place:
    """A session's place under a scratch run folder."""
    run = tmp_path / "runs" / "run-x"
    (run / "workspace").mkdir(parents=True, exist_ok=True)
    return Place(home=tmp_path, cwd=run / "workspace", events=run / "events.jsonl",
                 logs=run / "logs", records=run / "children", run_id="run-x", task_id=task_id,
                 output_path=run / "workspace" / "out.md")  # fmt: skip


def events(where: Place) -> list[str]:
    """The event names of the session file, in order."""
    return [event["event"] for event in read_events(where.events)]


def test_exit_0_is_end_turn_with_the_environment_of_17_2_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child gets the RAWP and MULTIVERSE variables and provider keys, nothing else."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-passes")
    monkeypatch.setenv("DAEMON_ONLY_SECRET", "must-not-pass")
    where = place(tmp_path)
    session = ProcessSession(spec("write"), where)
    turn = session.prompt("do the task")
    assert turn.error_code is None and turn.outcome.returncode == 0
    written = where.output_path.read_text("utf-8") if where.output_path else ""
    env = json.loads(written.split("```json\n", 1)[1].split("\n```", 1)[0])
    assert uuid.UUID(env["RAWP_SESSION_ID"]).version == 4
    assert env["RAWP_SESSION_ID"] == session.session_id
    assert env["RAWP_WORKSPACE_PATH"] == str(where.cwd.resolve()) == env["CWD"]
    assert env["RAWP_DPS_VERSION"] == "rawp-dps-1.0"
    assert env["MULTIVERSE_RUN_ID"] == "run-x" and env["MULTIVERSE_TASK_ID"] == "P1-S01-T01"
    assert env["MULTIVERSE_OUTPUT_PATH"] == str(where.output_path.resolve())  # type: ignore[union-attr]
    assert env["MULTIVERSE_HOME"] == str(tmp_path.resolve())
    assert "OPENAI_API_KEY" in env["KEYS_PASSED"] and "DAEMON_ONLY_SECRET" not in env
    assert events(where) == ["session.turn.start", "session.turn.end"]
    assert read_events(where.events)[-1]["stop_reason"] == "end_turn"
    assert (where.logs / "P1-S01-T01.log").read_text("utf-8").startswith("wrote ")
    assert list(where.records.glob("*.json")) == []  # the record goes with the child


def test_a_child_started_after_a_daemon_stopped_in_this_process_runs(
    home: Home, tmp_path: Path
) -> None:
    """A daemon that served and stopped in this process leaves it able to start children: a
    session prompted afterwards runs to its end, not STOPPED by a shutdown that is over."""
    with serving(home):
        pass
    turn = ProcessSession(spec("write"), place(tmp_path)).prompt("do the task")
    assert turn.error_code is None and turn.outcome.returncode == 0


@pytest.mark.parametrize(
    ("mode", "code", "said"),
    [
        ("exit1", "PROCESS_EXIT", "exited with code 1; the end of its stderr: the fake agent"),
        ("signal", "SIGNAL_EXIT", "was ended by SIGKILL"),
    ],
)
def test_a_failing_child_is_a_fatal_agent_error(
    tmp_path: Path, mode: str, code: str, said: str
) -> None:
    """Exit 1-127 is PROCESS_EXIT, a signal SIGNAL_EXIT; agent.error then turn.end error."""
    where = place(tmp_path)
    turn = ProcessSession(spec(mode), where).prompt("do the task")
    assert turn.error_code == code and said in turn.message
    assert events(where) == ["session.turn.start", "agent.error", "session.turn.end"]
    error, end = read_events(where.events)[1:]
    assert error["severity"] == "fatal" and error["error_code"] == code
    assert end["stop_reason"] == "error"


def test_a_hang_past_the_timeout_is_stopped(tmp_path: Path) -> None:
    """Past timeout_seconds: SIGTERM to the group, the child gone, TIMEOUT."""
    turn = ProcessSession(spec("hang", timeout=1), place(tmp_path)).prompt("do it")
    assert turn.error_code == "TIMEOUT" and "past its 1 s timeout" in turn.message
    assert turn.outcome.signal_number == signal.SIGTERM


def test_a_silent_child_is_ended_by_the_watchdog(tmp_path: Path) -> None:
    """No output for no_output_timeout_seconds: NO_OUTPUT, long before the timeout."""
    turn = ProcessSession(spec("silent", timeout=600, silence=1), place(tmp_path)).prompt("x")
    assert turn.error_code == "NO_OUTPUT" and "printed nothing for 1 s" in turn.message


def test_a_child_ignoring_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    """SIGTERM ignored: SIGKILL after the 5 s grace (§17.2.3), never a hang."""
    turn = ProcessSession(spec("stubborn", timeout=1), place(tmp_path)).prompt("x")
    assert turn.error_code == "TIMEOUT" and turn.outcome.signal_number == signal.SIGKILL
    assert turn.outcome.seconds >= 5  # the grace was given


def test_a_second_prompt_in_flight_is_refused(tmp_path: Path) -> None:
    """One prompt per session: a second while the first runs is PROMPT_IN_PROGRESS."""
    where = place(tmp_path)
    session = ProcessSession(spec("hang", timeout=30), where)
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(session.prompt("first")))
    first.start()
    wait_for(lambda: "session.turn.start" in events(where), "the first turn to start")
    with pytest.raises(PromptInProgress):
        session.prompt("second")
    error = [e for e in read_events(where.events) if e["event"] == "session.error"]
    assert error and error[0]["error_code"] == "PROMPT_IN_PROGRESS" and error[0]["fatal"] is False
    from multiverse.processes import allow_children, stop_all_children

    wait_for(lambda: stop_all_children() > 0, "the child to be registered")
    first.join(timeout=30)
    allow_children()
    assert results[0].error_code == "STOPPED" and results[0].interrupted


def test_the_daemon_stopping_interrupts_rather_than_fails(tmp_path: Path) -> None:
    """A child stopped by the daemon's shutdown: StepInterrupted (redone), never FAILED."""
    home = Home(tmp_path / "home")
    home.run("run-20261123-000000-001").workspace.mkdir(parents=True)
    from multiverse.processes import allow_children, stop_all_children

    executor = ProcessExecutor(spec("hang", timeout=60), home.root)
    assignment = _assignment(home.root)
    raised: list[BaseException] = []

    def work() -> None:
        try:
            executor.execute_task(assignment)
        except StepInterrupted as error:
            raised.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    wait_for(lambda: stop_all_children() > 0, "the child to start")
    worker.join(timeout=30)
    allow_children()
    assert raised and "daemon is stopping" in str(raised[0])


def _assignment(root: Path) -> Any:
    from multiverse.models import MajorStage, Phase, Task
    from multiverse.roles import TaskAssignment

    run = "run-20261123-000000-001"
    task = Task(task_id="P1-S01-T01", run_id=run, stage_id="P1-S01", task_name="Memo",
                task_purpose="Write it.", output_path=f"runs/{run}/workspace/ANALYZING/memo.md",
                execution_order=1)  # fmt: skip
    return TaskAssignment(
        home=str(root), run_id=run, request="Write a memo.",
        phase=Phase(phase_id="P1", run_id=run, phase_name="ANALYZING"),
        stage=MajorStage(stage_id="P1-S01", run_id=run, phase_id="P1", stage_name="Memo",
                         execution_order=1),
        task=task,
    )  # fmt: skip


def test_exit_0_without_the_output_file_fails_the_task(tmp_path: Path) -> None:
    """Exit 0 but no file at MULTIVERSE_OUTPUT_PATH: FAILED, saying so and what it printed."""
    home = Home(tmp_path / "home")
    home.run("run-20261123-000000-001").workspace.mkdir(parents=True)
    signal_ = ProcessExecutor(spec("no-file"), home.root).execute_task(_assignment(home.root))
    assert signal_.status == "FAILED"
    assert "exited 0 without the output file" in (signal_.error or "")
    assert "wrote nothing" in (signal_.error or "")


def test_mapping_forms_and_presets() -> None:
    """command, preset (with args) and `model: process:…` all make a process tier."""
    claude = TierConfig(preset="claude-code", args=["--model", "sonnet"]).process_spec()
    assert claude is not None and claude.argv[:2] == ["claude", "-p"]
    assert "--permission-mode" in claude.argv and claude.argv[-2:] == ["--model", "sonnet"]
    assert claude.prompt_on_stdin()
    line = claude.command_line("PROMPT", "sid-1")
    assert line[line.index("--session-id") + 1] == "sid-1"
    codex = TierConfig(preset="codex").process_spec()
    assert codex is not None and codex.argv[:2] == ["codex", "exec"] and codex.argv[-1] == "-"
    gemini = TierConfig(preset="gemini-cli").process_spec()
    assert gemini is not None and "--approval-mode" in gemini.argv
    script = TierConfig.model_validate("process:/opt/agent.sh").process_spec()
    assert script is not None and script.argv == ["/opt/agent.sh"]
    argument = TierConfig(command=["agent", "--task", "{prompt}"]).process_spec()
    assert argument is not None and not argument.prompt_on_stdin()
    assert argument.command_line("do it", "s") == ["agent", "--task", "do it"]
    with pytest.raises(ValueError, match="needs a `command`"):
        TierConfig(adapter_type="process")
    with pytest.raises(ValueError, match="for adapter_type: process"):
        TierConfig(adapter_type="sdk", command=["x"])


def test_doctor_reports_the_adapter_and_a_missing_command(tmp_path: Path) -> None:
    """The effective tier names the command, and says when it is not on PATH."""
    found = resolve_tier(TierConfig(command=[sys.executable, "-V"]), {})
    assert found.adapter_type == "process" and found.mode == "model"
    assert "not found" not in found.reason
    missing = resolve_tier(TierConfig(command=["no-such-agent-cli"]), {})
    assert "not found on PATH" in missing.reason


def _confirmed_run(home: Home) -> str:
    """REQUEST submitted, its proposal made (`start --once`) and confirmed; the run's id."""
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    run_id: str = only_run(home)["run_id"]
    assert cli(home, "confirm", run_id).returncode == 0
    return run_id


def configure(home: Home, mode: str, state: Path, tiers: tuple[str, ...] = ("MEDIUM",)) -> None:
    """runtime-mapping.yaml: the given tiers served by the fake agent in `mode` (the Executor's
    MEDIUM tier, when listed with `answer`, writes its files)."""

    def command(tier: str) -> list[str]:
        own = "write" if mode == "answer" and tier == "MEDIUM" else mode
        return [sys.executable, str(AGENT), own, str(state)]

    mapping = {
        "tier_mapping": {
            tier: {"adapter_type": "process", "command": command(tier), "timeout_seconds": 120}
            for tier in tiers
        }
    }
    mapping_text = yaml.safe_dump(quick_intake(mapping))
    (home.root / "runtime-mapping.yaml").write_text(mapping_text, encoding="utf-8")


def test_a_whole_run_completes_with_the_executor_on_a_process(home: Home, tmp_path: Path) -> None:
    """Every core task done by the child, one log per task, DPS events, COMPLETED."""
    copy_assets(home, "market_report_2024.md", "quarterly_revenue.csv")
    configure(home, "write", tmp_path)
    doctor = cli(home, "doctor")
    assert "process" in doctor.stdout, doctor.stdout
    run_id = _confirmed_run(home)
    result = once(home)
    assert only_run(home)["status"] == "COMPLETED", result.stdout + result.stderr
    tasks = [t for s in run_tree(home, run_id)["stages"] for t in s.get("tasks", [])]
    run = home.run(run_id)
    names = [event["event"] for event in read_events(run.root / "events.jsonl")]
    assert names.count("session.turn.start") == names.count("session.turn.end") >= 1
    logged = sorted(path.stem for path in run.logs.glob("*.log"))
    done_by_agent = [path.name.removeprefix("writes-") for path in tmp_path.glob("writes-*")]
    assert logged and sorted(done_by_agent) == logged
    assert tasks is not None


def test_a_whole_team_on_a_cli_without_any_key(home: Home, tmp_path: Path) -> None:
    """Every tier on a CLI: the Planner's and Communicator's stdout pass the JSON guard, the
    Executor's child writes the files; the run completes with no API key anywhere."""
    copy_assets(home, "market_report_2024.md")
    configure(home, "answer", tmp_path, tiers=("HIGH", "MEDIUM", "LOW"))
    env = {name: "" for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")}
    assert cli(home, "submit", REQUEST, env=env).returncode == 0
    once(home, env=env)
    run = only_run(home)
    assert run["status"] == "AWAITING_CONFIRMATION", run
    assert cli(home, "confirm", run["run_id"], env=env).returncode == 0
    result = once(home, env=env)
    assert only_run(home)["status"] == "COMPLETED", result.stdout + result.stderr
    events_ = read_events(home.run(run["run_id"]).root / "events.jsonl")
    roles = {event.get("role") for event in events_ if event["event"] == "session.turn.start"}
    assert {"planner", "executor", "communicator"} <= roles


def _processes() -> Iterator[tuple[int, bytes, list[bytes]]]:
    """Each live process: its pid, command line and the /proc stat fields after its name."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                line = handle.read()
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()  # state, ppid, …
        except OSError:
            continue
        yield int(entry.name), line, fields


def _marked(marker: str) -> list[int]:
    """Pids of live processes whose command line holds `marker`."""
    return [pid for pid, line, fields in _processes()
            if marker.encode() in line and fields[0] != b"Z"]  # fmt: skip


def test_a_killed_daemon_leaves_no_child_and_the_task_is_done_once_more(
    home: Home, tmp_path: Path
) -> None:
    """SIGKILL the daemon while a child ignoring SIGTERM runs: the child dies with it; the next
    start does the task again, exactly once."""
    state = tmp_path / f"agent-state-{uuid.uuid4().hex[:8]}"  # the marker the child carries
    state.mkdir()
    copy_assets(home, "market_report_2024.md")
    configure(home, "stubborn-once", state)
    run_id = _confirmed_run(home)
    with forked(home, "start") as daemon:
        try:
            wait_for(lambda: bool(_marked(state.name)), "the stubborn child to start")
            wait_for(lambda: (state / "hung").exists(), "the child to take its first task")
        finally:
            daemon.send_signal(signal.SIGKILL)
            daemon.wait(timeout=30)
    # The child dies with the daemon (its keeper is told, and stops it: SIGTERM is ignored,
    # so SIGKILL after the grace), not at the next start.
    wait_for(lambda: _marked(state.name) == [], "the child to die with the daemon", seconds=30)
    records = list(home.run(run_id).root.glob("children/*.json"))
    assert len(records) == 1
    hung_task = json.loads(records[0].read_text("utf-8"))["task_id"]
    result = once(home)
    assert _marked(state.name) == [], "the next start must stop the old child"
    assert only_run(home)["status"] == "COMPLETED", result.stdout + result.stderr
    assert not records[0].exists()  # removed once its child was stopped
    counts = {path.name: path.read_text().count("1") for path in state.glob("writes-*")}
    assert counts[f"writes-{hung_task}"] == 1, counts  # the task the child hung on: once more
    assert all(count == 1 for count in counts.values()), counts


# -- nothing a step started outlives it -------------------------------------------------------


def _growing(log: Path, seconds: float = 0.5) -> bool:
    """Whether a file still grows over `seconds`."""
    import time

    before = log.stat().st_size if log.exists() else 0
    time.sleep(seconds)  # watching a file for writes: no condition to wait on but time
    return (log.stat().st_size if log.exists() else 0) != before


def test_a_grandchild_that_calls_setsid_and_ignores_sigterm_ends_with_the_step(
    tmp_path: Path,
) -> None:
    """An agent that leaves a helper behind (setsid, SIGTERM ignored, writing every 20 ms):
    when its turn ends, the helper is gone and writes nothing more."""
    state = tmp_path / f"daemonize-{uuid.uuid4().hex[:8]}"
    state.mkdir()
    (state / "stubborn").touch()
    turn = ProcessSession(spec("daemonize", str(state)), place(tmp_path)).prompt("x")
    assert turn.error_code is None, turn.message
    assert (state / "grandchild.log").exists()  # it did run, and write
    assert _marked(state.name) == []
    assert not _growing(state / "grandchild.log")


def test_a_grandchild_dies_with_a_killed_daemon(tmp_path: Path) -> None:
    """A "daemon" (a real process running the child) SIGKILLed while its child's helper runs:
    the helper is stopped at once, not at the next start."""
    import subprocess

    state = tmp_path / f"orphan-{uuid.uuid4().hex[:8]}"
    state.mkdir()
    (state / "stubborn").touch()
    script = (
        "import sys; from pathlib import Path\n"
        "from multiverse.processes import Place, ProcessSession\n"
        "from multiverse.config import TierConfig\n"
        "tier = TierConfig(adapter_type='process', command=[sys.executable, sys.argv[1], "
        "'hang-after-daemonize', sys.argv[2]], timeout_seconds=600)\n"
        "root = Path(sys.argv[3]); (root / 'w').mkdir(parents=True, exist_ok=True)\n"
        "where = Place(home=root, cwd=root / 'w', events=root / 'e.jsonl', logs=root / 'l',"
        " records=root / 'c', run_id='run-x', task_id='T1', output_path=root / 'w' / 'o.md')\n"
        "ProcessSession(tier.process_spec(), where).prompt('x')\n"
    )
    daemon = subprocess.Popen([sys.executable, "-c", script, str(AGENT), str(state),
                               str(tmp_path / "daemon")])  # fmt: skip
    try:
        wait_for(lambda: _growing(state / "grandchild.log", 0.1), "the helper to write")
    finally:
        daemon.kill()
        daemon.wait(timeout=30)
    wait_for(lambda: _marked(state.name) == [], "the helper to die with the daemon", seconds=30)
    assert not _growing(state / "grandchild.log")


def test_a_whole_run_leaves_nothing_writing_after_it_completed(home: Home, tmp_path: Path) -> None:
    """Every task of a run done by an agent that leaves a helper behind each time (one that
    obeys SIGTERM: the stubborn one is the tests' above): the run COMPLETED, and no helper is
    left and nothing writes afterwards."""
    state = tmp_path / f"run-helpers-{uuid.uuid4().hex[:8]}"
    state.mkdir()
    copy_assets(home, "market_report_2024.md")
    configure(home, "daemonize", state)
    _confirmed_run(home)
    result = once(home)
    assert only_run(home)["status"] == "COMPLETED", result.stdout + result.stderr
    assert (state / "grandchild.log").exists()
    assert _marked(state.name) == []
    assert not _growing(state / "grandchild.log")


def _keeper_of_this_process() -> int | None:
    """The pid of a keeper this (test) process started, if one runs."""
    return next((pid for pid, line, fields in _processes()
                 if int(fields[1]) == os.getpid() and b"keeper.py" in line), None)  # fmt: skip


def test_a_helper_out_of_reach_of_a_killed_keeper_is_ended_by_its_cgroup(tmp_path: Path) -> None:
    """The agent's helper calls setsid, ignores SIGTERM and has a cleared environment, and its
    keeper is SIGKILLed: neither the subreaper nor the session's environment marker can find
    it any more. It was born in the step's cgroup, so it is stopped when the step ends, and the
    cgroup is removed."""
    home = cgroup_home()
    if home is None or not os.access(home, os.W_OK):
        pytest.skip("no writable cgroup v2 here: commands run under the subreaper alone")
    state = tmp_path / f"escape-{uuid.uuid4().hex[:8]}"
    state.mkdir()
    (state / "stubborn").touch()
    (state / "bare").touch()
    session = ProcessSession(spec("hang-after-daemonize", str(state), timeout=600), place(tmp_path))
    turns: list[Any] = []
    worker = threading.Thread(target=lambda: turns.append(session.prompt("x")))
    worker.start()
    try:
        wait_for(lambda: _growing(state / "grandchild.log", 0.1), "the helper to write")
        (helper,) = [pid for pid, line, _ in _processes()
                     if state.name.encode() in line and b"grandchild" in line]  # fmt: skip
        with open(f"/proc/{helper}/cgroup", encoding="ascii") as handle:
            assert f"/{CGROUP_PREFIX}{os.getpid()}-" in handle.read()  # born in the step's cgroup
        keeper = _keeper_of_this_process()
        assert keeper is not None
        os.kill(keeper, signal.SIGKILL)
    finally:
        worker.join(timeout=120)
    assert turns and turns[0].error_code is not None  # the turn failed: its keeper was killed
    assert _marked(state.name) == []
    assert not _growing(state / "grandchild.log")
    ours = f"{CGROUP_PREFIX}{os.getpid()}-"
    assert not [name for name in os.listdir(home) if name.startswith(ours)]


def _a_zombie(pid: int) -> bool:
    """Whether the process has ended and waits for its parent to collect its status."""
    return next(f for p, _, f in _processes() if p == pid)[0] == b"Z"


def test_a_dead_daemons_cgroup_is_ended_at_start_without_taking_our_childrens_statuses() -> None:
    """A keeper's cgroup left by a daemon that is gone: its process is stopped and the folder
    removed; the exit status of a child of the sweeping process stays its own to collect."""
    import subprocess

    home = cgroup_home()
    if home is None or not os.access(home, os.W_OK):
        pytest.skip("no writable cgroup v2 here: commands run under the subreaper alone")
    folder = Path(home) / f"{CGROUP_PREFIX}{2**22 + 7}-1"  # above pid_max: no such daemon
    # The cgroups are the machine's: a daemon of another test starting at this moment sweeps the
    # same dead daemon's cgroup. Then it is gone, its process ended, and the sweep is tried again.
    for _attempt in range(5):
        folder.mkdir()
        left = subprocess.Popen(["sleep", "60"])
        (folder / "cgroup.procs").write_text(str(left.pid), encoding="ascii")
        ours = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
        wait_for(functools.partial(_a_zombie, ours.pid), "its end")
        ended = end_leftover_cgroups(os.getpid(), 1.0)
        if folder.name in ended:
            break
        assert left.wait(timeout=30) == -signal.SIGTERM and not folder.exists(), ended
        assert ours.wait(timeout=30) == 3
    # Another test's daemon, killed a moment ago, may have left one too: each one ended is a
    # dead daemon's, and ours is among them.
    assert folder.name in ended, ended
    daemons = [int(name.removeprefix(CGROUP_PREFIX).split("-")[0]) for name in ended]
    assert not [pid for pid in daemons if pid_alive(pid)], ended
    assert left.wait(timeout=30) == -signal.SIGTERM and not folder.exists()
    assert ours.wait(timeout=30) == 3  # not taken by the sweep's waiting
