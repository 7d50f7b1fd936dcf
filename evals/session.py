"""One case end to end: a fresh home, a daemon child, submit, confirm, wait with a deadline."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evals import collect
from evals.cases import Case
from evals.mvcli import FINAL, Multiverse, stop


@dataclass(frozen=True)
class Settings:
    """How every case of an evaluation is run."""

    exe: Path
    mapping_text: str | None  # None: the home's own default (all tiers builtin)
    limit_s: float
    poll_s: float
    grace_s: float
    work_root: Path | None
    stop: threading.Event


@dataclass
class Progress:
    """What the harness saw while it drove the run (its own clock, any version)."""

    outcome: str = "NO_RUN"
    run_id: str | None = None
    note: str = ""
    proposal_s: float | None = None  # submit → proposal seen
    work_s: float | None = None  # confirm → final status seen
    total_s: float = 0.0
    at_stop: dict[str, Any] = field(default_factory=dict)  # the run's pointers when stopped
    daemon: str = ""


def _the_run(runs: Any) -> dict[str, Any] | None:
    """The only run of a fresh home from `status --json` (a list, or {"runs": [...]})."""
    rows = runs.get("runs") if isinstance(runs, dict) else runs
    if not isinstance(rows, list):
        return None
    # Requests answered without a run follow the runs, as entries without a run_id.
    rows = [row for row in rows if isinstance(row, dict) and "run_id" in row]
    return rows[-1] if rows else None


def _say(case: Case, text: str) -> None:
    print(f"eval {case.name}: {text}", flush=True)


POINTER = ("current_phase_id", "current_stage_id", "current_task_id")


class Driver:
    """Drives one submitted request: each tick polls the status once and acts on it."""

    def __init__(self, mv: Multiverse, case: Case, daemon: Any, s: Settings) -> None:
        self.mv, self.case, self.daemon, self.s = mv, case, daemon, s
        self.progress = Progress()
        self.began = time.monotonic()
        self.deadline = self.began + s.limit_s
        self.confirmed_at: float | None = None
        self.seen = ""

    def run(self) -> Progress:
        """Submit, then tick until the run is final, the deadline passes or a stop is asked."""
        # --no-wait: the driver polls itself (a checkout older than it submits without it).
        done = self.mv.run("submit", "--no-wait", self.case.request)
        if done.returncode == 2 and "--no-wait" in done.stderr:
            done = self.mv.run("submit", self.case.request)
        if done.returncode != 0:
            self.progress.outcome, self.progress.note = "SUBMIT_FAILED", done.stderr.strip()
            return self.progress
        while not self.tick():
            wait = min(self.s.poll_s, self.deadline - time.monotonic())
            self.s.stop.wait(max(0.0, wait))
        end = time.monotonic()
        self.progress.total_s = round(end - self.began, 1)
        if self.confirmed_at is not None and self.progress.outcome in FINAL:
            self.progress.work_s = round(end - self.confirmed_at, 1)
        return self.progress

    def tick(self) -> bool:
        """One poll; True when the drive is over (progress.outcome says why)."""
        p = self.progress
        if self.s.stop.is_set():
            p.outcome, p.note = "INTERRUPTED", "the evaluation was stopped"
        elif self.daemon.poll() is not None:
            p.outcome = "DAEMON_EXITED"
            p.note = f"the daemon exited with {self.daemon.returncode} before the run ended"
        else:
            run = _the_run(self.mv.status())
            if run is not None and self._saw(run):
                return True
            answer = collect.direct_answer(self.mv.home) if run is None else None
            if answer is not None:  # handled without a run: nothing more will happen
                p.outcome, p.note = answer[0], str(answer[1].relative_to(self.mv.home))
                return True
            if time.monotonic() >= self.deadline:
                p.outcome, p.note = "TIMEOUT", f"not final after {self.s.limit_s / 60:g} min"
            else:
                return False
        return True

    def _saw(self, run: dict[str, Any]) -> bool:
        """Record the run's state, confirm its proposal once; True when it is final."""
        p, now = self.progress, time.monotonic()
        p.run_id, status = run.get("run_id"), str(run.get("status"))
        state = f"{status} " + "/".join(str(run.get(k) or "-") for k in POINTER)
        if state != self.seen:
            self.seen = state
            _say(self.case, f"{p.run_id} {state} ({now - self.began:.0f} s)")
        p.at_stop = {k: v for k, v in run.items() if k != "user_request"}
        if status in FINAL:
            p.outcome = status
            return True
        if status == "AWAITING_CONFIRMATION" and self.confirmed_at is None and p.run_id:
            p.proposal_s = round(now - self.began, 1)
            answer = self.mv.run("confirm", p.run_id)
            _say(self.case, (answer.stdout or answer.stderr).strip())
            if answer.returncode == 0:  # else the next poll asks again
                self.confirmed_at = time.monotonic()
        return False


def prepare(case: Case, s: Settings) -> tuple[Path, Multiverse]:
    """A fresh folder holding the home (assets copied, mapping written) and the daemon console."""
    base = Path(tempfile.mkdtemp(prefix=f"mv-eval-{case.name}-", dir=s.work_root))
    home = base / "home"
    home.mkdir()
    mv = Multiverse(s.exe, home)
    mv.init()
    for path in case.asset_paths():
        shutil.copy2(path, home / "assets" / path.name)
    if case.corpus is not None:
        from evals import corpus  # the whole engine: imported only for a corpus case
        from multiverse.home import Home

        # Documents built beside the home, as the offline corpus eval builds them.
        corpus.build_documents(base / "documents")
        corpus.lay_out(case.corpus, base / "documents", Home(home))
    if s.mapping_text is not None:
        (home / "runtime-mapping.yaml").write_text(s.mapping_text, encoding="utf-8")
    return base, mv


def run_case(case: Case, s: Settings) -> dict[str, Any]:
    """Run one case and read back everything it left; the daemon is always stopped."""
    base, mv = prepare(case, s)
    _say(case, f"home {mv.home}, daemon console {base / 'daemon.out'}")
    with (base / "daemon.out").open("w", encoding="utf-8") as console:
        daemon = mv.start(console)
        progress = Progress()
        try:
            progress = Driver(mv, case, daemon, s).run()
        finally:
            progress.daemon = stop(daemon, s.grace_s)
    _say(case, f"{progress.outcome} in {progress.total_s:.0f} s; daemon {progress.daemon}")
    found = {"case": case.name, "request": case.request, "home": str(mv.home),
             "corpus": case.corpus is not None, **asdict(progress),
             **collect.read_back(case, mv.home, progress.run_id)}  # fmt: skip
    return {**found, "cost": collect.cost(found)}
