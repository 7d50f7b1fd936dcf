"""The request spec on real public data nobody here wrote (tests/corpus): every request of the
corpus read offline into a checked spec, whose promises hold against the files.

What must hold for every case: a file left out is used nowhere (no source, no chart, no
question); a chart either carries its first values or says why it cannot be drawn; a question
is answered with a figure and a citation or said unanswerable with a reason; the language is
the requester's. The corpus's own expectations (`evals.corpus.judge`) are recorded in EVALS.md
(`make eval-corpus`); exclusions must all be right.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals.corpus import CORPUS, cases, corpus_home, deliver, judge, judge_deliverable, spec_of
from multiverse.spec import RequestSpec

CASES = cases()


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The .docx and .pdf descriptions the corpus builds from their real text."""
    sys.path.insert(0, str(CORPUS))
    try:
        from make_documents import build  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(CORPUS))
    folder = tmp_path_factory.mktemp("documents")
    build(folder)
    yield folder


_READ: dict[tuple[str, Path], RequestSpec] = {}


def _spec(case: dict[str, Any], documents: Path) -> RequestSpec:
    """The case's spec, read once in this process: a spec is frozen, and three tests read it."""
    key = (case["id"], documents)
    if key not in _READ:
        with corpus_home(case, documents) as home:
            _READ[key], _scan = spec_of(case, home)
    return _READ[key]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_every_request_reads_into_a_spec_that_keeps_its_promises(
    case: dict[str, Any], documents: Path
) -> None:
    """Left-out files are used nowhere; charts and questions are done or say why; the
    language is the requester's."""
    spec = _spec(case, documents)
    excluded = spec.excluded()
    assert not excluded & set(spec.sources)
    for chart in spec.charts:
        if chart.data is not None and chart.data.file in excluded:
            assert not chart.drawable
        if chart.drawable:
            assert chart.preview and chart.title, chart
        else:
            assert chart.reason, chart
    for question in spec.questions:
        asked = question.lookup or question.compute
        assert asked is None or asked.file not in excluded or not question.answerable
        if question.answerable:
            assert re.search(r"\d|[A-Za-z가-힣]", question.answer), question
            assert re.search(r"(?:rows?|행)\s*\d|\d+\s*행|\.(?:csv|json|tsv|xlsx)", question.answer)
        else:
            assert question.reason, question
    assert spec.language == (case.get("expect") or {}).get("language", case["lang"])


@pytest.mark.parametrize(
    "case",
    [case for case in CASES if (case.get("expect") or {}).get("left_out")],
    ids=lambda case: case["id"],
)
def test_every_exclusion_of_the_corpus_is_read_and_never_reversed(
    case: dict[str, Any], documents: Path
) -> None:
    """Singular, plural, group and Korean exclusions, in the request or a MODIFY: each file
    meant is left out, and none other."""
    verdict = judge(case, _spec(case, documents))
    right, asked = verdict.exclusions
    assert right == asked, verdict.problems
    assert not [p for p in verdict.problems if "left out" in p or "excluded" in p]


# The cases whose deliverables are published here (the whole corpus: `make eval-corpus`):
# every case that leaves files out, and every seventh of the others.
DELIVERED = [
    case for index, case in enumerate(CASES)
    if (case.get("expect") or {}).get("excluded") or "excl" in case["id"] or index % 7 == 0
]  # fmt: skip


@pytest.mark.parametrize("case", DELIVERED, ids=[case["id"] for case in DELIVERED])
def test_the_offline_deliverable_traces_every_number_and_names_no_file_left_out(
    case: dict[str, Any], documents: Path
) -> None:
    """Published from the spec: no number that no source or computed fact holds, no file left
    out named anywhere but in the line that lists them, and every chart that cannot be drawn
    said as not done."""
    with corpus_home(case, documents) as home:
        spec, _scan = spec_of(case, home)
        report, record = deliver(home, spec)
    verdict = judge(case, spec)
    judge_deliverable(spec, report, record, verdict)
    assert verdict.untraced == 0, report
    assert verdict.leaked == 0, report
    # every chart the proposal said cannot be drawn is said again as not done
    said = " ".join(record["not_done"])
    for chart in spec.charts:
        if not chart.drawable:
            assert chart.reading.phrase[:40] in said, (chart, record)


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_every_proposals_first_screen_says_what_will_be_done(
    case: dict[str, Any], documents: Path
) -> None:
    """The first 25 lines of an 80-column terminal hold every instruction (the first eight, in
    short, the rest counted) and how to answer; the instructions table reads back whole."""
    from multiverse.roles import LearningContext, Proposal
    from planner.builtin.proposal import derived_instructions
    from planner.proposal_doc import read_instructions, render_proposal

    spec = _spec(case, documents)
    run_id = "run-20260301-090000-001"
    instructions = derived_instructions(spec, run_id, [], [])
    proposal = Proposal(understanding="-", instructions=instructions, made_offline=True, spec=spec)
    text = render_proposal(proposal, run_id, LearningContext())
    rows = [row for line in text.splitlines() for row in _terminal_rows(line, 80)]
    first_screen = "\n".join(rows[:25])
    for item in instructions[:8]:
        assert f"**{item.instruction_type}**" in first_screen, item
    if len(instructions) > 8:
        assert f"{len(instructions) - 8} " in first_screen
    assert f"multiverse confirm {run_id}" in first_screen.replace("\n", "")
    assert read_instructions(text) == instructions


def _terminal_rows(line: str, columns: int) -> list[str]:
    """The rows a line takes on a terminal `columns` wide (wide characters take two)."""
    from wcwidth import wcwidth

    rows, row, used = [], "", 0
    for char in line:
        width = max(wcwidth(char), 0)
        if used + width > columns:
            rows.append(row)
            row, used = "", 0
        row += char
        used += width
    return [*rows, row]
