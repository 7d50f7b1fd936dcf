"""What each page shows, read from the home's files as the CLI reads them (nothing is written).

Markdown (a proposal, messages.md, a report) is rendered as report.html renders it: raw HTML in
it is shown as text, never run; links keep only safe schemes, and a relative link or image
points at the run's outputs (its charts are then shown inline from their SVG files).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.runs_view import report_path, runs_entries, statuses_asked
from app.status_view import run_data, tree_rows
from multiverse.documents import Kind, look
from multiverse.errors import MultiverseError, TableError, shown_error
from multiverse.home import Home, visible_files
from multiverse.models import FINAL_STATUSES, RUN_ID, Status
from multiverse.runs import ApprovalBook, elapsed_by_id, node_suffix, run_paths, run_phrase
from multiverse.store import KNOWLEDGE_CATALOG, USER_INSTRUCTIONS, TableSpec, TableStore, clip

ANSWERS = ("CONFIRM", "MODIFY", "CANCEL", "PAUSE", "RESUME", "RETRY")
STATUS_CHOICES = ("open", "final", *(status.value for status in Status))
TABLES: dict[str, TableSpec[Any]] = {
    "catalog": KNOWLEDGE_CATALOG,
    "instructions": USER_INSTRUCTIONS,
}
_RUN = re.compile(RUN_ID)
_LINK = re.compile(r'(?P<attr>\b(?:href|src))="(?P<url>[^"]*)"')
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SAFE_SCHEMES = ("http:", "https:", "mailto:")


def is_run_id(text: str) -> bool:
    """Whether `text` has the form of a run id (nothing else reaches the files)."""
    return _RUN.fullmatch(text) is not None


def safe_url(url: str, base: str) -> str:
    """A link of rendered markdown made safe: a safe scheme as it is, a relative one under
    `base` (the run's outputs), an anchor as it is; anything else (javascript:, data:) `#`."""
    plain = html.unescape(url).strip()
    lowered = re.sub(r"[\s\x00-\x1f]", "", plain).lower()
    if lowered.startswith(_SAFE_SCHEMES) or plain.startswith("#"):
        return url
    if ":" in lowered.split("/")[0] or plain.startswith(("/", "\\")):
        return "#"
    return html.escape(base.rstrip("/") + "/" + plain, quote=True)


def render_markdown(text: str, base: str) -> str:
    """Markdown as sanitised HTML (report.html's renderer), its links made safe under `base`."""
    from multiverse.documents import markdown_to_html

    body = markdown_to_html(_COMMENT.sub("", text))  # the daemon's markers are not for people
    return _LINK.sub(lambda m: f'{m["attr"]}="{safe_url(m["url"], base)}"', body)


def outputs_base(run_id: str) -> str:
    """The URL of a run's outputs folder in the web view."""
    return f"/runs/{run_id}/outputs"


def output_file(home: Home, run_id: str, name: str) -> Path | None:
    """A file of outputs/<run_id>/ that may be served: a regular file really inside that folder
    (links followed as the tools follow them), not hidden; None for anything else."""
    if not is_run_id(run_id) or not name or any(p.startswith(".") for p in Path(name).parts):
        return None
    folder = (home.outputs / run_id).resolve()
    path = folder / name
    seen = look(path, home.root)
    if seen.kind is not Kind.FILE or not seen.inside:
        return None
    if not Path(seen.real_path).is_relative_to(folder):
        return None
    return path


def read_text(path: Path) -> str | None:
    """A text file of the home, or None when it is not there (or cannot be read)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


@dataclass
class RunsPage:
    """The runs list and the filters it was asked with."""

    entries: list[dict[str, Any]]
    hidden: int
    problems: list[str]
    statuses: list[str]
    since: str
    limit: int
    archived: bool
    error: str | None = None


def waiting_for(row: dict[str, Any]) -> str:
    """What the run waits for, in a few words ('' when it waits for nothing)."""
    if row.get("paused"):
        return f"a table to be fixed: {row['paused']}"
    if row.get("waiting"):
        return str(row["waiting"]).split(" — ")[0]
    if row.get("held"):
        return str(row["held"])
    if row.get("status") == Status.AWAITING_CONFIRMATION:
        return "your answer to its proposal"
    return ""


def runs_page(home: Home, statuses: list[str], since: str, limit: int, archived: bool) -> RunsPage:
    """The runs `multiverse runs` lists with these filters, each with its age and waiting."""
    from app.cli_runs import parse_when

    page = RunsPage([], 0, [], statuses, since, limit, archived)
    try:
        wanted = statuses_asked(statuses)
        after = parse_when(since) if since.strip() else None
        entries, page.hidden, page.problems = runs_entries(
            str(home.root), wanted, after, max(limit, 0), archived
        )
    except MultiverseError as error:
        page.error = str(error)
        return page
    now = datetime.now(UTC)
    for row in reversed(entries):  # newest first: the one a person looks for
        where = " › ".join(
            row[k] for k in ("current_phase_id", "current_stage_id", "current_task_id") if row[k]
        )
        page.entries.append(row | {
            "where": "archived" if row.get("archived") else where,
            "phrase": run_phrase(row, now),
            "waiting_for": waiting_for(row),
            "request": clip(row["user_request"] or "", 90),
        })  # fmt: skip
    return page


@dataclass
class RunPage:
    """One run: its row, tree, proposal, answers it takes, approvals, messages, deliverables."""

    run_id: str
    run: dict[str, Any]
    tree: list[dict[str, Any]]
    answers: dict[str, bool]
    refusals: dict[str, str]
    forkable: bool
    proposal: str | None
    approvals: list[dict[str, str]]
    messages: str | None
    outputs: list[str]
    report: str | None
    report_name: str | None
    problems: list[str] = field(default_factory=list)


def run_page(home: Home, store: TableStore, run_id: str) -> RunPage:
    """Everything the run's page shows (UnknownRun for a run the home does not know)."""
    data = run_data(home, store, run_id)
    row = data["run"]
    seconds = elapsed_by_id(data)
    tree = [
        {"depth": depth, "id": key, "name": name, "status": status.value,
         "time": node_suffix(seconds.get(key)).strip()}
        for depth, key, name, status in tree_rows(data)
    ]  # fmt: skip
    answers, refusals = _answers(home, run_id, bool(row.get("archived")))
    paths = run_paths(home, run_id)
    base = outputs_base(run_id)
    proposal = read_text(paths.feedback)
    messages = read_text(paths.messages)
    outputs = [path.relative_to(home.outputs / run_id).as_posix()
               for path in visible_files(home.outputs / run_id)]  # fmt: skip
    report, report_name = _report(home, run_id, base)
    status = row.get("status")
    final = status is not None and Status(status) in FINAL_STATUSES
    return RunPage(
        run_id=run_id, run=row | {"phrase": run_phrase(row, datetime.now(UTC))}, tree=tree,
        answers=answers, refusals=refusals, forkable=final,
        proposal=render_markdown(proposal, base) if proposal else None,
        approvals=_approvals(home, run_id, final),
        messages=render_markdown(messages, base) if messages else None,
        outputs=outputs, report=report, report_name=report_name,
        problems=list(row.get("broken", [])),
    )  # fmt: skip


def _answers(home: Home, run_id: str, archived: bool) -> tuple[dict[str, bool], dict[str, str]]:
    """Which answers the run takes now (as `multiverse confirm` etc. decide), and why not."""
    from app.commands import acceptance
    from orchestrator.decide import DecisionKind

    if archived:
        return dict.fromkeys(ANSWERS, False), {}
    try:
        taken = acceptance(home, run_id)
    except MultiverseError as error:
        return dict.fromkeys(ANSWERS, False), {"ALL": str(error)}
    answers = {kind: taken.takes(DecisionKind(kind)) for kind in ANSWERS}
    return answers, {kind: taken.why_not(DecisionKind(kind)) for kind in ANSWERS}


def _approvals(home: Home, run_id: str, final: bool) -> list[dict[str, str]]:
    if final or not (home.run(run_id).root / "approvals").is_dir():
        return []
    try:
        pending = ApprovalBook(home.run(run_id).root).pending()
    except MultiverseError:
        return []
    return [{"id": item.id, "action": item.shown(300), "task": item.task_id} for item in pending]


def _report(home: Home, run_id: str, base: str) -> tuple[str | None, str | None]:
    """The run's markdown report rendered (charts inline), and its name in outputs/."""
    try:
        path = report_path(home, run_id)
    except MultiverseError:
        return None, None
    if path is None or path.suffix.lower() != ".md":
        return None, None
    text = read_text(path)
    if text is None:
        return None, None
    name = path.relative_to(home.outputs / run_id).as_posix() if path.is_relative_to(
        home.outputs / run_id) else path.name  # fmt: skip
    return render_markdown(text, base), name


@dataclass
class TablePage:
    """A global table as columns and rows of text, or the problem that keeps it unread."""

    name: str
    title: str
    file: str
    columns: list[str]
    rows: list[list[str]]
    problem: str | None = None


def table_page(home: Home, store: TableStore, name: str) -> TablePage:
    """The catalog or the instructions table as text cells (KeyError for another name)."""
    spec = TABLES[name]
    path = home.db / spec.filename
    page = TablePage(name, spec.title, home.relative(path), list(spec.columns), [])
    try:
        rows = store.snapshot(spec, path).rows if path.exists() else []
    except TableError as error:
        page.problem = shown_error(home.root, error)
        return page
    page.rows = [spec.to_cells(row) for row in rows]
    return page
