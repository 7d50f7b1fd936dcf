"""The home folder (SPEC §2): where every path of the system comes from, and the run ids it holds
(short forms on the command line: `latest`, or any unique part of the id).

Also here: whether a daemon serves a home: its lock is held and its loop beat recently.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, ValidationError

if TYPE_CHECKING:
    from filelock import FileLock

from multiverse.errors import HomeError, UnknownRun, UserError
from multiverse.models import RUN_ID

HOME_ENV = "MULTIVERSE_HOME"
PHASE_FOLDERS = ("ANALYZING", "STRATEGIZING", "REFINING_CONTENT", "GENERATING_OUTPUT")
# Files `init` ships into a new home, taken from the package's `home_template/` data.
SHIPPED_FILES = (
    "db/templates/default_phases.md",
    "guidelines/mcp_list.md",
    "runtime-mapping.yaml",
)


@dataclass(frozen=True)
class RunPaths:
    """Every path of one run, under runs/<run_id>/ and outputs/<run_id>/."""

    root: Path
    outputs: Path

    @cached_property
    def run_id(self) -> str:
        """The run's identifier (its folder name)."""
        return self.root.name

    @cached_property
    def db(self) -> Path:
        """The run's own tables."""
        return self.root / "db"

    @cached_property
    def workspace(self) -> Path:
        """The run's workspace with one folder per phase."""
        return self.root / "workspace"

    @cached_property
    def signals(self) -> Path:
        """Result signals of finished steps (durable evidence, SPEC §15)."""
        return self.root / "signals"

    @cached_property
    def logs(self) -> Path:
        """Logs of the run's roles and child processes."""
        return self.root / "logs"

    @cached_property
    def request(self) -> Path:
        """The request as dropped."""
        return self.root / "request.md"

    @cached_property
    def feedback(self) -> Path:
        """The Planner's amendment proposal."""
        return self.root / "feedback_for_user.md"

    @cached_property
    def spec(self) -> Path:
        """The request spec: the latest proposal's understanding, frozen at CONFIRM."""
        return self.root / "spec.json"

    def language(self) -> str:
        """The requester's language as the run's spec says it ("" before there is one)."""
        try:
            data = json.loads(self.spec.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return ""
        language = data.get("language") if isinstance(data, dict) else None
        return language if isinstance(language, str) else ""

    @cached_property
    def user_response(self) -> Path:
        """The user's decision (CONFIRM / MODIFY: … / CANCEL)."""
        return self.root / "user_response.md"

    @cached_property
    def answers(self) -> Path:
        """Answers given by commands, each its own file, waiting to be handled oldest first."""
        return self.root / "answers"

    @cached_property
    def responses(self) -> Path:
        """Answers already handled, moved aside so none is read twice (`NNN-<kind>.md`)."""
        return self.root / "responses"

    @cached_property
    def messages(self) -> Path:
        """Everything the Communicator said, newest last."""
        return self.root / "messages.md"

    def phase_workspace(self, phase_name: str) -> Path:
        """The workspace folder of one phase."""
        return self.workspace / phase_name


@dataclass(frozen=True)
class Home:
    """The folder the daemon serves; every path derives from `root`."""

    root: Path

    @cached_property
    def inbox(self) -> Path:
        """Where requests are dropped."""
        return self.root / "inbox"

    @cached_property
    def inbox_done(self) -> Path:
        """Handled requests (and SIMPLE_TASK replies)."""
        return self.inbox / "done"

    @cached_property
    def inbox_rejected(self) -> Path:
        """Requests that could not be read, each with a reason file."""
        return self.inbox / "rejected"

    @cached_property
    def db(self) -> Path:
        """The global tables."""
        return self.root / "db"

    @cached_property
    def templates(self) -> Path:
        """Shipped templates (the phase template)."""
        return self.db / "templates"

    @cached_property
    def phase_template(self) -> Path:
        """The fixed P1–P4 phase template."""
        return self.templates / "default_phases.md"

    @cached_property
    def runs(self) -> Path:
        """Every run's folder."""
        return self.root / "runs"

    @cached_property
    def outputs(self) -> Path:
        """Every run's deliverables."""
        return self.root / "outputs"

    @cached_property
    def archive_db(self) -> Path:
        """Archived runs' rows: a dated shard of the global tables per hour of creation."""
        return self.db / "archive"

    @cached_property
    def archive_runs(self) -> Path:
        """Archived runs' folders (`multiverse archive`)."""
        return self.runs / "archive"

    @cached_property
    def assets(self) -> Path:
        """Read-only input: the content to work on."""
        return self.root / "assets"

    @cached_property
    def guidelines(self) -> Path:
        """Read-only input: formats, styles, policies, mcp_list.md."""
        return self.root / "guidelines"

    @cached_property
    def mapping_file(self) -> Path:
        """Tiers → models and budgets, abstract tools → concrete tools."""
        return self.root / "runtime-mapping.yaml"

    @cached_property
    def state(self) -> Path:
        """Private daemon state (lock file, LLM cache); never read by people."""
        return self.root / ".multiverse"

    @cached_property
    def pending_usage(self) -> Path:
        """Model usage of requests not yet a run (their mode decision), one folder each."""
        return self.state / "usage_pending"

    @cached_property
    def deleted_rows(self) -> Path:
        """Rows people deleted on purpose (`multiverse delete-row`), so none is restored."""
        return self.state / "deleted_rows.jsonl"

    @cached_property
    def space_reserve(self) -> Path:
        """Disk space held back to record a failure on a full disk (`multiverse.atomic`)."""
        return self.state / "space-reserve"

    def run(self, run_id: str) -> RunPaths:
        """The paths of one run."""
        return RunPaths(self.runs / run_id, self.outputs / run_id)

    def relative(self, path: Path) -> str:
        """A path as written in the tables: relative to the home, with forward slashes.

        Only its folder is resolved: a symbolic link is named by its own place, never by its
        target's (which may lie outside the home).
        """
        absolute = Path(os.path.abspath(path))
        if absolute.name:
            absolute = Path(os.path.realpath(absolute.parent)) / absolute.name
        return absolute.relative_to(self.root.resolve()).as_posix()


_RUN_FOLDER = re.compile(RUN_ID)


def run_folder_ids(folder: Path) -> list[str]:
    """The run ids of the run folders in `folder` (runs/ or runs/archive/), oldest first: a
    listing, no table read. None when the folder does not exist; OSError if it cannot be read."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(name for name in names if _RUN_FOLDER.fullmatch(name))


def visible_files(folder: Path) -> list[Path]:
    """The files under `folder`, sorted, without hidden ones (a `.name` file or folder).

    Hidden names are never deliverables: they are temporary files of writes in progress
    (`multiverse.atomic`), lock files and the like.
    """
    if not folder.is_dir():
        return []
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not any(
            part.startswith(".") for part in path.relative_to(folder).parts
        ):
            found.append(path)
    return sorted(found)


def resolve_home(option: str | Path | None = None) -> Home:
    """The home from `--home`, else MULTIVERSE_HOME, else the current directory."""
    raw = option if option not in (None, "") else os.environ.get(HOME_ENV) or os.getcwd()
    return Home(Path(raw).expanduser().resolve())


def require_home(home: Home) -> Home:
    """Fail with a clear message unless `home` is an initialised home."""
    if not home.root.is_dir():
        raise HomeError(f"home {home.root} does not exist; create it with `multiverse init`")
    missing = [name for name in ("inbox", "db", "runs") if not (home.root / name).is_dir()]
    if missing:
        raise HomeError(
            f"{home.root} is not a multiverse home (missing {', '.join(missing)}/); "
            "run `multiverse init` there first"
        )
    return home


def init_home(home: Home) -> list[Path]:
    """Create the home layout; never overwrites an existing file. Returns what was created."""
    created: list[Path] = []
    if home.root.exists() and not home.root.is_dir():
        raise HomeError(f"{home.root} exists and is not a folder")
    folders = (
        home.inbox,
        home.db,
        home.templates,
        home.runs,
        home.outputs,
        home.assets,
        home.guidelines,
    )
    for folder in folders:
        if not folder.exists():
            folder.mkdir(parents=True)
            created.append(folder)
    template = resources.files("multiverse") / "home_template"
    for relative in SHIPPED_FILES:
        target = home.root / relative
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((template / relative).read_bytes())
        created.append(target)
    return created


def is_archived(home: Home, run_id: str) -> bool:
    """Whether the run's folder is in runs/archive/ and no longer in runs/."""
    return not (home.runs / run_id).exists() and (home.archive_runs / run_id).is_dir()


def run_paths(home: Home, run_id: str) -> RunPaths:
    """The run's paths where its folder is now: runs/<id>/, else runs/archive/<id>/."""
    if is_archived(home, run_id):
        return RunPaths(home.archive_runs / run_id, home.outputs / run_id)
    return home.run(run_id)


LATEST = "latest"
SHOWN = 5  # candidates named in an ambiguity message


def run_ids(home: Home) -> list[str]:
    """The run ids of the home's runs/ and runs/archive/ folders, oldest first (ids sort by
    time)."""
    try:
        return sorted({*run_folder_ids(home.runs), *run_folder_ids(home.archive_runs)})
    except OSError:
        return []


def pick(reference: str, known: list[str]) -> str:
    """The one run id `reference` names among `known` (pure); UnknownRun or UserError if none
    or several do."""
    if reference in known or (re.fullmatch(RUN_ID, reference) and not known):
        return reference
    if reference.casefold() == LATEST:
        if not known:
            raise UnknownRun(reference)
        return known[-1]
    bare = reference.removeprefix("run-")
    if not bare or not re.fullmatch(r"[0-9-]+", bare):
        raise UnknownRun(reference)
    # Any contiguous part: the date, the time part `status` shows (`105939`), the counter.
    fits = [run for run in known if bare in run.removeprefix("run-")]
    if len(fits) == 1:
        return fits[0]
    if not fits:
        raise UnknownRun(reference)
    shown = ", ".join(fits[-SHOWN:])
    more = f" and {len(fits) - SHOWN} more" if len(fits) > SHOWN else ""
    raise UserError(f"{reference!r} fits {len(fits)} runs ({shown}{more}): give more of the id")


def resolve_run(home: Home, reference: str) -> str:
    """The run id a command-line reference names in this home."""
    if re.fullmatch(RUN_ID, reference):
        return reference  # whole: the command itself says if the home holds it
    return pick(reference, run_ids(home))


BEAT_SECONDS = 2.0
STALE_BEATS = 3  # a beat older than this many intervals: the loop is stuck
HEARTBEAT_FILE = "heartbeat.json"
LOCK_FILE = "daemon.lock"


class Beat(BaseModel):
    """The content of the heartbeat file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pid: int
    started_at: datetime
    beat_at: datetime


class Serving(BaseModel):
    """What `serving_state` found: serving, stuck (lock held, no recent beat) or not running."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state: str  # "serving" | "stuck" | "not running"
    pid: int | None = None
    since: datetime | None = None
    last_beat: datetime | None = None

    @property
    def serving(self) -> bool:
        """A daemon holds the lock and its loop beat within the last few intervals."""
        return self.state == "serving"

    def line(self) -> str:
        """One line for people: what serves this home, since when."""
        if self.state == "serving" and self.since is not None:
            return f"serving since {_shown(self.since)} (pid {self.pid})"
        if self.state == "stuck":
            beat = f"last beat {_shown(self.last_beat)}" if self.last_beat else "no beat yet"
            pid = self.pid or "?"
            return f"a daemon holds the lock (pid {pid}) but its loop is not beating ({beat})"
        return "not running: start one with `multiverse start` (or `make start`)"


def serving_state(lock_held: bool, beat: Beat | None, now: datetime) -> Serving:
    """Decide, purely, whether a daemon serves the home from the lock and the last beat."""
    if not lock_held:
        return Serving(state="not running")
    if beat is None:
        return Serving(state="stuck")
    age = (now - beat.beat_at).total_seconds()
    fresh = age < STALE_BEATS * BEAT_SECONDS
    return Serving(
        state="serving" if fresh else "stuck",
        pid=beat.pid,
        since=beat.started_at,
        last_beat=beat.beat_at,
    )


def probe(state: Path, now: datetime | None = None) -> Serving:
    """Whether a daemon serves the home whose private folder is `state`."""
    return serving_state(lock_held(state / LOCK_FILE), read_beat(state), now or datetime.now(UTC))


def lock_held(path: Path) -> bool:
    """Whether some process holds the daemon lock (a shared, non-blocking flock probe).

    The probe holds the lock for microseconds; the daemon waits a moment for it (see
    `orchestrator.daemon`), so a probe never keeps a daemon from starting.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False  # no lock file: no daemon ever ran here
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a probe that got the lock
    return False


def read_beat(state: Path) -> Beat | None:
    """The last beat written, or None (no file, or a torn one)."""
    try:
        return Beat.model_validate_json((state / HEARTBEAT_FILE).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def write_beat(state: Path, beat: Beat) -> None:
    """Replace the heartbeat file (temp + rename; not a durable write: it is rewritten soon)."""
    target = state / HEARTBEAT_FILE
    temp = state / f".{HEARTBEAT_FILE}.{os.getpid()}.tmp"
    temp.write_text(json.dumps(beat.model_dump(mode="json")) + "\n", encoding="utf-8")
    os.replace(temp, target)


def remove_beat(state: Path) -> None:
    """Remove the heartbeat file (a clean stop)."""
    (state / HEARTBEAT_FILE).unlink(missing_ok=True)


def _shown(moment: datetime | None) -> str:
    if moment is None:
        return "?"
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


LOCK_WAIT_SECONDS = 1.0  # a `doctor` or `submit` probing the lock holds it for microseconds


class DaemonAlreadyRunning(UserError):
    """Another daemon serves this home."""


def take_daemon_lock(home: Home) -> FileLock:
    """The lock that lets one daemon serve a home, its pid written beside it; another daemon
    serving it is a DaemonAlreadyRunning naming its pid."""
    from filelock import FileLock, Timeout

    home.state.mkdir(parents=True, exist_ok=True)
    lock = FileLock(home.state / "daemon.lock", thread_local=False)
    try:
        lock.acquire(timeout=LOCK_WAIT_SECONDS)
    except Timeout as error:
        raise DaemonAlreadyRunning(
            f"another multiverse daemon is already serving {home.root} "
            f"(pid {_read_pid(home.state / 'daemon.pid')}); stop it first"
        ) from error
    (home.state / "daemon.pid").write_text(str(os.getpid()), encoding="utf-8")
    return lock


def _read_pid(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip() or "?"
    except OSError:
        return "?"
