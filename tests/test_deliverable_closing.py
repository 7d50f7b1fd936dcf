"""The close of a deliverable: a model's memo with an invented number gets it listed; the model
is given the computed facts to cite; the web search's outcome reaches the brief (its quoted
passages only, or that it gave nothing usable), and its queries come from the spec."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from executor.builtin import BuiltinExecutor
from executor.builtin.delivery import (
    left_out_named_once,
    other_script,
    other_script_paragraphs,
    states,
    with_answers,
)
from executor.builtin.specialists import search_queries, spec_queries
from executor.builtin.tablefacts import Answer, SourceTexts, answer
from executor.model import ModelExecutor
from executor.search import SearxngProvider, WebResearch, render_brief
from executor.search.agent import Findings, QueryOutcome, Source
from multiverse.config import RuntimeMapping, TierConfig
from multiverse.gateway import Gateway
from multiverse.gateway.calls import RetryPolicy
from multiverse.home import Home
from multiverse.models import Timing, ToolTask
from multiverse.roles import ToolAssignment
from multiverse.spec import (
    Computation,
    FileSet,
    Question,
    Reading,
    RequestSpec,
    Research,
)

from fake_openai import FakeOpenAI, text
from specbrief import RUN, assignment, chart, checked, corpus_home, publish, section

pytestmark = pytest.mark.usefixtures("no_proxies")  # proxies off: loopback addresses

INVENTED = "99.5"
MEMO = (
    "# The US marriage rate\n\nMarriages per 1000 were highest in 1946, at 16.2, and "
    f"the rate will reach {INVENTED} per 1000 soon.\n"
)
VERDICT = json.dumps({
    "executive_summary": "The rate peaked at 16.2 in 1946.",
    "recommendation": "Read the rate against its 1946 peak.",
    "reasons": ["It was highest in 1946, at 16.2."],
})  # fmt: skip


NO_REVISION = json.dumps({"sentences": []})  # the model revises nothing


def marriages_spec(home: Home, **fields: object) -> RequestSpec:
    """A request over the marriages table with a chart and a computed question."""
    corpus_home(home, "us_marriages_divorces")
    question = Question(
        reading=Reading(phrase="when was the marriage rate highest?", origin="request"),
        compute=Computation(kind="max", file="assets/us_marriages_divorces.csv",
                            measure="Marriages_per_1000"),
    )  # fmt: skip
    spec = RequestSpec(
        request="A memo on the US marriage rate: when was the marriage rate highest?",
        charts=[chart("the marriage rate by year", "us_marriages_divorces.csv",
                      "Marriages_per_1000")],
        questions=[question], **fields,  # type: ignore[arg-type]
    )  # fmt: skip
    return checked(home, spec)


def model_memo(
    home: Home, fake_openai: FakeOpenAI, spec: RequestSpec, memo: str, verdict: str = VERDICT,
    rewrite: str | None = None, after: tuple[str, ...] = (), revision: str = NO_REVISION,
) -> str:
    """The single-shot model's published memo for `spec`: its analysis `memo`, its `rewrite`
    in the confirmed language when one is asked for, its verdict, then the answers `after`,
    then its `revision` of the sentences stating a number no source holds (asked only when
    there is one)."""
    root = home.root.resolve()
    tier = TierConfig(model="openai/fake-model", api_base=fake_openai.base_url, max_tokens=4096,
                      timeout_seconds=10)  # fmt: skip
    role = ModelExecutor(Gateway(runs_root=root / "runs", retry=RetryPolicy(max_attempts=1)),
                         RuntimeMapping(), tier, root)  # fmt: skip
    long_enough = memo + "\n\n" + "The rate moved over the years, as the chart shows. " * 120
    rewritten = [] if rewrite is None else [text(rewrite)]
    fake_openai.script(text(long_enough), *rewritten, text(verdict), *map(text, after),
                       text(revision))  # fmt: skip
    task = assignment(home, spec, out="memo.md")
    task = task.model_copy(update={"task": task.task.model_copy(
        update={"related_references": ["assets/us_marriages_divorces.csv"]})})  # fmt: skip
    signal = role.execute_task(task)
    assert signal.status == "COMPLETED", signal.error
    return (root / "outputs" / RUN / "memo.md").read_text(encoding="utf-8")


def test_a_model_memo_with_an_invented_number_lists_it_and_counts_it(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """The single-shot memo is given the verified facts; its invented figure is listed under
    "Numbers not found in the sources" and counted in delivery.json; the true ones are not."""
    memo = model_memo(home, fake_openai, marriages_spec(home), MEMO)
    prompt = str(fake_openai.requests[0]["messages"][-1]["content"])
    assert "## Verified facts to use and cite" in prompt
    assert "Marriages per 1000 was highest in 1946, at 16.2" in prompt
    closing = section(memo, "Numbers not found in the sources")
    assert re.findall(r"^- \*\*([^*]+)\*\* — ", closing, re.MULTILINE) == [INVENTED]
    delivery = home.run(RUN).phase_workspace("GENERATING_OUTPUT") / "delivery.json"
    assert json.loads(delivery.read_text(encoding="utf-8"))["untraced_numbers"] == 1


def test_a_memos_invented_figure_is_revised_against_its_source_and_the_rest_listed(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """A sentence stating a number no source holds is shown to the model with the sources'
    nearest passages, in one constrained call on the run's prefix; a revision that states the
    source's figure replaces it, one that invents another is refused and its number listed."""
    wrong = ("# The US marriage rate\n\nMarriages per 1000 were highest in 1946, at 61.2.\n\n"
             f"The rate will reach {INVENTED} per 1000 soon.\n")  # fmt: skip
    revision = json.dumps({"sentences": [
        {"number": 1, "sentence": "Marriages per 1000 were highest in 1946, at 16.2."},
        {"number": 2, "sentence": "The rate will reach 77.7 per 1000 soon."},
    ]})  # fmt: skip
    memo = model_memo(home, fake_openai, marriages_spec(home), wrong, revision=revision)
    analysis, _verdict, asked = fake_openai.requests
    prompt = prompt_of(asked)
    # Its wrong figure blanked: shown it, the local model gave the sentence back unchanged.
    assert "): Marriages per 1000 were highest in 1946, at ___.\n" in prompt
    assert "61.2" not in prompt and "fill each blank with the figure a passage gives" in prompt
    assert "  - Marriages per 1000 was highest in 1946, at 16.2" in prompt  # the computed fact
    assert asked["response_format"]["type"] == "json_schema"  # type: ignore[index]
    # At most the sentences shown, numbered as shown: a constrained decoder stops there.
    answer = asked["response_format"]["json_schema"]["schema"]["properties"]["sentences"]  # type: ignore[index]
    assert answer["maxItems"] == 2 and answer["items"]["properties"]["number"]["maximum"] == 2
    # The run's prefix, byte for byte: the provider's cache serves it again.
    assert asked["messages"][0] == analysis["messages"][0]  # type: ignore[index]
    assert "Marriages per 1000 were highest in 1946, at 16.2." in memo and "61.2" not in memo
    closing = section(memo, "Numbers not found in the sources")
    assert re.findall(r"^- \*\*([^*]+)\*\* — ", closing, re.MULTILINE) == [INVENTED]
    assert delivered(home)["untraced_numbers"] == 1


def prompt_of(request: dict[str, object]) -> str:
    """The text of a recorded request's last message."""
    messages = request["messages"]
    assert isinstance(messages, list)
    return str(messages[-1]["content"])


def delivered(home: Home) -> dict[str, object]:
    """The run's delivery record."""
    path = home.run(RUN).phase_workspace("GENERATING_OUTPUT") / "delivery.json"
    return dict(json.loads(path.read_text(encoding="utf-8")))


def test_a_question_the_model_memo_leaves_unanswered_gets_its_computed_answer(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """The memo's text states no figure of the question's computed answer: code adds it after
    the summary, saying code computed it; the answer is traced, nothing is recorded undone."""
    spec = marriages_spec(home)
    plain = json.dumps({"executive_summary": "The rate fell over a century.",
                        "recommendation": "Read the rate by decade.",
                        "reasons": ["It fell over a century."]})  # fmt: skip
    memo = model_memo(home, fake_openai, spec, "# The rate\n\nThe rate fell over a century.", plain)
    added = section(memo, "Answers to your questions")
    assert "Computed from the tables by code" in added
    assert "highest in 1946, at 16.2" in added
    assert memo.index("## Executive summary") < memo.index("## Answers to your questions")
    assert memo.index("## Answers to your questions") < memo.index("## Analysis")
    assert delivered(home) == {"not_done": [], "untraced_numbers": 0}


def test_a_memo_in_another_language_than_confirmed_is_recorded_not_hidden(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """Confirmed in Korean, written in English by the model: the delivery record says so, in
    the requester's language; the memo that states the answer gets no section of code's."""
    spec = marriages_spec(home).model_copy(update={"language": "ko"})
    english = MEMO + "\n\n" + "The rate moved over the years, as the chart shows. " * 120
    memo = model_memo(home, fake_openai, spec, MEMO, rewrite=english)  # asked again: English
    assert "질문에 대한 답" not in memo
    rewrite = prompt_of(fake_openai.requests[1])
    assert "Write the same document in Korean (한국어)" in rewrite and "16.2" in rewrite
    (said,) = delivered(home)["not_done"]  # type: ignore[misc]
    assert said == "결과물이 확정한 언어(Korean)로 쓰이지 않았습니다: 모델이 Latin 문자로 썼습니다"


def test_a_memo_written_in_another_language_is_rewritten_once_in_the_confirmed_one(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """Confirmed in Korean, written in English: one call rewrites it, and the Korean text is
    what is published; nothing is recorded as not done, its figures are traced as before."""
    spec = marriages_spec(home).model_copy(update={"language": "ko"})
    # Fewer words than the English (Korean is compact), every figure kept.
    korean = ("# 미국 혼인율\n\n혼인율은 1946년에 1000명당 16.2건으로 가장 높았고, 곧 1000명당 "
              f"{INVENTED}건에 이를 것이다.\n\n"
              + "혼인율은 그 뒤 수십 년 동안 차트가 보여 주듯 움직였다. " * 100)  # fmt: skip
    memo = model_memo(home, fake_openai, spec, MEMO, KOREAN_VERDICT, rewrite=korean)
    assert "1946년에 1000명당 16.2건" in memo and "The rate moved" not in memo
    # The analysis, its rewrite, the verdict, and the revision of the invented figure's sentence.
    assert fake_openai.count == 4
    assert delivered(home)["not_done"] == []


KOREAN_VERDICT = json.dumps({
    "executive_summary": "혼인율은 1946년에 16.2로 가장 높았다.",
    "recommendation": "혼인율을 1946년의 정점과 견주어 읽는다.",
    "reasons": ["1946년에 16.2로 가장 높았다."],
})  # fmt: skip
KOREAN_MEMO = (f"# 미국 혼인율\n\n혼인율은 1946년에 1000명당 16.2건으로 가장 높았고, 곧 1000명당 "
               f"{INVENTED}건에 이를 것이다.\n\n"
               + "혼인율은 그 뒤 수십 년 동안 차트가 보여 주듯 움직였다. " * 100)  # fmt: skip
# An English verdict long enough to be judged as a paragraph (12 words or more).
LONG_VERDICT = json.dumps({
    "executive_summary": "The marriage rate peaked at 16.2 per 1000 in 1946 and has "
                         "fallen over most of the decades since then.",
    "recommendation": "Read the rate against its 1946 peak.",
    "reasons": ["It was highest in 1946, at 16.2."],
})  # fmt: skip


def test_a_verdict_in_another_language_is_rewritten_in_the_confirmed_one(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """A Korean memo whose verdict (summary, recommendation, reasons) the model wrote in English:
    one call asks for the same JSON in Korean, every figure kept, and the Korean verdict is
    what is published (the local model's ko-chart-04 memo had an English summary)."""
    spec = marriages_spec(home).model_copy(update={"language": "ko"})
    korean = KOREAN_MEMO
    rewritten = json.dumps({
        "executive_summary": "혼인율은 1946년에 1000명당 16.2건으로 정점이었고 그 뒤 줄었다.",
        "recommendation": "혼인율을 1946년의 정점과 견주어 읽는다.",
        "reasons": ["1946년에 16.2로 가장 높았다."],
    })  # fmt: skip
    memo = model_memo(home, fake_openai, spec, MEMO, LONG_VERDICT, korean, (rewritten,))
    asked = prompt_of(fake_openai.requests[3])
    assert "each value written in Korean (한국어)" in asked and "16.2 per 1000" in asked
    assert "1000명당 16.2건으로 정점이었고" in section(memo, "Executive summary")
    assert "The marriage rate peaked" not in memo
    # The analysis, its rewrite, the verdict, the verdict's rewrite, the figures' revision.
    assert fake_openai.count == 5
    assert delivered(home)["not_done"] == []


def test_a_verdict_rewrite_that_loses_a_figure_is_refused_and_the_record_says_so(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """The verdict's Korean rewrite drops 16.2, and its two repairs still do: the English
    verdict is published as the model wrote it, and the delivery record names its paragraph."""
    spec = marriages_spec(home).model_copy(update={"language": "ko"})
    korean = KOREAN_MEMO
    lossy = json.dumps({"executive_summary": "혼인율은 1946년에 가장 높았다.",
                        "recommendation": "정점과 견주어 읽는다.", "reasons": ["가장 높았다."]})
    memo = model_memo(home, fake_openai, spec, MEMO, LONG_VERDICT, korean, (lossy,) * 3)
    assert "leaves out figures: 1000, 16.2" in prompt_of(fake_openai.requests[5])  # a repair
    assert "The marriage rate peaked at 16.2" in memo
    assert "혼인율은 1946년에 가장 높았다" not in memo
    (said,) = delivered(home)["not_done"]  # type: ignore[misc]
    assert "The marriage rate peaked" in said


def test_a_rewrite_that_loses_a_figure_is_not_used(home: Home, fake_openai: FakeOpenAI) -> None:
    """The rewrite in Korean drops the 1946 peak's 16.2: the English analysis is published as
    the model wrote it, and the record says the language was not kept."""
    spec = marriages_spec(home).model_copy(update={"language": "ko"})
    korean = ("# 미국 혼인율\n\n혼인율은 1946년에 가장 높았다.\n\n"
              + "혼인율은 그 뒤 수십 년 동안 차트가 보여 주듯 움직였다. " * 100)  # fmt: skip
    memo = model_memo(home, fake_openai, spec, MEMO, rewrite=korean)
    assert "highest in 1946, at 16.2" in memo and "가장 높았다" not in memo
    (said,) = delivered(home)["not_done"]  # type: ignore[misc]
    assert said.startswith("결과물이 확정한 언어(Korean)로 쓰이지 않았습니다")


@pytest.mark.parametrize(
    ("language", "written", "other"),
    [("ko", "The rate fell.", "Latin"), ("ko", "혼인율은 1946년에 16.2로 가장 높았다.", None),
     ("en", "혼인율은 1946년에 16.2로 가장 높았다.", "Hangul"), ("fr", "Le taux a baissé.", None),
     ("ru", "Уровень снизился.", None), ("ja", "The rate fell.", "Latin"),
     ("ar", "The rate fell.", None)],
)  # fmt: skip
def test_the_language_kept_is_judged_by_its_script(
    language: str, written: str, other: str | None
) -> None:
    """A script other than the confirmed language's is named; a language whose script cannot
    be told (Arabic) is not judged."""
    assert other_script(language, written) == other


# A source's Korean paragraph, as a small model copies it into an English memo.
COPIED = ("미국의 혼인율은 1946년에 인구 1000명당 16.2건으로 가장 높았으며 이후 꾸준히 감소하여 "
          "최근에는 역대 최저 수준에 머물러 있다고 통계청 자료는 설명하고 있다.")  # fmt: skip


def test_a_source_paragraph_copied_in_another_language_is_recorded(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """An English memo with one Korean paragraph copied from a source: the delivery record
    names one paragraph in Hangul with its opening words; the memo is not touched."""
    spec = marriages_spec(home)
    memo = model_memo(home, fake_openai, spec, MEMO + "\n" + COPIED + "\n")
    assert COPIED in memo
    (said,) = delivered(home)["not_done"]  # type: ignore[misc]
    assert said.startswith("1 of its paragraphs are not in English")
    assert "Hangul" in said and COPIED[:20] in said


def test_a_name_no_source_holds_is_recorded(home: Home, fake_openai: FakeOpenAI) -> None:
    """A memo that credits the peak to a company no source names: the delivery record names it
    for the person to check; the memo is not touched."""
    spec = marriages_spec(home)
    invented = MEMO + "\nThe figures were gathered by Vantorix Analytics for the bureau.\n"
    memo = model_memo(home, fake_openai, spec, invented)
    assert "Vantorix Analytics" in memo
    (said,) = delivered(home)["not_done"]  # type: ignore[misc]
    assert said.startswith("it names what no source") and "Vantorix Analytics" in said


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("en", f"An English paragraph about the rate.\n\n{COPIED}", {"Hangul": 1}),
        ("en", f"{COPIED}\n\n{COPIED}\n\nEnough English words to be prose here.", {"Hangul": 2}),
        # a Korean name, a short Korean line, a table and a heading are quoted, not written
        ("en", "The rate in 서울 fell by a third over the decade, the statistics office says "
               "in its yearly report.\n\n서울 16.2\n\n| 지역 | 혼인율 |\n|---|---|\n| 서울 | 16.2 |"
               "\n\n## 혼인율 요약", {}),
        ("ko", f"{COPIED}\n\nThe marriage rate in the United States peaked in 1946 at 16.2 per "
               "1000 people and has fallen ever since, the statistics say.", {"Latin": 1}),
        ("ko", f"{COPIED}\n\n| Year | Marriages per 1000 |\n|---|---|\n| 1946 | 16.2 |", {}),
        # a heading opens the paragraph with no blank line between (the local model)
        ("en", f"## Summary\n{COPIED}\n\nEnough English words here to count as prose for "
               "the check, and then some more.", {"Hangul": 1}),
        ("ar", "The marriage rate peaked in 1946 at 16.2 per 1000 people and has fallen "
               "ever since, the statistics say.", {}),
    ],
)
def test_paragraphs_in_another_script_are_told_from_quoted_names_and_tables(
    language: str, text: str, expected: dict[str, int]
) -> None:
    """Only prose paragraphs of some length are judged; a language whose script cannot be
    told is not."""
    found = other_script_paragraphs(language, text)
    assert {script: len(paragraphs) for script, paragraphs in found.items()} == expected


def tool_assignment(home: Home, spec: RequestSpec | None) -> ToolAssignment:
    """A PRE web_search of the publishing task."""
    base = assignment(home, spec)
    tool = ToolTask(tool_task_id="P4-S02-T01-PRE-01", run_id=RUN, parent_task_id="P4-S02-T01",
                    timing=Timing.PRE, tool_type="web_search", tool_task_name="Web search",
                    tool_task_purpose="Search the web for the marriage rate.",
                    execution_order=1)  # fmt: skip
    return ToolAssignment(home=base.home, run_id=RUN, request=base.request, phase=base.phase,
                          task=base.task, tool_task=tool, spec=spec)  # fmt: skip


def test_search_queries_come_from_the_questions_else_the_request_without_its_exclusions(
    home: Home,
) -> None:
    """The spec's research queries and questions are searched; without questions the request's
    words are, the clause leaving a file out and its name excluded."""
    spec = marriages_spec(home, research=Research(
        reading=Reading(phrase="check the web", origin="request"), queries=["US marriage rate"]))
    assert search_queries(tool_assignment(home, spec)) == [
        "US marriage rate", "when was the marriage rate highest?"]
    plain = RequestSpec(
        request="Brief on marriage trends, but leave out the notes.md file, it's outdated.",
        left_out=[FileSet(files=["assets/notes.md"],
                          reading=Reading(phrase="leave out the notes.md file", origin="request"))],
    )  # fmt: skip
    (query,) = spec_queries(plain)
    assert "marriage" in query and "notes" not in query and "outdated" not in query


def test_the_brief_quotes_what_the_search_found_never_its_bookkeeping(home: Home) -> None:
    """A web_search summary of the run gives the brief its quoted passages with their pages; the
    search's purpose, provider, fetch times and queries are never passages."""
    spec = marriages_spec(home, research=Research(
        reading=Reading(phrase="and the latest figures from the web", origin="request"),
        queries=["US marriage rate"], provider="searxng"))
    passage = "The US marriage rate fell to 6.1 per 1,000 people in 2019, a record low."
    findings = Findings(
        provider="searxng (loopback)", searched_at="2026-01-02T03:04:05Z",
        queries=[QueryOutcome(query="US marriage rate", hits=1)],
        sources=[Source(title="Marriage rates", url="https://stats.example/marriage",
                        fetched_at="2026-01-02T03:04:06Z", query="US marriage rate",
                        passages=[passage])],
    )  # fmt: skip
    summary = render_brief(tool_assignment(home, spec), findings)
    target = home.run(RUN).phase_workspace("GENERATING_OUTPUT") / "P4-S02-T01-PRE-01.md"
    target.write_text(summary, encoding="utf-8")
    published = publish(home, spec)
    web = section(published.report, "From the web")
    assert passage in web and "(https://stats.example/marriage)" in web
    for bookkeeping in ("searxng", "Purpose", "Fetched", "2026-01-02", "Queries", "Provider"):
        assert bookkeeping not in published.report
    assert "- <https://stats.example/marriage>" in section(published.report, "Sources")
    assert published.delivery["untraced_numbers"] == 0


def test_a_search_that_gives_nothing_usable_is_said_by_the_brief(home: Home) -> None:
    """With a spec, a search whose provider gives nothing leaves a note (the run goes on); the
    brief says the planned search returned nothing usable, and it is listed as not done."""
    spec = marriages_spec(home, research=Research(
        reading=Reading(phrase="check the web", origin="request"), queries=["marriage rate"],
        provider="searxng"))
    down = WebResearch(provider=SearxngProvider("http://127.0.0.1:9", timeout_seconds=2),
                       provider_label="searxng (down)")  # fmt: skip
    signal = BuiltinExecutor(down).execute_tool_task(tool_assignment(home, spec))
    assert signal.status == "COMPLETED", signal.error
    published = publish(home, spec)
    said = section(published.report, "From the web")
    assert "returned nothing usable" in said
    assert "the web search planned returned nothing usable" in published.delivery["not_done"]
    assert "127.0.0.1" not in published.report


def test_delivery_json_is_written_where_the_completion_reads_it(home: Home) -> None:
    """`runs/<id>/workspace/GENERATING_OUTPUT/delivery.json` holds the two keys, nothing else."""
    published = publish(home, marriages_spec(home))
    assert set(published.delivery) == {"not_done", "untraced_numbers"}
    assert Path(home.run(RUN).phase_workspace("GENERATING_OUTPUT"), "delivery.json").is_file()


@pytest.mark.parametrize(
    "named",
    ["assets/souvenirs.csv", "souvenirs.csv", "`Souvenirs.CSV`", "**souvenirs.csv**"],
)
def test_a_file_left_out_is_named_only_in_the_line_that_lists_it(named: str) -> None:
    """A model restating the exclusion ("leaving out souvenirs.csv") loses that sentence, a
    list item or heading naming it goes whole; the other sentences stay; one line lists the
    files left out, as the builtin brief says it; a text naming none is unchanged."""
    text = (f"# Memo\n\nSpending rose since 1967. We leave out {named} as asked. It doubled.\n\n"
            f"## Sources\n\n- assets/pce.csv\n- {named} (not used)\n\n## On {named}\n\nDone.\n")
    line = "Left out as you asked: {files}."
    kept = left_out_named_once(text, ["assets/souvenirs.csv"], line)
    assert kept == ("# Memo\n\nSpending rose since 1967. It doubled.\n\n## Sources\n\n"
                    "- assets/pce.csv\n\nDone.\n\nLeft out as you asked: `assets/souvenirs.csv`.\n")
    body = "\n".join(row for row in kept.splitlines() if not row.startswith("Left out"))
    assert "souvenirs" not in body.casefold()
    clean = "# Memo\n\nSpending on souvenirs rose; see assets/pce.csv.\n"
    assert left_out_named_once(clean, ["assets/souvenirs.csv"], line) == clean


def test_a_question_a_model_read_and_no_table_answers_is_named_by_what_it_computes(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """A question the model read into the spec has no phrase of the request: the record names
    what it computes ("change of …"), never an empty quote, with the reason it failed."""
    spec = marriages_spec(home)
    unanswerable = Question(
        reading=Reading(phrase="", origin="model"),
        compute=Computation(kind="change", file="assets/us_marriages_divorces.csv",
                            measure="Marriages_per_1000", start="2500", end="2600"),
    )  # fmt: skip
    spec = spec.model_copy(update={"questions": [unanswerable]})
    model_memo(home, fake_openai, spec, MEMO)
    (said,) = delivered(home)["not_done"]  # type: ignore[misc]
    assert said.startswith("the question “change of Marriages_per_1000” was not answered: ")
    assert "“”" not in said



def _answered(home: Home, kind: str, file: str, measure: str, **fields: object) -> Answer:
    corpus_home(home, file.removesuffix(".csv"))
    ask = Computation(kind=kind, file=f"assets/{file}", measure=measure, **fields)  # type: ignore[arg-type]
    question = Question(reading=Reading(phrase="", origin="model"), compute=ask)
    found = answer(question, SourceTexts(home.root.resolve(), [f"assets/{file}"]), "en", "")
    assert found.found, found.sentence
    return found


@pytest.mark.parametrize(
    ("kind", "file", "measure", "fields", "text", "stated"),
    [
        # the year and the unit of "9.7 in 1867" are not its answer
        ("first", "us_marriages_divorces.csv", "Marriages_per_1000", {},
         "The rate per 1,000 people moved a great deal between 1867 and 2011.", False),
        ("first", "us_marriages_divorces.csv", "Marriages_per_1000", {},
         "In 1867 the rate stood at 9.7 per 1,000.", True),
        ("max", "us_marriages_divorces.csv", "Marriages_per_1000", {},
         "It peaked at 16.20 in 1946.", True),
        ("max", "us_marriages_divorces.csv", "Marriages_per_1000", {},
         "It peaked in 1946, after the war.", False),
        # a change is stated by its size (either sign) or its percent, at any precision printed
        ("change", "us_marriages_divorces.csv", "Marriages_per_1000", {},
         "The rate fell by 2.9 points over the period.", True),
        ("change", "us_marriages_divorces.csv", "Marriages_per_1000", {},
         "The rate fell by 29.9 % from 1867 to 2011.", True),
        ("change", "us_marriages_divorces.csv", "Marriages_per_1000", {},
         "The rate fell from 1867 to 2011.", False),
        # a change's size written as a percent is not its percent (the local model wrote
        # Korea's +22,317.547504 dollars as "+22,317.547504% 증가")
        ("change", "gapminder.csv", "gdpPercap", {"filters": {"country": ["Korea, Rep."]}},
         "한국의 1인당 GDP는 +22,317.547504% 증가했습니다.", False),
        ("change", "gapminder.csv", "gdpPercap", {"filters": {"country": ["Korea, Rep."]}},
         "한국의 1인당 GDP는 22,317.55달러(+2,165.51 %) 늘었습니다.", True),
        ("change", "gapminder.csv", "gdpPercap", {"filters": {"country": ["Korea, Rep."]}},
         "한국의 1인당 GDP는 2,165.5 퍼센트 늘었습니다.", True),
        # a value that is itself a rate may carry its percent sign
        ("cagr", "us_marriages_divorces.csv", "Marriages_per_1000", {},
         "It fell by about 0.25 % a year.", True),
        ("mean", "us_marriages_divorces.csv", "Marriages_per_1000", {},
         "The rate averaged 9.64 over the period.", True),
        # a ranking is stated by the category it names
        ("largest", "gapminder.csv", "pop", {"category": "continent", "start": "2007",
                                             "end": "2007"},
         "In 2007 most people lived in Asia.", True),
        ("largest", "gapminder.csv", "pop", {"category": "continent", "start": "2007",
                                             "end": "2007"},
         "In 2007 the population was counted on every continent.", False),
    ],
)  # fmt: skip
def test_a_text_states_an_answer_by_its_value_not_by_its_year_or_unit(
    home: Home, kind: str, file: str, measure: str, fields: dict[str, object], text: str,
    stated: bool,
) -> None:
    """The local model's brief wrote "between 1867 and 2011" and "per 1,000 people", never the
    first year's 9.7: the closing took the year for the answer and added nothing. A text now
    states a computed answer when it writes its value (or a change's percent) at the precision
    it prints, or the category a ranking names; otherwise code adds the answer."""
    found = _answered(home, kind, file, measure, **fields)
    assert states(text, found) is stated
    added = with_answers(f"# Memo\n\n## Summary\n\n{text}\n", [found], "Answers", "by code")
    assert ("## Answers" in added) is not stated
