"""Where the offline planner finds its inputs: the home's source files and guidelines, the
catalog rows of this run, and the first line of a text for a purpose sentence.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from multiverse.documents import is_unread, look, why_unread
from multiverse.models import AssetType, CatalogEntry
from multiverse.roles import PlanContext
from planner.mcp import MCP_FILE
from planner.validation import inside_home, path_shape_problem, request_path


def usable(home: Path, path: str) -> bool:
    """Whether `path` is a clean home-relative file path that stays inside the home."""
    return path_shape_problem(path) is None and inside_home(home, path)


def folder_files(home: Path, folder: str, unread: Iterable[str] = ()) -> list[str]:
    """Home-relative paths of the readable visible files under `home/folder`, sorted.

    [] if absent. Left out: hidden names, what T03 may not read (links leaving the home, broken
    links, pipes and the like: `multiverse.unread`) and the paths of `unread` notes.
    """
    root = home / folder
    if root.is_symlink() or not root.is_dir():
        return []
    noted = set(unread)
    found = []
    for path in root.rglob("*"):
        relative = path.relative_to(home).as_posix()
        if relative in noted or not usable(home, relative):
            continue
        if path.is_file() and why_unread(look(path, home)) is None:
            found.append(relative)
    return sorted(found)


def readable_inputs(context: PlanContext, kind: AssetType) -> tuple[list[str], list[str]]:
    """The catalog's input rows of `kind` usable as references, and those that are notes."""
    home = Path(context.home)
    rows, notes = [], []
    for entry in context.catalog:
        if entry.asset_type is not kind:
            continue
        if is_unread(entry):
            notes.append(entry.file_path)
        elif usable(home, entry.file_path):
            rows.append(entry.file_path)
    return rows, notes


def run_rows(context: PlanContext, *types: AssetType) -> list[CatalogEntry]:
    """This run's catalog rows of the given asset types, in catalog order."""
    return [
        entry
        for entry in context.catalog
        if entry.run_id == context.run_id and entry.asset_type in types
    ]


def original_sources(context: PlanContext) -> list[str]:
    """The source files: ORIGINAL_INPUT catalog rows still on disk, else the files in assets/.

    A row that notes a file not read is never a source.
    """
    home = Path(context.home)
    rows, notes = readable_inputs(context, AssetType.ORIGINAL_INPUT)
    on_disk = [path for path in rows if (home / path).is_file()]
    return on_disk or folder_files(home, "assets", notes)


def guideline_docs(context: PlanContext) -> list[str]:
    """Guideline documents (format and style rules), without the MCP list."""
    rows, notes = readable_inputs(context, AssetType.GUIDELINE_DOC)
    docs = rows or folder_files(Path(context.home), "guidelines", notes)
    return [path for path in docs if path != MCP_FILE]


def first_analysis(context: PlanContext) -> list[str]:
    """The run's first analysis (Phase 0, T04) when it is catalogued or on disk."""
    path = f"runs/{context.run_id}/workspace/ANALYZING/first_analysis.md"
    known = any(entry.file_path == path for entry in context.catalog)
    return [path] if known or (Path(context.home) / path).is_file() else []


def fallback_inputs(context: PlanContext) -> list[str]:
    """Inputs when the preferred catalog rows are missing: any of this run's work, the request."""
    produced = [
        entry.file_path
        for entry in context.catalog
        if entry.run_id == context.run_id and entry.asset_type is not AssetType.FINAL_OUTPUT
    ]
    return [request_path(context.run_id), *produced]


def unique(paths: list[str]) -> list[str]:
    """The paths without repeats, first occurrence kept."""
    return list(dict.fromkeys(paths))


def first_line(text: str, limit: int = 160) -> str:
    """The first non-empty line of a text, shortened to `limit` characters."""
    line = next((row.strip() for row in text.splitlines() if row.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
