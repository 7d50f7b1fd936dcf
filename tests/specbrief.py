"""Helpers of the deliverable tests: a home holding corpus tables, a checked spec, the publishing
task run through the builtin Executor, and the corpus files read independently (stdlib csv)."""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from executor.builtin import BuiltinExecutor
from multiverse.home import PHASE_FOLDERS, Home
from multiverse.models import MajorStage, Phase, Task
from multiverse.roles import ResultSignal, TaskAssignment
from multiverse.spec import Chart, ChartAsk, Reading, RequestSpec, check_spec, scan_home

CORPUS = Path(__file__).resolve().parent / "corpus" / "tables"
RUN = "run-20260301-000000-001"


def corpus_home(home: Home, *names: str) -> Path:
    """The home with corpus tables (and their descriptions) in assets/ and a run's folders."""
    for name in names:
        for suffix in (".csv", ".md"):
            shutil.copy(CORPUS / f"{name}{suffix}", home.assets / f"{name}{suffix}")
    for folder in PHASE_FOLDERS:
        home.run(RUN).phase_workspace(folder).mkdir(parents=True, exist_ok=True)
    home.run(RUN).outputs.mkdir(parents=True, exist_ok=True)
    return home.root.resolve()


def chart(phrase: str, file: str, *measures: str, **fields: Any) -> Chart:
    """A chart asked for in the request's words."""
    ask = ChartAsk(file=f"assets/{file}", measures=list(measures), **fields)
    return Chart(data=ask, reading=Reading(phrase=phrase, origin="request"))


def checked(home: Home, spec: RequestSpec) -> RequestSpec:
    """The spec as the one validator checks it against the home, confirmed."""
    scan = scan_home(home)
    if not spec.sources:
        spec = spec.model_copy(update={"sources": [item.path for item in scan.files]})
    return check_spec(spec, scan, home.root).model_copy(update={"confirmed": True})


@dataclass(frozen=True)
class Published:
    """What the publishing task wrote."""

    signal: ResultSignal
    report: str
    html: str
    delivery: dict[str, Any]


def assignment(home: Home, spec: RequestSpec | None, out: str = "report.md",
               request: str = "") -> TaskAssignment:  # fmt: skip
    """The publishing task of GENERATING_OUTPUT with the run's spec."""
    task = Task(task_id="P4-S02-T01", run_id=RUN, stage_id="P4-S02", task_name="Publish",
                task_purpose="Publish the deliverable.", related_references=["assets/"],
                output_path=f"outputs/{RUN}/{out}", execution_order=1)  # fmt: skip
    return TaskAssignment(
        home=str(home.root), run_id=RUN, request=spec.request if spec else request,
        phase=Phase(phase_id="P4", run_id=RUN, phase_name="GENERATING_OUTPUT"),
        stage=MajorStage(stage_id="P4-S02", run_id=RUN, phase_id="P4", stage_name="Publish",
                         execution_order=2),
        task=task, spec=spec,
    )  # fmt: skip


def publish(home: Home, spec: RequestSpec) -> Published:
    """Run the builtin publishing task for the spec."""
    signal = BuiltinExecutor().execute_task(assignment(home, spec))
    assert signal.status == "COMPLETED", signal.error
    outputs = home.root / "outputs" / RUN
    delivery = home.run(RUN).phase_workspace("GENERATING_OUTPUT") / "delivery.json"
    return Published(
        signal,
        (outputs / "report.md").read_text(encoding="utf-8"),
        (outputs / "report.html").read_text(encoding="utf-8"),
        json.loads(delivery.read_text(encoding="utf-8")),
    )


def rows(name: str) -> list[dict[str, str]]:
    """A corpus table's rows as the csv module reads them."""
    with (CORPUS / f"{name}.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def line_of(name: str, column: str, value: str) -> int:
    """The file line of the first row whose column holds the value (the header is line 1)."""
    return next(n for n, row in enumerate(rows(name), start=2) if row[column] == value)


def section(markdown: str, heading: str) -> str:
    """The text of one `## ` section."""
    start = markdown.index(f"## {heading}\n") + len(heading) + 4
    end = markdown.find("\n## ", start)
    return markdown[start : end if end != -1 else len(markdown)]
