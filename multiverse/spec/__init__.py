"""The request spec (SPEC §6a): the run's one understanding of the request and of every MODIFY.

A typed, versioned object, filled by rules offline (`offline`) or by a model through a JSON
schema whose enums are the home's own files and columns (`planner.model`), checked against the
files by one validator (`check_spec`), rendered as the proposal's "How I understood the
request", frozen by CONFIRM and read by every later task. The home is looked at before the
proposal (`scan_home`: the files, their kinds and titles, each table's columns, units and
period), so that the proposal can name sources and chart data.

The plain data loads light (every role and the CLI read it); the scan and the validator, which
read tables, load on their first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from multiverse.spec.asked import (
    DEFAULT_WORDS,
    LANGUAGES,
    SHORT_KINDS,
    WORDS_PER_PAGE,
    asked_words,
    default_words,
    languages_asked,
)
from multiverse.spec.brief import run_prefix, with_prefix
from multiverse.spec.model import (
    SPEC_FILE,
    SPEC_VERSION,
    Aggregation,
    Change,
    Chart,
    ChartAsk,
    ChartKind,
    Computation,
    ComputeKind,
    FileSet,
    FormatRule,
    FormatRuleKind,
    Frequency,
    Lookup,
    Mode,
    Question,
    Reading,
    RequestSpec,
    Research,
)

if TYPE_CHECKING:
    from multiverse.home import Home
    from multiverse.spec.draft import describe_home, draft_model, draft_of_spec, spec_of_draft
    from multiverse.spec.scan import Guideline, HomeScan, ScannedFile

_SCAN_NAMES = ("Guideline", "HomeScan", "ScannedFile")
# the spec as a model fills it: its schema made for one home, and the answer made a spec
_DRAFT_NAMES = ("describe_home", "draft_model", "draft_of_spec", "spec_of_draft")


def __getattr__(name: str) -> object:
    """The scan's data types and the model's draft, loaded on first use (PEP 562)."""
    if name in _SCAN_NAMES:
        from multiverse.spec import scan

        return getattr(scan, name)
    if name in _DRAFT_NAMES:
        from multiverse.spec import draft

        return getattr(draft, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def scan_home(home: Home, search_provider: str | None = None) -> HomeScan:
    """Look at the home's inputs before a proposal (`multiverse.spec.scan`)."""
    from multiverse.spec.scan import scan_home as scan

    return scan(home, search_provider)


def check_spec(spec: RequestSpec, scan: HomeScan, root: Path) -> RequestSpec:
    """Check every item of a spec against the files (`multiverse.spec.check`)."""
    from multiverse.spec.check import check_spec as check

    return check(spec, scan, root)


__all__ = [
    "DEFAULT_WORDS",
    "LANGUAGES",
    "SHORT_KINDS",
    "SPEC_FILE",
    "SPEC_VERSION",
    "WORDS_PER_PAGE",
    "Aggregation",
    "Change",
    "Chart",
    "ChartAsk",
    "ChartKind",
    "Computation",
    "ComputeKind",
    "FileSet",
    "FormatRule",
    "FormatRuleKind",
    "Frequency",
    "Guideline",
    "HomeScan",
    "Lookup",
    "Mode",
    "Question",
    "Reading",
    "RequestSpec",
    "Research",
    "ScannedFile",
    "asked_words",
    "check_spec",
    "default_words",
    "describe_home",
    "draft_model",
    "draft_of_spec",
    "languages_asked",
    "run_prefix",
    "scan_home",
    "spec_of_draft",
    "with_prefix",
]
