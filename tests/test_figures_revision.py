"""The figures of a model's deliverable revised against its sources: which sentences are flagged,
which passages each is shown, and which revision code accepts (`executor.model.revision`), on
the real texts of the corpus and the fixtures, each with one of its figures changed."""

from __future__ import annotations

import random
import re
from decimal import Decimal
from pathlib import Path

import pytest

from executor.builtin.text import is_hangul
from executor.model.revision import (
    Flagged,
    Revision,
    accepted,
    blanked,
    evidence,
    flagged,
    match_terms,
    nearest,
    passages_of,
    prose_sentences,
    revision_messages,
    with_revisions,
)
from multiverse.trace import Known, claims

TESTS = Path(__file__).parent
TEXTS = sorted([*(TESTS / "corpus" / "tables").glob("*.md"),
                *(TESTS / "fixtures" / "assets").glob("*.md")])  # fmt: skip
_FIGURE = re.compile(r"(?<![\w.,])\d+(?:\.\d+)?(?![\w.,]*\d)")


def changed(sentence: str, rng: random.Random) -> str | None:
    """The sentence with one of its figures changed into a number it does not hold."""
    figures = [match for match in _FIGURE.finditer(sentence) if len(match.group()) >= 2]
    if not figures:
        return None
    match = rng.choice(figures)
    value = Decimal(match.group()) * 9 + 3
    return sentence[: match.start()] + str(value) + sentence[match.end() :]


def cases(path: Path) -> list[tuple[str, str]]:
    """(sentence, changed sentence) for each prose passage of the text stating a figure."""
    text = path.read_text(encoding="utf-8")
    rng = random.Random(path.name)
    found = []
    for passage in passages_of([text]):
        if "\n" in passage or not claims(passage) or len(passage) > 400:
            continue
        wrong = changed(passage, rng)
        if wrong is not None and wrong != passage:
            found.append((passage, wrong))
    return found


@pytest.mark.parametrize("path", TEXTS, ids=lambda path: path.name)
def test_a_changed_figure_is_flagged_shown_its_source_and_put_back(path: Path) -> None:
    """Each sentence of a real text with one figure changed: flagged with that figure, shown
    the sentence it came from among its nearest passages, put back by a revision restoring it;
    the changed sentence itself is never accepted as a revision."""
    text = path.read_text(encoding="utf-8")
    language = "ko" if is_hangul(text) else "en"
    known, passages = Known.of([text]), passages_of([text])
    checked = 0
    for right, wrong in cases(path):
        memo = f"# Memo\n\n## Findings\n\n{wrong}\n"
        items = flagged(memo, known)
        if not items:
            continue  # the new number is one the text states elsewhere: nothing to revise
        (item,) = items
        assert item.sentence == wrong.strip()
        if set(match_terms(wrong)) & set(match_terms(right)):  # else nothing can find it
            assert right in nearest(wrong, passages), (wrong, nearest(wrong, passages))
        assert accepted(item, right, known, language)
        assert not accepted(item, wrong, known, language)
        answer = Revision.model_validate({"sentences": [{"number": 1, "sentence": right}]})
        revised, count = with_revisions(memo, items, answer, known, language)
        assert count == 1 and revised == f"# Memo\n\n## Findings\n\n{right}\n"
        checked += 1
    assert checked or not cases(path)


MEMO = """# Market memo

## Revenue

Germany leads with KRW 69 billion of revenue. France grew fastest at 21% to €2.4 billion.

| Country | Revenue |
|---|---|
| Germany | 77.7 |

- Unit sales grew to 18 million units.
- Unit sales grew to 18 million units.

```text
A figure in code, 55.5, is no claim.
```
"""
SOURCE = ("Germany remains the largest market with €6.9 billion of revenue. France grew fastest "
          "at 21% to €2.4 billion. Unit sales grew to 5.1 million units.")  # fmt: skip


def test_only_prose_sentences_stating_an_untraced_figure_are_flagged_once_each() -> None:
    """Headings, table rows and code are not revised; a sentence said twice is flagged once,
    with the figures the sources do not hold; a traced sentence is not flagged."""
    assert flagged(MEMO, Known.of([SOURCE])) == [
        Flagged("Germany leads with KRW 69 billion of revenue.", ("69",), "Revenue"),
        Flagged("Unit sales grew to 18 million units.", ("18",), "Revenue"),
    ]
    assert "A figure in code, 55.5, is no claim." not in prose_sentences(MEMO)
    assert flagged(MEMO, Known.of([SOURCE]), limit=1) == [
        Flagged("Germany leads with KRW 69 billion of revenue.", ("69",), "Revenue")
    ]


def test_a_list_item_is_matched_with_its_heading_and_shown_the_sources_amounts_read() -> None:
    """The local model's "Revenue: €1,050 billion" under the heading of a Korean company: the
    heading finds the company's sentence, shown first with its amount read in English."""
    korean = (TESTS / "fixtures" / "assets" / "korea_market_ko.md").read_text(encoding="utf-8")
    report = (TESTS / "fixtures" / "assets" / "market_report_2024.md").read_text(encoding="utf-8")
    memo = ("# Memo\n\n### Major companies\n\n#### 삼천리자전거 (Samchuly)\n\n"
            "- **Revenue**: €1,050 billion (2023Q4)\n")  # fmt: skip
    items = flagged(memo, Known.of([korean, report]))
    assert items == [Flagged("**Revenue**: €1,050 billion (2023Q4)", ("1,050",),
                             "삼천리자전거 (Samchuly)")]  # fmt: skip
    ((_, passages),) = evidence(items, passages_of([report, korean]), "en")
    assert passages[0].startswith("삼천리자전거는 매출 1,050억 원 (= 105 billion won)을")


@pytest.mark.parametrize(
    ("revised", "kept"),
    [
        ("Germany leads with €6.9 billion of revenue.", True),
        ("Germany leads on revenue.", True),  # the figure no passage gives, left out
        ("Germany leads with €7.4 billion of revenue.", False),  # another invented figure
        ("Unit sales grew to 5.1 million units.", False),  # another sentence altogether
        ("Germany leads with €6.9 billion of revenue.\n\n## Added", False),  # more than one
        ("독일은 매출 €6.9 billion으로 1위다.", False),  # another language than confirmed
        ("", False),
        ("Germany leads with €6.9 billion of revenue. " * 4, False),  # far longer
    ],
)
def test_code_keeps_a_revision_only_when_it_is_traced_and_still_that_sentence(
    revised: str, kept: bool
) -> None:
    item = Flagged("Germany leads with KRW 69 billion of revenue.", ("69",))
    assert accepted(item, revised, Known.of([SOURCE]), "en") is kept


def test_a_sentence_copied_in_another_script_may_be_revised_in_it_and_figures_are_blanked() -> None:
    """A source's Korean sentence copied into an English memo may be mended in Korean (it is
    recorded as another script by the closing, not here); an English sentence may not turn
    Korean. The prompt blanks each wrong figure, whole, and never shows it."""
    korean = (TESTS / "fixtures" / "assets" / "korea_market_ko.md").read_text(encoding="utf-8")
    copied = Flagged("삼천리자전거는 매출 1,050억원 (= 105 billionwon)을 기록했다.", ("105",))
    mended = "삼천리자전거는 매출 1,050억원 (= 105 billion won)을 기록했다."
    assert accepted(copied, mended, Known.of([korean]), "en")
    english = Flagged("Samchuly's sales were 1,050 billion won.", ("1,050",))
    turned = "삼천리자전거의 매출은 1,050억 원이었다."
    assert not accepted(english, turned, Known.of([korean]), "en")
    item = Flagged("Sales rose from 105 to 1,105 units, 105.5 a day (105).", ("105",))
    assert blanked(item) == "Sales rose from ___ to 1,105 units, 105.5 a day (___)."
    prompt = revision_messages("system", [(item, [])], "English")[1]["content"]
    assert "from ___ to 1,105" in prompt and "from 105 " not in prompt


def test_revisions_replace_their_sentence_everywhere_and_bad_numbers_are_ignored() -> None:
    """A revision stands in every place its sentence stood; an answer numbering no sentence, or
    a sentence revised twice, changes nothing more."""
    known = Known.of([SOURCE])
    items = flagged(MEMO, known)
    answer = Revision.model_validate({"sentences": [
        {"number": 2, "sentence": "Unit sales grew to 5.1 million units."},
        {"number": 2, "sentence": "Unit sales grew to 18 million units, again."},
        {"number": 7, "sentence": "Nothing."},
    ]})  # fmt: skip
    revised, count = with_revisions(MEMO, items, answer, known, "en")
    assert count == 1 and revised.count("- Unit sales grew to 5.1 million units.") == 2
    assert "18 million" not in revised and "KRW 69 billion" in revised


def test_a_csv_and_a_markdown_table_give_one_passage_per_row_under_its_header() -> None:
    """A table's row is matched with the names of its columns; a wrapped sentence is one."""
    csv = "quarter,region,revenue\n2023-Q1,Germany,1520\n2023-Q2,France,985\n"
    table = "| Country | Revenue (€ bn) |\n|---|---|\n| Germany | 6.9 |\n"
    prose = "Unit sales grew to 5.1 million units, driven by\ncommuter demand.\n"
    assert passages_of([csv, table, prose]) == [
        "quarter,region,revenue\n2023-Q1,Germany,1520",
        "quarter,region,revenue\n2023-Q2,France,985",
        "| Country | Revenue (€ bn) |\n| Germany | 6.9 |",
        "Unit sales grew to 5.1 million units, driven by commuter demand.",
    ]
