"""The standard facts of a table for a brief: per main measure its first and last values, its
extremes, its change and annual growth, its period means, and for long tables the largest and
the fastest-growing category."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from multiverse.tabular.chartplan import native_grain
from multiverse.tabular.compute import compute_in
from multiverse.tabular.dataset import load
from multiverse.tabular.models import ComputeKind, ComputeQuery, Fact, Frequency, TableProfile
from multiverse.tabular.profiling import Analysis
from multiverse.tabular.timelabels import RANK, parse_label

MAIN_MEASURES = 3
_DECADES_AFTER = 20  # years: a longer span gets a mean per decade, a shorter one a mean overall
_YEARLY_AFTER = 3  # years: finer data spanning more are combined per year first


def facts(profile_or_path: TableProfile | Path, *, root: Path, descriptions: Sequence[str] = (),
          measures: Sequence[str] | None = None, category: str | None = None,
          limit: int = 12) -> list[Fact]:
    """The standard facts of a table for a brief, the most telling first, at most `limit`."""
    if isinstance(profile_or_path, TableProfile):
        analysis = load(profile_or_path.file, profile_or_path.sheet, root, descriptions)
    else:
        analysis = load(str(profile_or_path), None, root, descriptions)
    chosen = list(measures) if measures else main_measures(analysis)
    lists = [_measure_facts(analysis, measure, category) for measure in chosen]
    picked: list[tuple[int, int, Fact]] = []
    for rank in range(max((len(found) for found in lists), default=0)):
        for index, found in enumerate(lists):
            if rank < len(found) and len(picked) < limit:
                picked.append((index, rank, found[rank]))
    return [fact for _, _, fact in sorted(picked, key=lambda item: item[:2])]


def main_measures(analysis: Analysis) -> list[str]:
    """The measures a brief speaks of: a wide table's values, then measures whose kind is
    known, in table order."""
    profile = analysis.profile
    wide = profile.wide
    chosen: list[str] = [wide.name] if wide is not None else []
    grouped = set(wide.columns) if wide is not None else set()
    measures = [c for c in profile.role("measure") if c.name not in grouped]
    assumed = [c for c in measures if any(n.startswith(f"aggregation of {c.name} ")
                                           for n in profile.notes)]
    chosen += [c.name for c in measures if c not in assumed] + [c.name for c in assumed]
    return chosen[:MAIN_MEASURES]


def _grain(analysis: Analysis) -> Frequency | None:
    """Yearly when finer data span several years, else the data's own grain."""
    native = native_grain(analysis)
    axis = analysis.profile.time
    if native is None or axis is None:
        return None
    first, last = parse_label(axis.first), parse_label(axis.last)
    if RANK[native] > RANK["year"] and first and last and last.year - first.year >= _YEARLY_AFTER:
        return "year"
    return native if native in ("year", "quarter", "month", "day") else None  # type: ignore[return-value]


def _measure_facts(analysis: Analysis, measure: str, category: str | None) -> list[Fact]:
    """One measure's facts, the most telling first."""
    profile = analysis.profile
    wide = profile.wide
    grain = _grain(analysis)
    by_column = wide is not None and wide.axis == "category" and measure == wide.name
    has_categories = bool(profile.role("category")) and (profile.shape == "long" or grain is None)
    kinds: list[ComputeKind] = []
    if not by_column and grain is not None:
        kinds += ["last", "max", "min", "change", "cagr", "first"]
    if by_column or (has_categories and (category is None or analysis.profile.column(category))):
        kinds += ["largest", "fastest_growing"] if grain is not None else ["largest", "smallest"]
    queries = [ComputeQuery(kind=kind, file=profile.file, sheet=profile.sheet, measure=measure,
                            category=category or (wide.name if by_column and wide else None),
                            frequency=grain) for kind in kinds]
    if not by_column and grain is not None:
        queries += _means(analysis, measure, category, grain)
    found: list[Fact] = []
    for query in queries:
        fact = compute_in(analysis, query)
        if isinstance(fact, Fact):
            found.append(fact)
    return found


def _means(analysis: Analysis, measure: str, category: str | None,
           grain: Frequency) -> list[ComputeQuery]:
    """Means per decade over a long span, else one mean over the whole span."""
    axis = analysis.profile.time
    assert axis is not None
    first, last = parse_label(axis.first), parse_label(axis.last)
    profile = analysis.profile
    base = {"kind": "mean", "file": profile.file, "sheet": profile.sheet, "measure": measure,
            "category": category, "frequency": grain}
    if first is None or last is None or last.year - first.year <= _DECADES_AFTER:
        return [ComputeQuery.model_validate(base)]
    return [ComputeQuery.model_validate({**base, "start": str(max(decade, first.year)),
                                         "end": str(min(decade + 9, last.year))})
            for decade in range(first.year // 10 * 10, last.year + 1, 10)]
