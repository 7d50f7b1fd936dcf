"""The home folder (SPEC §2): where every path of the system comes from."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

from multiverse.errors import HomeError
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
    def user_response(self) -> Path:
        """The user's decision (CONFIRM / MODIFY: … / CANCEL)."""
        return self.root / "user_response.md"

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
        """Disk space held back to record a failure on a full disk (`multiverse.disk_reserve`)."""
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
