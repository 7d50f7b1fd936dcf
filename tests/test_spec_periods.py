"""A period the request never stated (a model's guess) is checked against the table: one the
table does not hold is not used, the question is answered over the table's own periods, and
the proposal says so; a period the person did state is kept, and said as unanswerable when the
table lacks it. Checked over every real table of the corpus with a time axis (issue 26)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from multiverse.home import Home, init_home
from multiverse.spec import (
    Computation,
    HomeScan,
    Question,
    Reading,
    RequestSpec,
    check_spec,
    scan_home,
)
from multiverse.tabular import ComputeQuery, Fact, compute

CORPUS = Path(__file__).parent / "corpus"
MANIFEST: dict[str, Any] = yaml.safe_load((CORPUS / "tables.yaml").read_text(encoding="utf-8"))[
    "tables"
]
TIMED = sorted(name for name, meta in MANIFEST.items() if meta.get("time"))


@pytest.fixture(scope="module")
def corpus_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Home, HomeScan]]:
    """A home whose assets are the corpus's timed tables with their descriptions."""
    home = Home(tmp_path_factory.mktemp("periods") / "home")
    init_home(home)
    for name in TIMED:
        for key in ("file", "description"):
            target = home.assets / MANIFEST[name][key]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(CORPUS / MANIFEST[name][key], target)
    yield home, scan_home(home)


def _measure(meta: dict[str, Any]) -> str:
    return next(column["name"] for column in meta["columns"] if column["role"] == "measure")


def _first_year(meta: dict[str, Any]) -> int:
    """The year of the table's first period, as the manifest writes it ("1629", "Jan 1998")."""
    found = re.search(r"\d{4}", str(meta["time"]["first"]))
    assert found is not None
    return int(found.group())


def _spec(request: str, ask: Computation) -> RequestSpec:
    reading = Reading(phrase=f"how did {ask.measure} change", origin="model")
    return RequestSpec(request=request, questions=[Question(reading=reading, compute=ask)])


def _whole(home: Home, ask: Computation, descriptions: list[str]) -> Fact | None:
    query = ComputeQuery(kind=ask.kind, file=ask.file, measure=ask.measure)
    found = compute(query, root=home.root, descriptions=descriptions)
    return found if isinstance(found, Fact) else None


def test_a_guessed_period_the_table_lacks_is_dropped_and_said(
    corpus_home: tuple[Home, HomeScan],
) -> None:
    """Over every timed corpus table: a change asked over years forty years before its data,
    years the request never names, is answered over the table's own periods, and a line of
    the proposal names the years left unused and the table."""
    home, scan = corpus_home
    repaired = 0
    for name in TIMED:
        meta = MANIFEST[name]
        file = f"assets/{meta['file']}"
        first = _first_year(meta)
        guess = Computation(
            kind="change", file=file, measure=_measure(meta),
            start=str(first - 40), end=str(first - 39),
        )  # fmt: skip
        spec = check_spec(_spec(f"How did {guess.measure} change?", guess), scan, home.root)
        (question,) = spec.questions
        descriptions = [(home.root / path).read_text("utf-8") for path in scan.companions(file)
                        if path.endswith(".md")]  # fmt: skip
        whole = _whole(home, guess, descriptions)
        if whole is None:  # the table gives no change at all: nothing to answer it over
            assert not question.answerable, name
            continue
        repaired += 1
        assert question.answerable, name
        assert question.answer == whole.sentence("en"), name
        assert question.compute is not None
        assert (question.compute.start, question.compute.end) == (None, None), name
        (note,) = spec.not_understood
        assert str(first - 40) in note.phrase and str(first - 39) in note.phrase, name
        assert file in note.phrase and note.origin == "model", name
        assert check_spec(spec, scan, home.root) == spec, name  # idempotent: said once
    assert repaired >= len(TIMED) - 2, (repaired, len(TIMED))


def test_a_period_the_person_stated_is_kept_and_said_unanswerable(
    corpus_home: tuple[Home, HomeScan],
) -> None:
    """The same years, written in the request: never replaced, the question is said as
    unanswerable with the table's reason, and nothing is noted as dropped."""
    home, scan = corpus_home
    for name in TIMED:
        meta = MANIFEST[name]
        first = _first_year(meta)
        asked = Computation(
            kind="change", file=f"assets/{meta['file']}", measure=_measure(meta),
            start=str(first - 40), end=str(first - 39),
        )  # fmt: skip
        request = f"How did {asked.measure} change from {first - 40} to {first - 39}?"
        spec = check_spec(_spec(request, asked), scan, home.root)
        (question,) = spec.questions
        assert not question.answerable and question.reason, name
        assert question.compute == asked, name
        assert spec.not_understood == [], name


@pytest.mark.parametrize(
    ("rows", "start", "end"),
    [
        (["2019,5", "2020,7", "2021,9", "2022,8", "2023,12"], "2020", "2022"),
        (["2023Q1,5", "2023Q2,7", "2023Q3,9", "2023Q4,8", "2024Q1,12"], "2023Q2", "2023Q4"),
        (["2021-01,5", "2021-02,7", "2021-03,9", "2021-04,8", "2021-05,12"], "2021-02", "2021-04"),
    ],
)
def test_a_guessed_period_the_table_holds_is_kept(
    tmp_path: Path, rows: list[str], start: str, end: str
) -> None:
    """A period nobody stated but inside the table's data is the model's reading, kept as it
    is (the answer states its periods for the person to check) for years, quarters and months."""
    home = Home(tmp_path / "home")
    init_home(home)
    (home.assets / "t.csv").write_text("period,value\n" + "\n".join(rows) + "\n", "utf-8")
    scan = scan_home(home)
    asked = Computation(kind="change", file="assets/t.csv", measure="value", start=start, end=end)
    spec = check_spec(_spec("How did the value change?", asked), scan, home.root)
    (question,) = spec.questions
    assert question.answerable and question.compute == asked
    assert start in question.answer and end in question.answer
    assert spec.not_understood == []
