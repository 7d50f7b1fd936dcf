"""The user's answers in runs/<run_id>/user_response.md: read them, and set them aside once
handled so that none is read twice (runs/<run_id>/responses/NNN-<kind>.md)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from multiverse.home import RunPaths
from orchestrator.decisions import Decision, parse_decision


def read_response(path: Path) -> Decision | None:
    """The user's answer, or None while the file is absent or still empty.

    Saved as UTF-8 (with or without a byte-order mark) or, by some Windows editors, UTF-16.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
    raw = data.decode("utf-16" if utf16 else "utf-8-sig", errors="replace")
    return parse_decision(raw) if raw.strip() else None


HELD = "held"  # an answer set aside by `multiverse retry`, given back once the run is reopened


def archive_response(paths: RunPaths, label: str) -> None:
    """Move the answered user_response.md aside, numbered, so it is never read twice."""
    folder = paths.responses
    folder.mkdir(exist_ok=True)
    numbers = [int(name[:3]) for name in os.listdir(folder) if name[:3].isdigit()]
    number = max(numbers, default=0) + 1
    with contextlib.suppress(FileNotFoundError):  # already moved before a crash
        os.replace(paths.user_response, folder / f"{number:03d}-{label}.md")


def give_back_held(paths: RunPaths) -> bool:
    """Put the newest held answer back into user_response.md (unless a new one is there)."""
    try:
        names = sorted(name for name in os.listdir(paths.responses) if name[:3].isdigit())
    except FileNotFoundError:
        return False
    # The newest answer other than the retries themselves, if it is a held one.
    answers = [name for name in names if not name[4:].startswith("retry")]
    if not answers or not answers[-1].endswith(f"-{HELD}.md") or paths.user_response.exists():
        return False
    os.replace(paths.responses / answers[-1], paths.user_response)
    return True
