"""The deliverable of a confirmed spec, published by the builtin Executor over corpus tables: the
answers first, the facts, the charts, the passages; files left out nowhere; the requester's
language; the format rules; every number traced."""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from executor.builtin import BuiltinExecutor
from executor.builtin.evidence import split_passages
from executor.builtin.relevance import rank, spec_query, subject_words, without_left_out
from executor.builtin.tablefacts import SourceTexts
from executor.builtin.text import words
from multiverse.home import Home
from multiverse.spec import FormatRule, Lookup, Question, Reading, RequestSpec, scan_home
from offline import read_request

from specbrief import (
    RUN,
    assignment,
    chart,
    checked,
    corpus_home,
    line_of,
    publish,
    rows,
    section,
)

WORDS_FILE = Path(__file__).resolve().parent.parent / "executor/builtin/brief_words.yaml"


def births_spec(home: Home, *rules: FormatRule, **fields: object) -> RequestSpec:
    """A request over the births table: a monthly chart and a lookup."""
    corpus_home(home, "births_1978")
    asked = chart("a chart of births month by month", "births_1978.csv", "births",
                  frequency="month")  # fmt: skip
    question = Question(
        reading=Reading(phrase="how many births were there on 4 July 1978?", origin="request"),
        lookup=Lookup(file="assets/births_1978.csv", selectors={"date": "1978-07-04"},
                      column="births"),
    )  # fmt: skip
    spec = RequestSpec(request="A note on US births in 1978 by month; how many births were "
                       "there on 4 July 1978?", charts=[asked], questions=[question],
                       format_rules=list(rules), **fields)  # type: ignore[arg-type]
    return checked(home, spec)


def rule(kind: str, phrase: str, value: str = "") -> FormatRule:
    """A format rule read from a guideline."""
    return FormatRule(rule=kind, value=value,  # type: ignore[arg-type]
                      reading=Reading(phrase=phrase, origin="guidelines/style.md"))


def test_the_answers_lead_then_facts_charts_and_sources_and_no_number_is_untraced(
    home: Home,
) -> None:
    """A lookup states its exact cell and row first; the chart's values are the sums of the
    days; every number of the brief is found in the sources or the computed facts."""
    published = publish(home, births_spec(home))
    report = published.report
    order = ["## Answers to your questions", "## Facts computed from the tables", "## Charts",
             "## Sources", "## What a model would add"]  # fmt: skip
    assert [report.index(h) for h in order] == sorted(report.index(h) for h in order)
    cell = next(r["births"] for r in rows("births_1978") if r["date"] == "1978-07-04")
    line = line_of("births_1978", "date", "1978-07-04")
    answer = section(report, "Answers to your questions")
    assert f"{int(cell):,}" in answer and f"assets/births_1978.csv row {line}" in answer
    sums: dict[str, int] = {}
    for row in rows("births_1978"):
        sums[row["date"][:7]] = sums.get(row["date"][:7], 0) + int(row["births"])
    charts = section(report, "Charts")
    for month, total in sums.items():
        assert f"| {month} | {total:,} |" in charts
    assert "![" in charts and (home.root / "outputs" / RUN / "report-chart-1.svg").is_file()
    assert "<svg" in published.html and "Numbers not found" not in report
    assert published.delivery == {"not_done": [], "untraced_numbers": 0}
    assert "- `assets/births_1978.csv`" in section(report, "Sources")
    assert report.startswith("> Produced offline by the multiverse builtin engine")


def test_a_cell_not_in_the_sources_is_said_with_the_nearest_cells(home: Home) -> None:
    """A lookup of a day the table lacks: not in the sources, the nearest cells given, and the
    question listed as not done."""
    corpus_home(home, "births_1978")
    question = Question(
        reading=Reading(phrase="births on 1 January 1979", origin="request"),
        lookup=Lookup(file="assets/births_1978.csv", selectors={"date": "1979-01-01"},
                      column="births"),
    )  # fmt: skip
    spec = checked(home, RequestSpec(request="Births on 1 January 1979?", questions=[question]))
    published = publish(home, spec)
    answer = section(published.report, "Answers to your questions")
    assert "not in the sources" in answer and "nearest" in answer
    assert any("births on 1 January 1979" in item for item in published.delivery["not_done"])
    assert published.delivery["untraced_numbers"] == 0


EXCLUDING = ("Summary of Arbuthnot's christening counts: how male and female christenings "
             "compare over time, with a chart of the ratio. Skip the sunspot stuff, it's "
             "unrelated.")  # fmt: skip


def test_a_file_left_out_appears_nowhere_and_its_words_rank_nothing(home: Home) -> None:
    """The sunspot files are left out: their name only in the line saying so, their title and
    content nowhere, and the clause that left them out changes no ranking."""
    corpus_home(home, "arbuthnot", "sunspots")
    scan = scan_home(home)
    spec = checked(home, read_request(EXCLUDING, [], scan))
    assert spec.excluded() == {"assets/sunspots.csv", "assets/sunspots.md"}
    published = publish(home, spec)
    title = (home.assets / "sunspots.md").read_text(encoding="utf-8").splitlines()[0][2:]
    body = [line for line in (home.assets / "sunspots.md").read_text("utf-8").splitlines()
            if len(line) > 40]  # fmt: skip
    for text in (published.report, published.html):
        assert title not in text
        assert not any(line in text for line in body)
        assert "Yearly (1700-2008) data on sunspots" not in text
    mentions = [line for line in published.report.splitlines() if "sunspot" in line.lower()]
    assert mentions == ["Left out as you asked: `assets/sunspots.csv`, `assets/sunspots.md`."]
    assert "sunspot" not in published.html.lower().replace(
        "left out as you asked: <code>assets/sunspots.csv</code>, "
        "<code>assets/sunspots.md</code>.", "")  # fmt: skip
    plain = spec.model_copy(update={"request": EXCLUDING.split(" Skip")[0]})
    assert subject_words(spec_query(spec)) == subject_words(spec_query(plain))
    texts = SourceTexts(home.root.resolve(), spec.sources)
    passages = split_passages("assets/arbuthnot.md", texts.text("assets/arbuthnot.md") or "")
    assert rank(passages, spec_query(spec)) == rank(passages, spec_query(plain))
    assert "sunspot" not in section(published.report, "What the sources say").split("_")[1]


def test_a_korean_exclusion_clause_names_no_measure_and_ranks_nothing(home: Home) -> None:
    """"…정리해 주세요. 태양 흑점 데이터는 제외해 주세요.": the clause's words (흑점: sunspots)
    go with it, its Korean ending included; the facts and the ranking are the request's."""
    corpus_home(home, "arbuthnot", "sunspots")
    scan = scan_home(home)
    asked = "아버스넛 출생 자료를 정리해 주세요. 태양 흑점 데이터는 제외해 주세요."
    spec = checked(home, read_request(asked, [], scan))
    assert spec.excluded() == {"assets/sunspots.csv", "assets/sunspots.md"}
    assert "흑점" not in without_left_out(spec, spec.request)
    assert "제외" not in without_left_out(spec, spec.request)
    plain = spec.model_copy(update={"request": asked.split(" 태양")[0]})
    assert subject_words(spec_query(spec)) == subject_words(spec_query(plain))
    published = publish(home, spec)
    mentions = [line for line in published.report.splitlines() if "sunspot" in line.lower()]
    assert mentions == ["요청에 따라 제외: `assets/sunspots.csv`, `assets/sunspots.md`."]


KOREAN = ("호주 주별 숙박 매출 추이를 보고 싶습니다. "
          "주마다 선을 하나씩 그려서 연도별 매출 합계 차트를 만들어 주세요.")


def test_a_korean_spec_gives_a_brief_whose_fixed_text_is_korean(home: Home) -> None:
    """Headings, labels, notices and the chart's title are Korean; no English fixed text."""
    corpus_home(home, "aus_accommodation")
    spec = checked(home, read_request(KOREAN, [], scan_home(home)))
    assert spec.language == "ko" and spec.charts and spec.charts[0].drawable
    published = publish(home, spec)
    report = published.report
    headings = [line for line in report.splitlines() if line.startswith("#")]
    assert headings and all(not re.search(r"[A-Za-z]", line) for line in headings), headings
    # File names, links and citations stay as they are; no English fixed text is left.
    said = re.sub(r"`[^`]*`|\]\([^)]*\)|\([^()]*행[^()]*\)", " ", report)
    for key, label in words("en").items():
        for piece in re.split(r"\{[a-z]+\}|[“”():.,;]", label):
            assert len(piece.strip()) < 6 or piece.strip() not in said, (key, piece)
    assert "Produced offline" not in report and "Produced offline" not in published.html
    assert words("ko")["notice"] in published.html and '<html lang="ko">' in published.html
    assert "연도" in section(report, "차트") and published.delivery["untraced_numbers"] == 0


def test_both_languages_have_the_same_fixed_text_and_no_number_in_it() -> None:
    """Every key of the brief's words exists in English and Korean, with the same fields."""
    loaded = yaml.safe_load(Path(WORDS_FILE).read_text(encoding="utf-8"))
    assert set(loaded["en"]) == set(loaded["ko"])
    for key in loaded["en"]:
        fields = set(re.findall(r"\{(\w+)\}", loaded["en"][key]))
        assert fields == set(re.findall(r"\{(\w+)\}", loaded["ko"][key])), key
        assert not re.search(r"(?<![\w.])\d", loaded["en"][key] + loaded["ko"][key]), key


def test_no_tables_gives_lists_and_bullets_give_bullets(home: Home) -> None:
    """`no_tables`: no markdown table anywhere (the chart's values become a list); `bullets`:
    the facts are bullet points; without the rules the values are a table."""
    plain = publish(home, births_spec(home))
    assert re.search(r"^\|.*\|$", plain.report, re.MULTILINE)
    shaped = publish(home, births_spec(home, rule("no_tables", "Never use tables."),
                                      rule("bullets", "Use bullet points.")))  # fmt: skip
    assert not re.search(r"^\s*\|.*\|\s*$", shaped.report, re.MULTILINE)
    assert "<table" not in shaped.html
    july = sum(int(r["births"]) for r in rows("births_1978") if r["date"].startswith("1978-07"))
    assert f"- 1978-07: {july:,}" in section(shaped.report, "Charts")
    facts = section(shaped.report, "Facts computed from the tables").strip().splitlines()
    assert facts and all(line.startswith("- ") for line in facts)
    assert shaped.delivery == {"not_done": [], "untraced_numbers": 0}


def test_a_rule_not_followed_is_listed_and_no_charts_draws_none(home: Home) -> None:
    """A word limit shorter than what the brief must carry is listed under "Not followed" and
    as not done; `no_charts` draws no chart and says why."""
    spec = births_spec(home, rule("max_words", "Never more than 40 words.", "40"),
                       rule("no_charts", "Do not use charts."))  # fmt: skip
    published = publish(home, spec)
    followed = section(published.report, "Not followed")
    assert "Never more than 40 words." in followed
    assert "was not drawn: the rule “Do not use charts.”" in section(published.report, "Charts")
    assert not list((home.root / "outputs" / RUN).glob("*.svg"))
    not_done = published.delivery["not_done"]
    assert any("Never more than 40 words." in item for item in not_done)
    assert any("a chart of births month by month" in item for item in not_done)
    assert published.delivery["untraced_numbers"] == 0


def test_the_length_asked_is_kept(home: Home) -> None:
    """A 300-word brief is within 15 % of 300 words."""
    corpus_home(home, "us_marriages_divorces", "gapminder")
    spec = checked(home, RequestSpec(
        request="How have marriage and divorce rates changed in the US?", length_words=300,
        charts=[chart("marriages", "us_marriages_divorces.csv", "Marriages_per_1000")]))
    report = publish(home, spec).report
    count = len([t for t in report.split() if re.search(r"\w", t)])
    assert 255 <= count <= 345, count
    assert "## What the sources say" in report


def test_a_pipe_among_the_sources_is_never_opened(home: Home) -> None:
    """A FIFO named like a table (listed among the sources) is skipped, not waited on."""
    corpus_home(home, "births_1978")
    os.mkfifo(home.assets / "feed.csv")
    spec = checked(home, RequestSpec(request="A note on births in 1978."))
    assert "assets/feed.csv" in spec.sources
    published = publish(home, spec)
    assert "feed.csv" not in published.report and published.delivery["untraced_numbers"] == 0


def test_the_tasks_purpose_steers_the_ranking_too(home: Home) -> None:
    """A purpose a person edits ("only what concerns …") ranks its subject's passages first."""
    corpus_home(home, "arbuthnot")
    spec = checked(home, RequestSpec(request="A note on Arbuthnot's christening data."))
    task = assignment(home, spec)
    edited = task.model_copy(update={"task": task.task.model_copy(
        update={"task_purpose": "Only what concerns the plague and mortality."})})  # fmt: skip
    assert BuiltinExecutor().execute_task(edited).status == "COMPLETED"
    report = (home.root / "outputs" / RUN / "report.md").read_text(encoding="utf-8")
    first = section(report, "What the sources say").split("\n1. ", 1)[1].split("\n", 1)[0]
    assert "plague" in first.lower() or "mortality" in first.lower(), first
