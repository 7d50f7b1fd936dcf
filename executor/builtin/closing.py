"""The close of a published deliverable (SPEC §6a): every number it states looked up among its
sources and the computed facts, the ones found nowhere listed in a closing section; what the run
was asked and did not do written to `delivery.json` for the completion message; and what the
run's web search gave, read back from its summaries (quoted passages only, never the search's
own bookkeeping).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import structlog

from executor.builtin.specialists import NOT_PERFORMED, NOTHING_USABLE
from multiverse.atomic import atomic_write_text
from multiverse.home import Home
from multiverse.spec import RequestSpec
from multiverse.trace import Known, Untraced, untraced

log = structlog.get_logger(__name__)

DELIVERY_FILE = "delivery.json"
HEAD_CHARS = 600  # where a summary's or a note's mark stands


@dataclass(frozen=True)
class Quote:
    """A passage a fetched page gave, with the page."""

    title: str
    url: str
    passage: str


@dataclass(frozen=True)
class WebOutcome:
    """What the web search planned for the run gave: passages, nothing usable, or no search."""

    outcome: Literal["none", "found", "nothing", "not_made"]
    quoted: list[Quote] = field(default_factory=list)
    why: str = ""


def _run_files(home: Path, run_id: str) -> list[Path]:
    """The markdown files of the run's workspace and outputs (where tool tasks write)."""
    layout = Home(home)
    folders = [layout.run(run_id).workspace, layout.root / "outputs" / run_id]
    return [path for folder in folders if folder.is_dir()
            for path in sorted(folder.rglob("*.md")) if path.is_file()]  # fmt: skip


def web_outcome(home: Path, run_id: str, spec: RequestSpec | None, no_provider: str) -> WebOutcome:
    """The run's web search, read back from the summaries and notes its tool tasks wrote."""
    from executor.search import is_summary, read_findings

    quoted: list[Quote] = []
    nothing = not_made = False
    for path in _run_files(home, run_id):
        text = path.read_text(encoding="utf-8", errors="replace")
        if is_summary(text):
            quoted += [Quote(q.title, q.url, q.passage) for q in read_findings(text)]
        nothing = nothing or NOTHING_USABLE in text[:HEAD_CHARS]
        not_made = not_made or NOT_PERFORMED in text[:HEAD_CHARS]
    if quoted:
        return WebOutcome("found", quoted)
    if nothing:
        return WebOutcome("nothing")
    research = spec.research if spec is not None else None
    if not_made or research is not None:
        english = spec is None or spec.language == "en"
        note = research.note if research is not None and english and research.note else ""
        return WebOutcome("not_made", why=note or no_provider)
    return WebOutcome("none")


@dataclass(frozen=True)
class Closing:
    """A deliverable with its untraced numbers listed at its end (none: unchanged)."""

    markdown: str
    untraced: list[Untraced]


def close(
    markdown: str, known: Iterable[str], heading: str, intro: str, bold: bool = False
) -> Closing:
    """Trace every number of the markdown; list the ones no known text holds under `heading`."""
    missing = untraced(markdown, Known.of(known))
    if not missing:
        return Closing(markdown, [])
    title = f"**{heading}**" if bold else f"## {heading}"
    lines = [title, "", intro, "", *(f"- **{item.number}** — {item.context}" for item in missing)]
    return Closing(markdown.rstrip() + "\n\n" + "\n".join(lines) + "\n", missing)


def write_delivery(home: Path, run_id: str, not_done: list[str], untraced_numbers: int) -> Path:
    """`delivery.json` in the run's GENERATING_OUTPUT workspace: what was asked and not done,
    and how many numbers of the deliverable were found in no source."""
    path = Home(home).run(run_id).phase_workspace("GENERATING_OUTPUT") / DELIVERY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    items = list(dict.fromkeys(not_done))
    record = {"not_done": items, "untraced_numbers": untraced_numbers}
    atomic_write_text(path, json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    log.info("deliverable_closed", run_id=run_id, not_done=len(items),
             untraced_numbers=untraced_numbers)  # fmt: skip
    return path
