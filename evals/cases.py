"""The fixed set of evaluation cases: a request and the fixture assets it works on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "assets"
ASSETS = ("market_report_2024.md", "korea_market_ko.md", "quarterly_revenue.csv")


@dataclass(frozen=True)
class Case:
    """One request run end to end in a fresh home."""

    name: str
    request: str
    assets: tuple[str, ...] = ASSETS
    # The CSV whose countries and revenue values the chart must show, when a chart is asked for.
    chart_csv: str | None = None
    # A case of tests/corpus/requests.yaml (its id, assets and expectations); None: a fixed case.
    corpus: dict[str, Any] | None = None

    def asset_paths(self) -> list[Path]:
        """The fixture files copied into the case's assets/ (a corpus case lays out its own)."""
        return [FIXTURES / name for name in self.assets]


CASES: dict[str, Case] = {
    case.name: case
    for case in (
        Case(
            "memo-en",
            "Analyse the market reports in assets/ and write a two-page market-entry memo for "
            "an e-bike investor, with a chart of revenue by country.",
            chart_csv="quarterly_revenue.csv",
        ),
        # Over two pages, so the model plans it (a phase's stages and tasks in one call).
        Case(
            "report-long",
            "Analyse the market reports in assets/ and write a three-page market report for "
            "an e-bike investor, with a chart of revenue by country.",
            chart_csv="quarterly_revenue.csv",
        ),
        Case(
            "memo-ko",
            "assets/의 보고서를 바탕으로 한국 전기자전거 시장 진출 전략 메모를 "
            "한 페이지로 작성해 주세요.",
        ),
        Case(
            "chart-note",
            "Make a chart of revenue by country from assets/quarterly_revenue.csv and write a "
            "short note on what it shows.",
            chart_csv="quarterly_revenue.csv",
        ),
    )
}


def corpus_case(found: dict[str, Any]) -> Case:
    """A case of the corpus run end to end: its request, its files, its expectations."""
    return Case(found["id"], found["request"], assets=(), corpus=found)


def select(names: str | None) -> list[Case]:
    """The cases named in a comma-separated list (all fixed ones when empty), fixed case names
    and corpus case ids mixed; unknown ones: ValueError."""
    if not names:
        return list(CASES.values())
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    corpus: dict[str, dict[str, Any]] = {}
    if any(name not in CASES for name in wanted):
        # Read only when asked for: the corpus module imports the whole engine.
        from evals.corpus import cases

        corpus = {found["id"]: found for found in cases()}
    unknown = [name for name in wanted if name not in CASES and name not in corpus]
    if unknown:
        raise ValueError(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(CASES)} "
                         "and the ids of tests/corpus/requests.yaml")  # fmt: skip
    return [CASES[name] if name in CASES else corpus_case(corpus[name]) for name in wanted]
