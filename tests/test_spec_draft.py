"""The spec as a model fills it: a schema made for one home, whose enums are its files and each
table's own columns, so that an answer naming a column that does not exist is refused before
the validator; and the answer converted into a spec the validator checks."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from multiverse.gateway.calls import answer_schema
from multiverse.home import Home, init_home
from multiverse.spec import HomeScan, check_spec, scan_home
from multiverse.spec.draft import describe_home, draft_model, draft_of_spec, spec_of_draft
from offline import read_request


@pytest.fixture
def scanned(tmp_path: Path) -> Iterator[tuple[Home, HomeScan]]:
    home = Home(tmp_path / "home")
    init_home(home)
    (home.assets / "sales.csv").write_text(
        "year,region,sales\n2020,North,10\n2020,South,7\n2021,North,12\n2021,South,9\n",
        encoding="utf-8",
    )
    (home.assets / "rates.csv").write_text(
        "quarter,rate\n2020Q1,1.5\n2020Q2,1.25\n2020Q3,1.0\n", encoding="utf-8"
    )
    (home.assets / "notes.md").write_text("# Notes\n\nSales are in millions of dollars.\n")
    yield home, scan_home(home)


def test_the_schema_names_only_the_homes_files_and_each_tables_own_columns(
    scanned: tuple[Home, HomeScan],
) -> None:
    _home, scan = scanned
    schema = json.dumps(answer_schema(draft_model(scan)))
    for path in ("assets/sales.csv", "assets/rates.csv", "assets/notes.md"):
        assert f'"{path}"' in schema
    model = draft_model(scan)
    chart = {"file": "assets/rates.csv", "measures": ["sales"], "phrase": "sales by year"}
    with pytest.raises(ValidationError):
        model.model_validate({"mode": "run", "charts": [chart]})  # sales is not a rates column
    ok = model.model_validate(
        {"mode": "run", "charts": [{**chart, "file": "assets/sales.csv", "dimension": "region"}]}
    )
    assert ok.model_dump()["charts"][0]["dimension"] == "region"
    with pytest.raises(ValidationError):
        model.model_validate({"mode": "run", "left_out": [{"files": ["assets/other.csv"]}]})


def test_an_answer_becomes_a_spec_the_validator_checks(scanned: tuple[Home, HomeScan]) -> None:
    home, scan = scanned
    request = "Chart sales by region, leave out rates.csv, and what was North's sales in 2021?"
    rules = read_request(request, [], scan)
    answer = draft_model(scan).model_validate(
        {
            "mode": "run",
            "language": "en",
            "left_out": [{"phrase": "leave out rates.csv", "files": ["assets/rates.csv"]}],
            "charts": [
                {
                    "phrase": "Chart sales by region",
                    "file": "assets/sales.csv",
                    "measures": ["sales"],
                    "dimension": "region",
                    "filters": [{"column": "region", "values": ["West"]}],
                }
            ],
            "questions": [
                {
                    "phrase": "North's sales in 2021",
                    "file": "assets/sales.csv",
                    "row": [
                        {"column": "region", "values": ["North"]},
                        {"column": "year", "values": ["2021"]},
                    ],
                    "column": "sales",
                }
            ],
        }
    )
    spec = check_spec(spec_of_draft(answer, request, scan, rules), scan, home.root)
    assert spec.excluded() == {"assets/rates.csv"}
    assert "assets/rates.csv" not in spec.sources
    (chart,) = spec.charts
    assert chart.reading.origin == "model"
    assert not chart.drawable and "West" in chart.reason  # no such region: said, not drawn
    (question,) = spec.questions
    assert question.answerable and "12" in question.answer and "row" in question.answer


def test_the_rules_reading_is_a_valid_answer_and_the_home_is_described(
    scanned: tuple[Home, HomeScan],
) -> None:
    """The rules' reading, given to the model as its starting point, fits the schema."""
    _home, scan = scanned
    rules = read_request("Chart the total sales by region in 2021. Leave out rates.csv.", [], scan)
    draft = draft_model(scan).model_validate(draft_of_spec(rules))
    assert draft.model_dump()["charts"][0]["dimension"] == "region"
    described = describe_home(scan)
    assert "`sales`: measure" in described and "values: North, South" in described


CORPUS = Path(__file__).resolve().parent / "corpus" / "tables"
# The fields of a chart, a lookup, a computation and a filter that name a file or a column.
NAMING = ("file", "measures", "measure", "column", "category", "series_by", "dimension")


def _free_text(node: dict[str, Any]) -> bool:
    """Whether a schema node lets a model write any text (no enum, no const)."""
    if "enum" in node or "const" in node:
        return False
    if "anyOf" in node:
        return any(_free_text(branch) for branch in node["anyOf"])
    if node.get("type") == "array":
        return _free_text(node.get("items", {}))
    return node.get("type") == "string"


def _shapes(node: Any) -> Iterator[dict[str, Any]]:
    """Every object of a schema that names a file or a column (a chart, a question, a filter)."""
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict) and ({"file", "column"} & properties.keys()):
            yield properties
        for value in node.values():
            yield from _shapes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _shapes(value)


@pytest.fixture(scope="module")
def corpus_scan(tmp_path_factory: pytest.TempPathFactory) -> HomeScan:
    """A home whose assets are every table of the corpus."""
    home = Home(tmp_path_factory.mktemp("draft") / "home")
    init_home(home)
    for table in sorted(CORPUS.glob("*.csv")):
        shutil.copyfile(table, home.assets / table.name)
    return scan_home(home)


@pytest.mark.parametrize("name", sorted(path.name for path in CORPUS.glob("*.csv")))
def test_no_field_that_names_a_column_takes_free_text_on_any_real_table(
    corpus_scan: HomeScan, name: str
) -> None:
    """Over every real table of the corpus, each field of a chart or a question that names a
    file or a column is one of the table's own names (or null): a table without a label column
    offers no category and no series, so a model cannot put "time" there (the local model did,
    on us_marriages_divorces.csv, and both its questions went unanswered)."""
    (item,) = [table for table in corpus_scan.tables() if table.path == f"assets/{name}"]
    schema = answer_schema(draft_model(corpus_scan, tables=[item]))
    shapes = list(_shapes(schema))
    assert len(shapes) >= 4  # a chart, its filter, a lookup, a computation
    for properties in shapes:
        for field, node in properties.items():
            if field in NAMING:
                assert not _free_text(node), (field, node)
    labels = [c.name for c in item.profile.columns if c.role in ("category", "identifier")]  # type: ignore[union-attr]
    model = draft_model(corpus_scan, tables=[item])
    measure = next(c.name for c in item.profile.columns if c.role == "measure")  # type: ignore[union-attr]
    question = {"file": item.path, "kind": "first", "measure": measure, "category": "time"}
    if "time" not in labels:
        with pytest.raises(ValidationError):
            model.model_validate({"mode": "run", "questions": [question]})
