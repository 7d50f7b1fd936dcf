"""Where the offline planner finds its inputs: the catalog first, the home's folders second."""

from __future__ import annotations

from pathlib import Path

from multiverse.contracts import PlanContext
from multiverse.models import AssetType, CatalogEntry
from planner.mcp import MCP_FILE
from planner.validation import inside_home, path_shape_problem, request_path


def usable(home: Path, path: str) -> bool:
    """Whether `path` is a clean home-relative file path that stays inside the home."""
    return path_shape_problem(path) is None and inside_home(home, path)


def folder_files(home: Path, folder: str) -> list[str]:
    """Home-relative paths of the visible files under `home/folder`, sorted; [] if absent."""
    root = home / folder
    if not root.is_dir():
        return []
    found = []
    for path in root.rglob("*"):
        relative = path.relative_to(home).as_posix()
        # Hidden names and links leaving the home would be refused as references anyway.
        if path.is_file() and usable(home, relative):
            found.append(relative)
    return sorted(found)


def run_rows(context: PlanContext, *types: AssetType) -> list[CatalogEntry]:
    """This run's catalog rows of the given asset types, in catalog order."""
    return [
        entry
        for entry in context.catalog
        if entry.run_id == context.run_id and entry.asset_type in types
    ]


def original_sources(context: PlanContext) -> list[str]:
    """The source files: ORIGINAL_INPUT catalog rows still on disk, else the files in assets/."""
    home = Path(context.home)
    rows = [
        entry.file_path
        for entry in context.catalog
        if entry.asset_type is AssetType.ORIGINAL_INPUT
        and usable(home, entry.file_path)
        and (home / entry.file_path).is_file()
    ]
    return rows or folder_files(home, "assets")


def guideline_docs(context: PlanContext) -> list[str]:
    """Guideline documents (format and style rules), without the MCP list."""
    home = Path(context.home)
    rows = [
        entry.file_path
        for entry in context.catalog
        if entry.asset_type is AssetType.GUIDELINE_DOC and usable(home, entry.file_path)
    ]
    docs = rows or folder_files(home, "guidelines")
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
