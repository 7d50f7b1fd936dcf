"""Computed facts equal a standard-library computation, and say so in English and Korean."""

from __future__ import annotations

import csv
import math
import os
import tempfile
import threading
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_tabular_oracle import MEASURES, Gen, close, expected, tables

from multiverse.tabular import ComputeQuery, Fact, FactRefusal, compute, numbers_in
from multiverse.tabular.profiling import Analysis, analysed

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GRAINS = ("year", "quarter", "month", "day")
PER_YEAR = {"year": 1, "quarter": 4, "month": 12, "day": 365.25}


def _run(gen: Gen, query: dict[str, object]) -> Fact | FactRefusal:
    """Compute a fact of a generated table written to a temporary home."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        return compute(ComputeQuery.model_validate({"file": gen.write(root), **query}), root=root)


@SETTINGS
@given(gen=tables(), data=st.data())
def test_facts_over_time_equal_a_stdlib_computation(gen: Gen, data: st.DataObject) -> None:
    """first, last, min, max, mean, change, growth and cagr of the per-period values."""
    measure = data.draw(st.sampled_from(gen.measures))
    grain = data.draw(st.sampled_from(GRAINS[: GRAINS.index(gen.grain) + 1]))
    kind = data.draw(st.sampled_from(["first", "last", "min", "max", "mean", "change", "growth",
                                      "cagr"]))
    fact = _run(gen, {"kind": kind, "measure": measure, "frequency": grain})
    series = expected(gen, measure, grain, MEASURES[measure]).get("", {})
    labels = sorted(series)  # these labels sort in time order
    if not labels or (kind in ("change", "growth", "cagr") and len(labels) < 2):
        assert isinstance(fact, FactRefusal)
        return
    first, last = series[labels[0]], series[labels[-1]]
    if kind in ("growth", "cagr") and (first == 0 or (kind == "cagr" and min(first, last) <= 0)):
        assert isinstance(fact, FactRefusal)
        return
    assert isinstance(fact, Fact), fact
    values = list(series.values())
    span = f"{labels[0]}–{labels[-1]}"
    want = {
        "first": lambda: (first, labels[0]), "last": lambda: (last, labels[-1]),
        "min": lambda: (min(values), min(labels, key=lambda x: (series[x], x))),
        "max": lambda: (max(values), min(labels, key=lambda x: (-series[x], x))),
        "mean": lambda: (math.fsum(values) / len(values), span),
        "change": lambda: (last - first, span),
        "growth": lambda: ((last - first) / abs(first) * 100, ""),
        "cagr": lambda: (_cagr(first, last, labels, grain), ""),
    }[kind]()
    assert close(fact.value, want[0]), (fact.value, want[0])
    if kind not in ("growth", "cagr"):
        assert fact.period == (want[1] if len(labels) > 1 or kind != "mean" else labels[0])
    assert fact.figures == numbers_in(fact.sentence("en"))
    assert all(figure in fact.sentence("ko") for figure in fact.figures)


def _cagr(first: float, last: float, labels: list[str], grain: str) -> float:
    """Compound annual growth over the periods between the first and last label."""
    steps = _steps(labels[0], labels[-1], grain)
    return ((last / first) ** (PER_YEAR[grain] / steps) - 1) * 100


def _steps(start: str, end: str, grain: str) -> float:
    """Periods from one label to another, from their text."""
    import datetime as dt

    if grain == "year":
        return int(end) - int(start)
    if grain == "quarter":
        return (int(end[:4]) - int(start[:4])) * 4 + int(end[-1]) - int(start[-1])
    if grain == "month":
        return (int(end[:4]) - int(start[:4])) * 12 + int(end[5:]) - int(start[5:])
    return (dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days


@SETTINGS
@given(gen=tables(long=True), data=st.data())
def test_the_largest_and_fastest_growing_category_equal_a_stdlib_computation(
        gen: Gen, data: st.DataObject) -> None:
    """The largest category in the last period, the fastest growing from the first to the last."""
    measure = data.draw(st.sampled_from(gen.measures))
    kind = data.draw(st.sampled_from(["largest", "smallest", "fastest_growing"]))
    fact = _run(gen, {"kind": kind, "measure": measure, "category": "region"})
    how = MEASURES[measure]
    overall = expected(gen, measure, gen.grain, how).get("", {})
    split = expected(gen, measure, gen.grain, how, by_category=True)
    if not overall:
        assert isinstance(fact, FactRefusal)
        return
    first, last = min(overall), max(overall)
    if kind == "fastest_growing":
        growth = {c: (s[last] - s[first]) / s[first] * 100 for c, s in split.items()
                  if first in s and last in s and s[first] > 0 and first != last}
        if not growth:
            assert isinstance(fact, FactRefusal)
            return
        best = max(growth.values())
        assert isinstance(fact, Fact) and close(fact.value, best)
        assert close(growth[str(fact.category)], best)
        _said_as_compared(fact, len(growth))
        return
    at_last = {c: s[last] for c, s in split.items() if last in s}
    pick = (max if kind == "largest" else min)(at_last.values())
    assert isinstance(fact, Fact) and fact.period == last
    assert close(fact.value, pick) and close(at_last[str(fact.category)], pick)
    _said_as_compared(fact, len(at_last))


def _said_as_compared(fact: Fact, categories: int) -> None:
    """A ranking says how many categories it compared; of one, it says it is the only one."""
    assert fact.among == categories
    alone = [" is the only " in fact.sentence("en"), "하나뿐입니다" in fact.sentence("ko")]
    assert alone == [categories == 1] * 2, (fact.sentence("en"), fact.sentence("ko"))


def _table(root: Path, later: int = 0) -> Path:
    """A quarterly rate over two years (and `later` years of 7.5 % after them)."""
    (root / "assets").mkdir(parents=True, exist_ok=True)
    path = root / "assets" / "x.csv"
    rates = {1982: (8.8, 9.4, 9.9, 10.7), 1983: (10.4, 10.1, 9.4, 8.5),
             **{1984 + i: (7.5,) * 4 for i in range(later)}}
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["year", "quarter", "unemployment_rate"])
        for year, values in rates.items():
            for quarter, rate in enumerate(values, start=1):
                writer.writerow([year, quarter, rate])
    return path


def test_a_yearly_mean_is_said_in_both_languages(tmp_path: Path) -> None:
    """The mean of 1982's quarters prints 9.70 % with its rows, in English and Korean."""
    _table(tmp_path)
    fact = compute(ComputeQuery(kind="max", file="assets/x.csv", measure="unemployment_rate",
                                frequency="year",), root=tmp_path)
    assert isinstance(fact, Fact)
    assert fact.sentence("en") == ("Mean unemployment rate was highest in 1982, at 9.70 "
                                   "(assets/x.csv rows 2–5).")
    mean = compute(ComputeQuery(kind="mean", file="assets/x.csv", measure="unemployment_rate",
                                start="1982", end="1982", frequency="year"), root=tmp_path)
    assert isinstance(mean, Fact) and mean.figures == ["9.70", "1982", "2", "5"]
    assert mean.sentence("en") == "Mean unemployment rate was 9.70 in 1982 (assets/x.csv rows 2–5)."
    assert mean.sentence("ko") == ("1982년 평균 unemployment rate는 9.70이었습니다 "
                                   "(assets/x.csv 2–5행).")


def test_cells_keep_their_precision_and_changes_their_sign(tmp_path: Path) -> None:
    """A cell prints as written (10.7); a change is signed; its percent is computed."""
    _table(tmp_path)
    peak = compute(ComputeQuery(kind="max", file="assets/x.csv", measure="unemployment_rate"),
                   root=tmp_path)
    assert isinstance(peak, Fact) and peak.period == "1982Q4" and "10.7 " in peak.sentence("en")
    change = compute(ComputeQuery(kind="change", file="assets/x.csv", measure="unemployment_rate"),
                     root=tmp_path)
    assert isinstance(change, Fact) and change.percent == pytest.approx(-0.3 / 8.8 * 100)
    # a rate's change is said in its own terms: never as a percent change of a rate
    assert change.sentence("en") == (
        "Unemployment rate went from 8.8 in 1982Q1 to 8.5 in 1983Q4, a change of -0.3 "
        "(assets/x.csv 2 of rows 2–9).")


def test_refusals_name_the_problem(tmp_path: Path) -> None:
    """A finer grain than the data, a missing measure and a growth from one period refuse."""
    _table(tmp_path)
    for query, words in [
        ({"kind": "max", "measure": "unemployment_rate", "frequency": "month"}, "no month"),
        ({"kind": "max", "measure": "jobs"}, "no column 'jobs'"),
        ({"kind": "growth", "measure": "unemployment_rate", "start": "1982Q2", "end": "1982Q2"},
         "needs two periods"),
    ]:
        refusal = compute(ComputeQuery.model_validate({"file": "assets/x.csv", **query}),
                          root=tmp_path)
        assert isinstance(refusal, FactRefusal) and words in refusal.reason, refusal


def test_yearly_sums_over_whole_years_only() -> None:
    """A monthly amount whose data starts in July and ends in April: asked over whole
    periods (as the standard facts ask), its yearly sums leave out the two years held in part
    (six months are no year), and the first value said is that of a whole year, never "the
    data's first"."""
    corpus = Path(__file__).resolve().parent / "corpus" / "tables"
    with (corpus / "economics.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    sums: dict[int, float] = {}
    for row in rows:
        sums[int(row["date"][:4])] = sums.get(int(row["date"][:4]), 0.0) + float(row["pce"])
    months = Counter(int(row["date"][:4]) for row in rows)
    whole = sorted(year for year, count in months.items() if count == 12)
    description = [(corpus / "economics.md").read_text(encoding="utf-8")]

    def asked(kind: str, whole_periods: bool) -> Fact:
        query = ComputeQuery(kind=kind, file="economics.csv", measure="pce", frequency="year",
                             aggregation="sum", whole_periods=whole_periods)  # type: ignore[arg-type]
        fact = compute(query, root=corpus, descriptions=description)
        assert isinstance(fact, Fact), fact
        return fact

    change = asked("change", True)
    assert (change.start, change.end) == (str(whole[0]), str(whole[-1]))  # 1968, 2014
    assert change.start_value == pytest.approx(sums[whole[0]])
    assert change.end_value == pytest.approx(sums[whole[-1]])
    first = asked("first", True)
    assert first.period == str(whole[0]) and "first period of the data" not in first.sentence("en")
    # asked as the data has it, the partial first year is the first
    assert asked("first", False).period == str(min(sums))


def test_a_table_rewritten_in_the_same_tick_is_read_again_and_no_thread_shares_a_reading(
    tmp_path: Path,
) -> None:
    """The readings a thread keeps are keyed by the table's bytes, not its clock: a table
    rewritten at the same size and modification time gives the new value; another thread reads
    the table for itself."""
    path = tmp_path / "sales.csv"
    path.write_text("year,revenue\n2020,10\n2021,20\n", encoding="utf-8")
    query = ComputeQuery(kind="last", file="sales.csv", measure="revenue", frequency="year")
    before = compute(query, root=tmp_path)
    stamp = path.stat()
    path.write_text("year,revenue\n2020,10\n2021,30\n", encoding="utf-8")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert path.stat().st_size == stamp.st_size and path.stat().st_mtime_ns == stamp.st_mtime_ns
    after = compute(query, root=tmp_path)
    assert isinstance(before, Fact) and isinstance(after, Fact)
    assert (before.value, after.value) == (20, 30)

    mine = analysed(path, root=tmp_path)
    assert analysed(path, root=tmp_path) is mine  # this thread reads it once
    theirs: list[Analysis] = []
    reader = threading.Thread(target=lambda: theirs.append(analysed(path, root=tmp_path)))
    reader.start()
    reader.join()
    assert theirs[0] is not mine and theirs[0].profile == mine.profile
