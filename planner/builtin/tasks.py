"""The builtin task plans: one concrete, extractive method per stage, chained through the catalog.

ANALYZING extracts facts per group of sources, then consolidates them; STRATEGIZING assesses
them SWOT-style; REFINING_CONTENT fuses both into argued blocks; GENERATING_OUTPUT plans the
assembly, then publishes to outputs/<run_id>/. Each task reads only real files: catalog rows of
this run (by asset type) or, when those are missing, the run's request and earlier work; the
home's source files and guidelines are found here too (`original_sources`, `guideline_docs`),
and the MCP recipes of `guidelines/mcp_list.md` (SPEC §10.3), which both Planners match to
their tool plans: one pipe table, one row per recipe step (`mcp_name | applies_when | timing |
step_order | tool_type | step_purpose`). Rows sharing an `mcp_name` form one recipe, its steps
run in `step_order`. A recipe fits a tool plan when its timing matches and one of its
comma-separated `applies_when` keywords occurs in the text (case-insensitive, as a substring, so
Korean particles do not hide a keyword).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from multiverse.documents import is_unread, look, why_unread
from multiverse.errors import ConfigError, TableError
from multiverse.models import AssetType, CatalogEntry, MajorStage, Phase, Task, Timing, task_id_of
from multiverse.roles import McpRecipe, McpStep, PlanContext, TasksPlan
from multiverse.store import parse_table_text
from offline.asks import deliverable_asked, paths_named, sources_in
from planner.builtin.proposal import past_work, run_spec
from planner.proposal_doc import length_label
from planner.validation import inside_home, path_shape_problem, request_path
from planner.wording import language_name

# Where the tasks find their inputs: the home's source files and guidelines, the catalog rows of
# this run, and the first line of a text for a purpose sentence.


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


GROUP_SIZE = 3
MAX_TASKS = 99  # task ids end in two digits


@dataclass(frozen=True)
class Draft:
    """A task before it gets its id and order."""

    name: str
    purpose: str
    references: list[str]
    output: str
    pre: str = ""
    post: str = ""


@dataclass(frozen=True)
class Intent:
    """What the publishing plans need of the request: the deliverable, its language and length,
    and whether outside information was asked for (the words that asked, when they did)."""

    deliverable: str
    language: str
    length: str
    outside: list[str]


def intent(context: PlanContext) -> Intent:
    """The run's spec (frozen by CONFIRM); the run's confirmed instructions decide the
    deliverable, the length and the research once they exist (a person may have edited them
    in the proposal before confirming)."""
    spec = run_spec(context)
    own = {i.instruction_type: i.content for i in context.instructions
           if i.run_id == context.run_id}  # fmt: skip
    research = spec.research
    outside = [research.reading.phrase or "outside information"] if research is not None else []
    if not own:
        return Intent(spec.deliverable, language_name(spec.language, "en"),
                      length_label(spec, "en"), outside)  # fmt: skip
    asked = deliverable_asked(own.get("DELIVERABLE", ""))
    if "RESEARCH" not in own:
        outside = []
    elif not outside:
        outside = ["outside information"]
    length = own.get("LENGTH", "").strip().rstrip(".") or length_label(spec, "en")
    return Intent(
        asked[0] if asked else spec.deliverable,
        language_name(spec.language, "en"),
        length,
        outside,
    )


def _sources_in(instruction: str) -> tuple[list[str], list[str]]:
    """The files a SOURCES instruction works from and leaves out (English or Korean)."""
    cut = instruction.find("제외")
    if cut >= 0:
        return paths_named(instruction[:cut]), paths_named(instruction[cut:])
    return sources_in(instruction)


def run_sources(context: PlanContext) -> list[str]:
    """The source files of this run: its SOURCES instruction as confirmed (or edited), read
    back; before one exists, the spec's sources (what the request and its MODIFY texts say)."""
    own = [
        i.content
        for i in context.instructions
        if i.run_id == context.run_id and i.instruction_type == "SOURCES"
    ]
    available = original_sources(context)
    if not own:
        spec = run_spec(context)
        excluded = spec.excluded()
        return [s for s in spec.sources if s not in excluded]
    used, left_out = _sources_in(own[0])
    home = Path(context.home)
    named = [p for p in used if usable(home, p) and (home / p).is_file()]
    chosen = named if used else available
    return [s for s in chosen if s not in left_out]


def past_references(context: PlanContext) -> list[str]:
    """The deliverables of the ranked past runs (the learning context), as candidate references."""
    return [path for path, _, _ in past_work(context)]


def describe(paths: list[str]) -> str:
    """A short list of file paths for a purpose sentence."""
    shown = ", ".join(paths[:3])
    return shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def plan_tasks(context: PlanContext, stage: MajorStage, phase: Phase) -> TasksPlan:
    """The tasks of `stage`, ids `<stage_id>-T01`…, each with real inputs and a new output."""
    folder = f"runs/{context.run_id}/workspace/{phase.phase_name}"
    drafts = _drafts(context, stage, phase, folder)
    tasks = [
        Task(
            task_id=task_id_of(stage.stage_id, order),
            run_id=context.run_id,
            stage_id=stage.stage_id,
            task_name=draft.name,
            task_purpose=draft.purpose,
            related_references=unique(draft.references),
            output_path=_free(context, draft.output),
            pre_tool_purpose=draft.pre,
            post_tool_purpose=draft.post,
            execution_order=order,
        )
        for order, draft in enumerate(drafts, start=1)
    ]
    return TasksPlan(tasks=tasks)


def _drafts(context: PlanContext, stage: MajorStage, phase: Phase, folder: str) -> list[Draft]:
    name = phase.phase_name
    if name == "ANALYZING":
        if stage.execution_order == 1:
            return _fact_extraction(context, folder)
        return [_consolidation(context, stage, folder)]
    if name == "STRATEGIZING":
        return [_strategy(context, folder)]
    if name == "REFINING_CONTENT":
        return [_refinement(context, folder)]
    if name == "GENERATING_OUTPUT":
        if context.is_publishing(stage):
            return [_publishing(context)]
        return [_assembly(context, folder)]
    return [_synthesis(context, phase, folder)]


def _inputs(context: PlanContext, *types: AssetType) -> list[str]:
    rows = [entry.file_path for entry in run_rows(context, *types)]
    return rows or fallback_inputs(context)


def _fact_extraction(context: PlanContext, folder: str) -> list[Draft]:
    request = request_path(context.run_id)
    sources = run_sources(context)
    past = past_references(context)
    if not sources:
        refs = [request, *first_analysis(context)]
        purpose = (
            "Extract the stated goals, constraints, named entities and figures from "
            f"{describe(refs)} (there are no source files in assets/)."
        )
        return [Draft("Extract request facts", purpose, refs, f"{folder}/facts_01.md")]
    size = max(GROUP_SIZE, math.ceil(len(sources) / MAX_TASKS))
    groups = [sources[start : start + size] for start in range(0, len(sources), size)]
    drafts = [
        Draft(
            f"Extract facts ({number}/{len(groups)})",
            f"Extract headings, figures with their context and key sentences from "
            f"{describe(group)}, one section per source, noting what bears on the request.",
            [request, *group],
            f"{folder}/facts_{number:02d}.md",
        )
        for number, group in enumerate(groups, start=1)
    ]
    if past:
        drafts.append(
            Draft(
                "Read past work",
                f"Extract what the deliverables of similar past runs ({describe(past)}) say "
                "that bears on the request, with the sources they cite.",
                [request, *past],
                f"{folder}/facts_past.md",
            )
        )
    return drafts


def _consolidation(context: PlanContext, stage: MajorStage, folder: str) -> Draft:
    earlier = [
        s.stage_id
        for s in context.stages
        if s.phase_id == stage.phase_id and s.execution_order < stage.execution_order
    ]
    rows = [
        entry.file_path
        for entry in run_rows(context, AssetType.ANALYSIS_REPORT, AssetType.TOOL_OUTPUT)
        if any((entry.source_task_id or "").startswith(f"{sid}-") for sid in earlier)
    ]
    refs = rows or _inputs(context, AssetType.ANALYSIS_REPORT)
    outside = intent(context).outside
    pre = ""
    if outside and "web_search" in context.tool_types:  # no search the mapping cannot serve
        pre = (
            f"Search the web for recent outside information the sources lack ({', '.join(outside)})"
            f" about: {first_line(context.request, 200)}"
        )
    purpose = (
        f"Consolidate the per-source facts of {describe(refs)} into one analysis: recurring "
        "themes, key figures compared across sources, gaps and open questions."
    )
    return Draft("Consolidate the analysis", purpose, refs, f"{folder}/analysis_summary.md", pre)


def _strategy(context: PlanContext, folder: str) -> Draft:
    refs = _inputs(context, AssetType.ANALYSIS_REPORT)
    purpose = (
        f"Assess strengths, weaknesses, opportunities and threats (SWOT-style) from "
        f"{describe(refs)}, then rank the options and recommend a direction with its risks."
    )
    return Draft("Strategic assessment (SWOT)", purpose, refs, f"{folder}/strategy.md")


def _refinement(context: PlanContext, folder: str) -> Draft:
    refs = _inputs(context, AssetType.STRATEGY_DOC, AssetType.ANALYSIS_REPORT)
    purpose = (
        f"Fuse the strategy and analysis of {describe(refs)} into refined sections, each as "
        "claim, supporting evidence with figures and sources, and implication."
    )
    return Draft("Refine the content", purpose, refs, f"{folder}/refined_content.md")


def _assembly(context: PlanContext, folder: str) -> Draft:
    refs = _inputs(context, AssetType.REFINED_CONTENT, AssetType.STRATEGY_DOC)
    wanted = intent(context)
    purpose = (
        f"Plan the assembly of the {wanted.deliverable} ({wanted.language}, {wanted.length}): "
        f"an outline of sections and which block of {describe(refs)} feeds each."
    )
    return Draft("Plan the assembly", purpose, refs, f"{folder}/assembly_plan.md")


def _publishing(context: PlanContext) -> Draft:
    types = (
        AssetType.ASSEMBLY_PLAN,
        AssetType.REFINED_CONTENT,
        AssetType.STRATEGY_DOC,
        AssetType.ANALYSIS_REPORT,
        AssetType.TOOL_OUTPUT,
    )
    # The sources themselves too: the brief quotes and locates each fact in its original file,
    # and draws the charts asked for from the whole tables (no tool task: nothing else is drawn).
    refs = _inputs(context, *types) + run_sources(context) + guideline_docs(context)
    wanted = intent(context)
    output = f"outputs/{context.run_id}/report.md"
    purpose = (
        f"Publish an evidence brief for the request ({wanted.deliverable} asked) in "
        f"{wanted.language}: the facts of {describe(refs)} ranked by relevance, the sources' own "
        "conclusions quoted, the charts asked for."
    )
    return Draft("Publish the deliverable", purpose, refs, output)


def _synthesis(context: PlanContext, phase: Phase, folder: str) -> Draft:
    refs = _inputs(context, *(t for t in AssetType if t is not AssetType.FINAL_OUTPUT))
    purpose = f"Synthesise {describe(refs)} for the purpose of {phase.phase_name}."
    return Draft("Synthesis", purpose, refs, f"{folder}/synthesis.md")


def _free(context: PlanContext, path: str) -> str:
    """`path`, or a numbered variant when a file of that name already exists."""
    home = Path(context.home)
    known = {entry.file_path for entry in context.catalog}
    stem, dot, suffix = path.rpartition(".")
    candidate, number = path, 1
    while candidate in known or (home / candidate).exists():
        number += 1
        candidate = f"{stem}_{number}{dot}{suffix}"
    return candidate


# The MCP recipes of guidelines/mcp_list.md.

MCP_FILE = "guidelines/mcp_list.md"
MCP_COLUMNS = ("mcp_name", "applies_when", "timing", "step_order", "tool_type", "step_purpose")
_TOOL_TYPE = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass
class _Draft:
    """A recipe being assembled from its rows, remembering where it was first defined."""

    applies_when: str
    timing: Timing
    line: int
    steps: dict[int, McpStep] = field(default_factory=dict)


def load_mcps(home: Path) -> list[McpRecipe]:
    """The recipes of `<home>/guidelines/mcp_list.md`, in file order; [] when there is none."""
    path = home / MCP_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the MCP list: {error}") from error
    try:
        table = parse_table_text(text, path, MCP_COLUMNS)
    except TableError as error:
        raise ConfigError(f"MCP list {error}") from error
    drafts: dict[str, _Draft] = {}
    for index, cells in enumerate(table.rows):
        _add_row(drafts, cells, path, table.row_line_number(index))
    return [
        McpRecipe(
            name=name,
            applies_when=draft.applies_when,
            timing=draft.timing,
            steps=[draft.steps[order] for order in sorted(draft.steps)],
        )
        for name, draft in drafts.items()
    ]


def _add_row(drafts: dict[str, _Draft], cells: list[str], path: Path, line: int) -> None:
    """Add one table row to its recipe, or raise ConfigError naming the file and line."""
    name, applies_when, timing_text, order_text, tool_type, purpose = (c.strip() for c in cells)

    def fail(problem: str) -> ConfigError:
        return ConfigError(f"{path}:{line}: {problem}")

    if not name:
        raise fail("mcp_name is empty")
    if timing_text.upper() not in Timing.__members__:
        raise fail(f"timing {timing_text!r} must be PRE or POST")
    timing = Timing(timing_text.upper())
    if not order_text.isdigit() or int(order_text) < 1:
        raise fail(f"step_order {order_text!r} must be a whole number from 1")
    if not _TOOL_TYPE.fullmatch(tool_type):
        raise fail(f"tool_type {tool_type!r} must name exactly one tool type (like web_search)")
    if not purpose:
        raise fail("step_purpose is empty")
    draft = drafts.setdefault(name, _Draft(applies_when, timing, line))
    if draft.timing is not timing or draft.applies_when != applies_when:
        raise fail(
            f"recipe {name!r} must keep the timing and applies_when of its first row "
            f"(line {draft.line})"
        )
    order = int(order_text)
    if order in draft.steps:
        raise fail(f"recipe {name!r} has step_order {order} twice")
    draft.steps[order] = McpStep(tool_type=tool_type, purpose=purpose)


def keywords(recipe: McpRecipe) -> list[str]:
    """The recipe's `applies_when` keywords, trimmed and case-folded."""
    return [word.strip().casefold() for word in recipe.applies_when.split(",") if word.strip()]


def match_mcp(recipes: list[McpRecipe], text: str, timing: Timing) -> McpRecipe | None:
    """The recipe of this timing with the most keywords found in `text`; ties go to file order."""
    folded = text.casefold()
    best: McpRecipe | None = None
    best_hits = 0
    for recipe in recipes:
        if recipe.timing is not timing:
            continue
        hits = sum(1 for word in keywords(recipe) if word in folded)
        if hits > best_hits:
            best, best_hits = recipe, hits
    return best
