"""What CONFIRM froze governs the plan (planner.validation), and the language and length rules it
uses (multiverse.spec), over generated task texts and the corpus's real requests."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from evals.corpus import cases
from multiverse.models import Task
from multiverse.spec import LANGUAGES, FileSet, Reading, RequestSpec, asked_words, languages_asked
from planner.validation import spec_conflicts

RUN = "run-20260101-120000-001"
LEFT_OUT = "assets/old_q2.csv"


def spec(language: str = "en", words: int | None = 900) -> RequestSpec:
    """A confirmed spec in `language`, about `words` long, with one file left out."""
    return RequestSpec(
        request="A memo on the Q3 figures.", language=language, length_words=words,
        sources=["assets/q3.csv"], confirmed=True,
        left_out=[FileSet(files=[LEFT_OUT], reading=Reading(phrase="not the Q2 file"))],
    )  # fmt: skip


def task(purpose: str, references: list[str] | None = None, name: str = "Facts") -> Task:
    """A planned task of the analysis phase with `purpose`."""
    return Task(
        task_id="P1-S01-T01", run_id=RUN, stage_id="P1-S01", task_name=name,
        task_purpose=purpose, related_references=references or ["assets/q3.csv"],
        output_path=f"runs/{RUN}/workspace/ANALYZING/facts.md", execution_order=1,
    )  # fmt: skip


ENGLISH_NAMES = [(code, name) for code, names in LANGUAGES.items() for name in names
                 if name.isascii()]  # fmt: skip
KOREAN_NAMES = [(code, name) for code, names in LANGUAGES.items() for name in names
                if not name.isascii()]  # fmt: skip
ASKING = ["Write the summary in {}.", "Summarise the figures in {}, for the board.",
          "Translate the findings into {} please", "Draft it in the {} language."]  # fmt: skip
NOT_ASKING = ["Describe the trends in {} cities.", "Compare {} exporters with the rest.",
              "List the {} market's leaders.", "The {} figures come first."]  # fmt: skip


@pytest.mark.parametrize(("code", "name", "shape"),
                         [(c, n, s) for (c, n), s in itertools.product(ENGLISH_NAMES, ASKING)])
def test_a_language_asked_for_the_text_is_read(code: str, name: str, shape: str) -> None:
    """"in Korean", "into French, please": the language the text is to be written in."""
    assert languages_asked(shape.format(name)) == {code}


@pytest.mark.parametrize(("name", "shape"),
                         [(n, s) for (_, n), s in itertools.product(ENGLISH_NAMES, NOT_ASKING)])
def test_a_language_name_that_qualifies_a_noun_asks_nothing(name: str, shape: str) -> None:
    """"in Korean cities", "the French market": a nationality, not the language to write in."""
    assert languages_asked(shape.format(name)) == set()


@pytest.mark.parametrize(("code", "name"), KOREAN_NAMES)
def test_a_korean_request_for_a_language_is_read(code: str, name: str) -> None:
    """"영어로 써 주세요", "한국어로": the particle 로/으로 after the language's name."""
    particle = "으로" if (ord(name[-1]) - 0xAC00) % 28 else "로"
    assert languages_asked(f"요약을 {name}{particle} 작성해 주세요.") == {code}
    assert languages_asked(f"{name} 자료를 정리합니다.") == set()


@pytest.mark.parametrize("case", cases(), ids=lambda case: str(case["id"]))
def test_no_corpus_request_asks_for_a_language_other_than_its_own(case: dict[str, Any]) -> None:
    """On real requests the rule never reads a language the requester did not ask for."""
    expected = case["expect"].get("language", case["lang"])
    assert languages_asked(case["request"]) <= {expected}, case["request"]


def test_lengths_are_read_in_words_and_pages() -> None:
    """Pages at 500 words, ranges at their upper end, half a page, Korean pages."""
    assert asked_words(["A two-page memo in English"]) == 1000
    assert asked_words(["one page, please", "at most 300 words"]) == 500
    assert asked_words(["300-500 words"]) == 500 and asked_words(["half a page"]) == 250
    assert asked_words(["두 페이지 분량"]) == 1000 and asked_words(["Use the 2023 figures"]) is None


@pytest.mark.parametrize(("kind", "words"), [("memo", 1000), ("report", 1000), ("brief", 500),
                                             ("note", 500), ("summary", 500)])  # fmt: skip
def test_a_length_not_asked_is_the_default_of_the_deliverables_kind(kind: str, words: int) -> None:
    """One rule for the proposal, the offline brief, the model's deliverable and the planner."""
    assert RequestSpec(request="x", deliverable=kind).length() == (words, False)
    assert RequestSpec(request="x", deliverable=kind, length_words=300).length() == (300, True)


@pytest.mark.parametrize("shape", ["Read {} and list its figures.", "Compare q3.csv with {}.",
                                   "Use {} for the trend."])  # fmt: skip
@pytest.mark.parametrize("named", [LEFT_OUT, "old_q2.csv", "OLD_Q2.CSV"])
def test_a_task_that_names_a_file_left_out_is_refused(shape: str, named: str) -> None:
    """A file the confirmed request leaves out may not be read, by reference or by name."""
    errors = spec_conflicts(task(shape.format(named)), spec(), deliverable=False)
    assert len(errors) == 1 and "leaves out" in errors[0], errors


@pytest.mark.parametrize("shape", ["Use every source except {}.", "Read the figures, without {}.",
                                   "Do not use {} at all.", "{} 제외하고 정리합니다.",
                                   "Leave out {} as asked."])  # fmt: skip
def test_a_task_that_keeps_a_file_out_by_name_is_not_refused(shape: str) -> None:
    """Naming the file to keep it out obeys the spec."""
    assert spec_conflicts(task(shape.format(LEFT_OUT)), spec(), deliverable=False) == []


def test_reading_a_file_left_out_is_refused_whatever_the_text() -> None:
    """The references are what a task reads: a left-out file there is refused."""
    errors = spec_conflicts(task("List the figures.", [LEFT_OUT]), spec(), deliverable=False)
    assert errors and f"reads {LEFT_OUT}" in errors[0]


@pytest.mark.parametrize(("language", "purpose", "refused"), [
    ("en", "Write the analysis in Korean.", True),
    ("en", "Write the analysis in English.", False),
    ("ko", "Write the analysis in English.", True),
    ("ko", "분석을 영어로 작성합니다.", True),
    ("ko", "분석을 한국어로 작성합니다.", False),
    ("en", "Compare Korean exporters.", False),
])  # fmt: skip
def test_a_task_in_another_language_is_refused(language: str, purpose: str, refused: bool) -> None:
    """A task may not ask for another language than the confirmed one (a MODIFY to English
    once left later tasks "in Korean")."""
    errors = spec_conflicts(task(purpose), spec(language), deliverable=False)
    assert bool(errors) is refused, errors


@pytest.mark.parametrize(("purpose", "words", "deliverable", "refused"), [
    ("Write the two-page memo.", 900, True, False),
    ("Write a one-page memo.", 900, True, True),
    ("Write a five-page report.", 900, True, True),
    ("Write about 1,000 words.", 900, True, False),
    ("Write a one-page memo.", 900, False, False),  # a working document has its own budget
    ("Write a one-page memo.", None, True, False),  # no length was confirmed
])  # fmt: skip
def test_a_deliverable_far_from_the_confirmed_length_is_refused(
    purpose: str, words: int | None, deliverable: bool, refused: bool
) -> None:
    """The deliverable keeps to the confirmed length, within half again either way."""
    errors = spec_conflicts(task(purpose), spec(words=words), deliverable=deliverable)
    assert bool(errors) is refused, errors
