"""The corpus of real public data (tests/corpus): each request read into a spec and checked
against what it must be, offline. `python -m evals corpus` (`make eval-corpus`) prints the
results and writes them into EVALS.md.

A case's assets are copied into a fresh home (descriptions as .docx/.pdf built from their real
text where the case names them); its request and MODIFY texts are read by the offline rules
against the scan of that home; the checked spec is compared with the case's expectations:
charts (file, measures, dimension, aggregation, filters, series, top-N, drawable), files left
out, lookups and computations (answered exactly, or said absent), language, length, mode.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from multiverse.home import Home, init_home
from multiverse.spec import HomeScan, RequestSpec, check_spec, scan_home
from offline import read_request

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"


def cases() -> list[dict[str, Any]]:
    """Every request of the corpus with its expectations."""
    text = (CORPUS / "requests.yaml").read_text(encoding="utf-8")
    # libyaml's safe loader where PyYAML has it: the same data, ten times sooner (the suite's
    # every worker reads the corpus as it collects).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loaded: list[dict[str, Any]] = yaml.load(text, Loader=loader)
    return loaded


@contextmanager
def corpus_home(case: dict[str, Any], documents: Path) -> Iterator[Home]:
    """A fresh home whose assets/ holds the case's files (by their base names)."""
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder) / "home")
        init_home(home)
        lay_out(case, documents, home)
        yield home


def lay_out(case: dict[str, Any], documents: Path, home: Home) -> None:
    """Copy a case's files into an initialised home's assets/ (documents from `documents`, as
    `build_documents` made them) and its guidelines into guidelines/."""
    for asset in case["assets"]:
        name = PurePosixPath(asset).name
        source = CORPUS / asset
        if not source.exists():
            source = documents / name
        shutil.copy(source, home.assets / name)
    for name, text in (case.get("guidelines") or {}).items():
        (home.guidelines / name).write_text(text, encoding="utf-8")


def build_documents(folder: Path) -> None:
    """The corpus's .docx and .pdf descriptions, built from their real text into `folder`."""
    import sys

    # make_documents is a script of tests/corpus, not a module of a package.
    if str(CORPUS) not in sys.path:
        sys.path.insert(0, str(CORPUS))
    from make_documents import build  # type: ignore[import-not-found]

    build(folder)


def spec_of(case: dict[str, Any], home: Home) -> tuple[RequestSpec, HomeScan]:
    """The checked spec of a case's request and MODIFY texts, offline."""
    scan = scan_home(home)
    spec = read_request(case["request"], case.get("modify") or [], scan)
    return check_spec(spec, scan, home.root), scan


@dataclass
class Verdict:
    """What one case got right and wrong."""

    case: str
    expect: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    charts: tuple[int, int] = (0, 0)  # right, asked
    implied: tuple[int, int] = (0, 0)  # charts not asked that a reader may expect: drawn, all
    notes: list[str] = field(default_factory=list)  # what was not asked and not done
    exclusions: tuple[int, int] = (0, 0)
    questions: tuple[int, int] = (0, 0)
    delivered: tuple[int, int] = (0, 0)  # questions answered by the spec or the deliverable
    untraced: int = 0  # numbers of its offline deliverable found in no source or fact
    leaked: int = 0  # files left out that its deliverable names outside the "left out" line

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems


def _base(path: str) -> str:
    return PurePosixPath(path).name


def judge(case: dict[str, Any], spec: RequestSpec) -> Verdict:
    """Compare a case's spec with what the case expects."""
    expect = case.get("expect") or {}
    verdict = Verdict(case["id"], expect=expect)
    if expect.get("language") and spec.language != expect["language"]:
        verdict.problems.append(f"language {spec.language} != {expect['language']}")
    if expect.get("mode") and spec.mode != expect["mode"]:
        verdict.problems.append(f"mode {spec.mode} != {expect['mode']} ({spec.why_run})")
    if expect.get("length_words") and spec.length_words != expect["length_words"]:
        verdict.problems.append(f"length {spec.length_words} != {expect['length_words']}")
    _judge_exclusions(expect, spec, verdict)
    _judge_charts(expect, spec, verdict)
    _judge_questions(expect, spec, verdict)
    return verdict


def _judge_exclusions(expect: dict[str, Any], spec: RequestSpec, verdict: Verdict) -> None:
    wanted = {_base(path) for path in expect.get("left_out") or []}
    got = {_base(path) for path in spec.excluded()}
    used = {_base(path) for path in spec.sources}
    if wanted - got:
        verdict.problems.append(f"not left out: {sorted(wanted - got)}")
    if got - wanted:
        verdict.problems.append(f"left out wrongly: {sorted(got - wanted)}")
    if wanted & used:
        verdict.problems.append(f"excluded but used: {sorted(wanted & used)}")
    verdict.exclusions = (len(wanted & got) - len(wanted & used), len(wanted))


def _judge_charts(expect: dict[str, Any], spec: RequestSpec, verdict: Verdict) -> None:
    """The charts asked, each drawn as expected (or refused with a reason); the charts marked
    `implied` (not asked, but a reader of such a deliverable may expect them) counted apart."""
    wanted = expect.get("charts") or []
    right = {True: 0, False: 0}
    for index, chart in enumerate(wanted):
        implied = bool(chart.get("implied"))
        match = next((c for c in spec.charts if _chart_fits(chart, c)), None)
        if match is None:
            got = [(c.data.model_dump(exclude_defaults=True) if c.data else None, c.drawable,
                    c.reason) for c in spec.charts]  # fmt: skip
            said = f"chart {index + 1} {_shown(chart)}: got {got}"
            (verdict.notes if implied else verdict.problems).append(said)
        else:
            right[implied] += 1
    asked = sum(not chart.get("implied") for chart in wanted)
    verdict.charts = (right[False], asked)
    verdict.implied = (right[True], len(wanted) - asked)


def _chart_fits(wanted: dict[str, Any], chart: Any) -> bool:
    if not wanted.get("drawable", True):
        return not chart.drawable and bool(chart.reason)
    data = chart.data
    if data is None or not chart.drawable or _base(data.file) != _base(wanted["file"]):
        return False
    # a wide group's columns charted as its categories: the very columns, whatever the name
    if sorted(data.measures) != sorted(wanted.get("measures") or []):
        return False
    dimension = wanted.get("dimension") or {}
    if "time" in dimension:
        if data.dimension != "time" or (dimension["time"] and data.frequency not in
                                         (dimension["time"], None)):  # fmt: skip
            return False
    elif "column" in dimension and data.dimension != dimension["column"]:
        return False
    if wanted.get("series_by") and data.series_by != wanted["series_by"]:
        return False
    if wanted.get("top_n") and data.top_n != wanted["top_n"]:
        return False
    filters = wanted.get("filter") or {}
    return all(_same_values(values, data.filters.get(key, [])) for key, values in filters.items())


def _same_values(wanted: list[str], got: list[str]) -> bool:
    """Filter values that keep the same rows: equal ignoring case, or periods covering the same
    months (`2015` keeps what `2015 Q1` … `2015 Q4` keep)."""
    if sorted(v.lower() for v in wanted) == sorted(v.lower() for v in got):
        return True
    months = _months(wanted), _months(got)
    return months[0] is not None and months[0] == months[1]


def _months(values: list[str]) -> set[tuple[int, int]] | None:
    """The months a list of period labels or ranges covers (None: not periods)."""
    from multiverse.tabular.cells import parse_label
    from multiverse.tabular.dataset import time_range

    covered: set[tuple[int, int]] = set()
    for value in values:
        first_text, last_text = time_range(value) or (value, value)
        first, last = parse_label(first_text), parse_label(last_text)
        if first is None or last is None:
            return None
        last_month = {"year": 12, "quarter": last.month + 2}.get(last.grain, last.month)
        month = (first.year, first.month)
        while month <= (last.year, last_month):
            covered.add(month)
            month = (month[0] + month[1] // 12, month[1] % 12 + 1)
    return covered


def _shown(chart: dict[str, Any]) -> str:
    keys = ("file", "measures", "dimension", "filter", "series_by", "top_n", "drawable")
    return str({key: chart.get(key) for key in keys if chart.get(key) not in (None, {}, [])})


def _judge_questions(expect: dict[str, Any], spec: RequestSpec, verdict: Verdict) -> None:
    wanted = [*(expect.get("lookups") or []), *(expect.get("computations") or [])]
    right = 0
    for item in wanted:
        answer = item.get("value", item.get("answer"))
        found = [q for q in spec.questions if q.answerable and answer is not None
                 and _holds(q.answer, str(answer))]  # fmt: skip
        absent = answer is None and any(not q.answerable and q.reason for q in spec.questions)
        if found or absent:
            right += 1
        else:
            got = [(q.answer or q.reason)[:160] for q in spec.questions]
            verdict.problems.append(f"question {answer!r}: got {got}")
    verdict.questions = (right, len(wanted))


def _holds(sentence: str, answer: str) -> bool:
    """Whether an answer sentence states the expected figure (at the expected precision:
    `212.2%` is stated by "212.20 %") or the expected name."""
    if answer.lower() in sentence.lower() or _same_period(sentence, answer):
        return True
    expected = re.fullmatch(r"\s*(-?[\d,]*\.?\d+)\s*%?\s*", answer)
    if expected is None:
        return False
    text = expected.group(1).replace(",", "")
    places = len(text.partition(".")[2])
    wanted = round(float(text), places)
    for found in re.findall(r"-?\d[\d,]*\.?\d*", sentence):
        try:
            if round(float(found.replace(",", "")), places) == wanted:
                return True
        except ValueError:
            continue
    return False


def _same_period(sentence: str, answer: str) -> bool:
    """Whether the sentence names the period the answer names, in any form (`1993 Dec` is
    `1993-12`; the first day of a month stands for the month in a monthly table)."""
    from multiverse.tabular.cells import parse_label

    wanted = parse_label(answer)
    if wanted is None or wanted.grain == "year":
        return False
    for label in re.findall(r"\d{4}-\d{2}(?:-\d{2})?|\d{4}Q[1-4]", sentence):
        found = parse_label(label)
        if found is None:
            continue
        if (found.year, found.month) == (wanted.year, wanted.month) and (
            found.grain == wanted.grain or (wanted.grain == "day" and wanted.day == 1)
        ):
            return True
    return False


RUN_ID = "run-20260101-000000-001"
_LEFT_OUT_LINES = ("Left out as you asked:", "요청에 따라 제외:")


def deliver(home: Home, spec: RequestSpec) -> tuple[str, dict[str, Any]]:
    """The offline deliverable of a confirmed spec, as the publishing task writes it: the
    report's markdown and its delivery record."""
    import json

    from executor.builtin import BuiltinExecutor
    from multiverse.home import PHASE_FOLDERS
    from multiverse.models import MajorStage, Phase, Task
    from multiverse.roles import TaskAssignment

    for folder in PHASE_FOLDERS:
        home.run(RUN_ID).phase_workspace(folder).mkdir(parents=True, exist_ok=True)
    outputs = home.root / "outputs" / RUN_ID
    outputs.mkdir(parents=True, exist_ok=True)
    task = Task(task_id="P4-S01-T01", run_id=RUN_ID, stage_id="P4-S01", task_name="Publish",
                task_purpose="Publish the deliverable.", related_references=["assets/"],
                output_path=f"outputs/{RUN_ID}/report.md", execution_order=1)  # fmt: skip
    assignment = TaskAssignment(
        home=str(home.root), run_id=RUN_ID, request=spec.request,
        phase=Phase(phase_id="P4", run_id=RUN_ID, phase_name="GENERATING_OUTPUT"),
        stage=MajorStage(stage_id="P4-S01", run_id=RUN_ID, phase_id="P4", stage_name="Publish",
                         execution_order=1),
        task=task, spec=spec.model_copy(update={"confirmed": True}),
    )  # fmt: skip
    signal = BuiltinExecutor().execute_task(assignment)
    if signal.status != "COMPLETED":
        raise RuntimeError(f"the publishing task failed: {signal.error}")
    delivery = home.run(RUN_ID).phase_workspace("GENERATING_OUTPUT") / "delivery.json"
    record: dict[str, Any] = json.loads(delivery.read_text(encoding="utf-8"))
    return (outputs / "report.md").read_text(encoding="utf-8"), record


def judge_deliverable(spec: RequestSpec, report: str, record: dict[str, Any],
                      verdict: Verdict) -> None:  # fmt: skip
    """Untraced numbers and files left out named anywhere but the line that lists them."""
    body = "\n".join(
        line for line in report.splitlines() if not line.startswith(_LEFT_OUT_LINES)
    )
    leaked = [path for path in sorted(spec.excluded()) if path in body or _base(path) in body]
    _judge_delivered(spec, report, verdict)
    verdict.untraced = int(record.get("untraced_numbers") or 0)
    verdict.leaked = len(leaked)
    if verdict.untraced:
        verdict.problems.append(f"deliverable: {verdict.untraced} numbers found in no source")
    if leaked:
        verdict.problems.append(f"deliverable names files left out: {', '.join(leaked)}")


def _judge_delivered(spec: RequestSpec, report: str, verdict: Verdict) -> None:
    """The expected answers the reader gets: the spec's, or a line of the deliverable that
    states the figure and names the measure (an answer asked without a question mark, such
    as "what stands out", is among the facts computed from the tables)."""
    expect = verdict.expect
    wanted = [*(expect.get("lookups") or []), *(expect.get("computations") or [])]
    right = 0
    lines = report.splitlines()
    for item in wanted:
        answer = item.get("value", item.get("answer"))
        if answer is None:
            right += any(not q.answerable and q.reason for q in spec.questions)
            continue
        if any(q.answerable and _holds(q.answer, str(answer)) for q in spec.questions):
            right += 1
            continue
        named = item.get("measure") or item.get("column") or ""
        measures = [str(m).lower() for m in (named if isinstance(named, list) else [named])]
        right += any(_holds(line, str(answer)) and any(m in line.lower() for m in measures)
                     for line in lines)  # fmt: skip
    verdict.delivered = (right, len(wanted))


def evaluate(documents: Path, deliverables: bool = True) -> list[Verdict]:
    """Every case judged (with `deliverables`, its offline deliverable too)."""
    verdicts = []
    for case in cases():
        with corpus_home(case, documents) as home:
            spec, _scan = spec_of(case, home)
            verdict = judge(case, spec)
            if deliverables:
                report, record = deliver(home, spec)
                judge_deliverable(spec, report, record, verdict)
        verdicts.append(verdict)
    return verdicts


def report(verdicts: list[Verdict]) -> str:
    """The results as markdown: totals by kind, then each case that has a problem."""

    def total(name: str) -> str:
        right = sum(getattr(v, name)[0] for v in verdicts)
        asked = sum(getattr(v, name)[1] for v in verdicts)
        return f"{right}/{asked}"

    ok = sum(v.ok for v in verdicts)
    untraced = sum(v.untraced for v in verdicts)
    leaked = sum(v.leaked for v in verdicts)
    lines = [
        "| cases fully right | charts asked | exclusions | questions (in the spec) | questions "
        "(answered in the spec or the deliverable) | deliverables: numbers untraced | "
        "deliverables: files left out named | charts not asked but expected |",
        "|---|---|---|---|---|---|---|---|",
        f"| {ok}/{len(verdicts)} | {total('charts')} | {total('exclusions')} | "
        f"{total('questions')} | {total('delivered')} | {untraced} | {leaked} | "
        f"{total('implied')} |",
        "",
    ]
    for verdict in verdicts:
        if not verdict.ok:
            lines.append(f"- **{verdict.case}**: " + "; ".join(verdict.problems))
    for verdict in verdicts:
        if verdict.notes:
            lines.append(f"- **{verdict.case}** (not asked): " + "; ".join(verdict.notes))
    return "\n".join(lines)


EVALS_MD = CORPUS.parent.parent / "EVALS.md"
BEGIN, END = "<!-- corpus results: make eval-corpus -->", "<!-- end of corpus results -->"


def write(text: str, revision: str) -> None:
    """Put the results into EVALS.md between their markers (added at the end the first time)."""
    block = (
        f"{BEGIN}\n## The corpus, offline (`make eval-corpus`, {revision})\n\n"
        "Each request of tests/corpus read by the offline rules into a checked spec and judged "
        "against its expectations: charts asked (table, measures, dimension, filter, series, "
        "top-N, drawable; the charts a request did not ask for but a reader may expect are "
        "counted apart), files left out (used nowhere), lookups and computations (the figure "
        "in the answer), language, length, mode; then each case's offline deliverable is published "
        "from its spec and every number in it traced to the sources or the computed facts, and "
        "no file left out may be named in it but in the line that lists them.\n\n"
        f"{text}\n{END}"
    )
    write_block(BEGIN, END, block)


def write_block(begin: str, end: str, block: str) -> None:
    """Replace the part of EVALS.md between two markers with `block` (which holds them), or
    add it at the end the first time."""
    current = EVALS_MD.read_text(encoding="utf-8") if EVALS_MD.exists() else "# Evaluations\n"
    if begin in current and end in current:
        head, _, rest = current.partition(begin)
        _, _, tail = rest.partition(end)
        updated = head + block + tail
    else:
        updated = current.rstrip("\n") + "\n\n" + block + "\n"
    EVALS_MD.write_text(updated, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Print the corpus results (and with --write, record them in EVALS.md); with --model,
    the chosen --cases read by the local model instead."""
    import subprocess

    args = list(argv or [])
    with tempfile.TemporaryDirectory() as folder:
        documents = Path(folder)
        build_documents(documents)
        if "--model" in args:
            from evals.corpus_model import evaluate_model, model_report, write_model
            from evals.mapping import local_tier

            ids = args[args.index("--cases") + 1].split(",") if "--cases" in args else []
            tier = local_tier()
            text = model_report(evaluate_model(documents, ids, tier), str(tier["model"]))
        else:
            text = report(evaluate(documents))
    print(text)
    if "--write" in args:
        revision = subprocess.run(
            ["git", "-C", str(CORPUS), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        where = f"at {revision}" if revision else "this checkout"
        if "--model" in args:
            from evals.corpus_model import write_model

            write_model(text, where)
        else:
            write(text, where)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(__import__("sys").argv[1:]))
