"""The offline engine's deliverable: an evidence brief that follows the request (issue 13).

End to end through the CLI in child processes over a real home holding the three assets of the
newcomer's journey (a Nordic EV charging brief, a Korean battery-recycling brief, a revenue CSV).
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

from multiverse.home import Home
from multiverse.store import USER_INSTRUCTIONS, TableStore

from journey import cli, once, only_run, runs

BRIEF_ASSETS = Path(__file__).parent / "fixtures" / "brief_assets"
JOURNEY = (
    "Analyse the market reports in assets/ and write a two-page market-entry memo for a "
    "charging-network investor, with a chart of revenue by country."
)
WORDS = re.compile(r"\w+")


def brief_assets(home: Home) -> None:
    """Copy the journey's three assets into the home."""
    for path in sorted(BRIEF_ASSETS.iterdir()):
        shutil.copy(path, home.assets / path.name)


def proposed(home: Home, request: str) -> str:
    """Submit a request and run until its proposal waits; returns the run id."""
    assert cli(home, "submit", request).returncode == 0
    result = once(home)
    assert result.returncode == 0, result.stderr
    waiting = [r for r in runs(home) if r["status"] == "AWAITING_CONFIRMATION"]
    assert len(waiting) == 1, runs(home)
    return str(waiting[0]["run_id"])


def completed(home: Home, run_id: str) -> str:
    """Confirm a run, run it to the end, and return its report.md."""
    assert cli(home, "confirm", run_id).returncode == 0
    result = once(home)
    assert result.returncode == 0, result.stderr
    status = {r["run_id"]: r["status"] for r in runs(home)}
    assert status[run_id] == "COMPLETED", status
    return (home.run(run_id).outputs / "report.md").read_text(encoding="utf-8")


def people_count(markdown: str) -> int:
    """The words of a text as people count them: tokens holding a letter or a digit."""
    return len([token for token in markdown.split() if re.search(r"\w", token)])


def csv_totals(path: Path, group: str, value: str) -> dict[str, int]:
    """The per-group sums of a CSV column, computed here with the csv module."""
    totals: dict[str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            totals[row[group]] = totals.get(row[group], 0) + int(row[value])
    return totals


def section(markdown: str, heading: str) -> str:
    """The text under a `## heading`, up to the next one."""
    return markdown.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def own_sentences(markdown: str) -> str:
    """The brief's text that is its own: not a quote, not a cited fact, not the model note."""
    kept = []
    skip = False
    for line in markdown.splitlines():
        if line.startswith("## "):
            skip = line.startswith("## What a model would add")
        if skip or line.startswith(">") or " — _`" in line:
            continue
        kept.append(line)
    return "\n".join(kept)


def test_the_newcomers_journey(home: Home) -> None:
    """The proposal shows the length, the audience and the chart; the brief has the chart's real
    per-country totals, stays within two pages (±15 %) and says so when the sources hold too
    little to fill them (never padding with what does not bear on the request), and recommends
    nothing of its own."""
    brief_assets(home)
    run_id = proposed(home, JOURNEY)
    proposal = home.run(run_id).feedback.read_text(encoding="utf-8")
    understood = proposal.split("## How I understood the request", 1)[1].split("\n## ", 1)[0]
    assert "2 pages (about 1,000 words)" in understood and '"two-page"' in understood
    assert "a charging-network investor" in understood
    totals = csv_totals(BRIEF_ASSETS / "revenue_by_country.csv", "country", "revenue_eur")
    chart = next(line for line in understood.splitlines() if "revenue_by_country.csv`)" in line)
    assert chart.strip().startswith("- Total revenue (EUR) by country")
    assert all(f"{country}: {total:,}" in chart for country, total in totals.items())
    assert "**Web search:** not asked" in understood
    assert "RESEARCH" not in proposal.split("## Proposed instructions", 1)[1]

    report = completed(home, run_id)
    assert report.splitlines()[2].startswith("# Analyse the market reports in assets/")
    assert "offline" in report.lower()
    totals = csv_totals(BRIEF_ASSETS / "revenue_by_country.csv", "country", "revenue_eur")
    for country, total in totals.items():
        assert f"| {country} | {total:,} |" in report
    assert "Total revenue (EUR) by country" in report
    assert "_Computed from the table (assets/revenue_by_country.csv rows 2–49)._" in report
    assert (home.run(run_id).outputs / "report-chart-1.svg").is_file()
    count = people_count(report)
    assert count <= 1150
    if count < 850:  # short of two pages: said, not padded
        assert "shorter than the length asked" in section(report, "Not followed")
    assert "“Enter Sweden first.”" in section(report, "What the sources conclude (quoted)")
    advice = [line for line in report.splitlines() if "recommend" in line.casefold()]
    # only ever the sources' words: a quote with its citation
    assert all("“" in line and "” (`assets/" in line for line in advice), advice
    mine = own_sentences(report).casefold()
    for judgement in ("we recommend", "recommended direction", "should ", "concentrate on"):
        assert judgement not in mine
    passages = section(report, "What the sources say")
    assert re.search(r"\(`assets/nordic_ev_market\.md`, § [^,]+, line \d+\)", passages)
    assert "korea_battery_recycling.md" not in passages  # bears nothing on the request
    html = (home.run(run_id).outputs / "report.html").read_text(encoding="utf-8")
    assert "<svg" in html and "Norway" in html


def test_two_requests_rank_different_facts(home: Home) -> None:
    """Two requests over the same assets give briefs whose ranked facts differ."""
    brief_assets(home)
    finland = proposed(home, "Write a one-page briefing on Finland's charging market.")
    first = section(completed(home, finland), "What the sources say")
    risks = proposed(home, "Write a one-page note on grid connection delays and price pressure.")
    second = section(completed(home, risks), "What the sources say")
    lead = [line for line in first.splitlines() if line.startswith("1. ")]
    other = [line for line in second.splitlines() if line.startswith("1. ")]
    assert lead and other and lead != other
    assert "Finland" in lead[0]
    assert "grid connection" in other[0].casefold() or "price" in other[0].casefold()


def test_modify_twice_then_confirm_keeps_both(home: Home) -> None:
    """Both MODIFY texts are in the confirmed instructions, and the brief follows them."""
    brief_assets(home)
    run_id = proposed(home, JOURNEY)
    first = "Leave out the Korean battery report. Make it one page."
    second = "Add a chart of sessions by country."
    for text in (first, second):
        assert cli(home, "modify", run_id, text).returncode == 0
        assert once(home).returncode == 0
    report = completed(home, run_id)
    rows = TableStore().table(USER_INSTRUCTIONS, home.db / USER_INSTRUCTIONS.filename).rows()
    confirmed: dict[str, str] = {}
    for row in rows:  # one CHART instruction per chart: their contents together
        if row.run_id == run_id:
            confirmed[row.instruction_type] = " ".join(
                filter(None, [confirmed.get(row.instruction_type), row.content])
            )
    assert first in confirmed["USER_MODIFICATION"] and second in confirmed["USER_MODIFICATION"]
    assert confirmed["LENGTH"].startswith("1 page")
    assert "Left out: `assets/korea_battery_recycling.md`" in confirmed["SOURCES"]
    assert "sessions" in confirmed["CHART"] and "revenue_eur" in confirmed["CHART"]
    assert "korea_battery_recycling.md`, §" not in report  # nothing quoted from the left-out file
    sessions = csv_totals(BRIEF_ASSETS / "revenue_by_country.csv", "country", "sessions")
    assert f"| Norway | {sessions['Norway']:,} |" in report
    assert people_count(report) <= 575


def test_an_edited_proposal_is_what_is_confirmed(home: Home) -> None:
    """A length edited in the proposal's table before CONFIRM is the length of the brief."""
    brief_assets(home)
    run_id = proposed(home, JOURNEY)
    feedback = home.run(run_id).feedback
    text = feedback.read_text(encoding="utf-8")
    edited = re.sub(r"\| 2 pages \(about 1,000 words\), ±15 %\. *\|", "| 1 page, ±15 %. |", text)
    assert edited != text
    feedback.write_text(edited, encoding="utf-8")
    report = completed(home, run_id)
    assert people_count(report) <= 575
    spec = json.loads(home.run(run_id).spec.read_text(encoding="utf-8"))
    assert spec["length_words"] == 500  # the edited table is the confirmed length
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    assert "are what was confirmed (changed or added: LENGTH)" in messages


def test_an_unreadable_proposal_edit_is_said_to_be_ignored(home: Home) -> None:
    """A table that cannot be read is not confirmed silently: the message says why it was not."""
    brief_assets(home)
    run_id = proposed(home, JOURNEY)
    feedback = home.run(run_id).feedback
    text = feedback.read_text(encoding="utf-8")
    feedback.write_text(text.replace("| justification ", "| reason        "), encoding="utf-8")
    report = completed(home, run_id)
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    assert "was ignored: its columns are" in messages
    spec = json.loads(home.run(run_id).spec.read_text(encoding="utf-8"))
    assert spec["length_words"] == 1000  # the Planner's two pages stand
    assert 575 < people_count(report) <= 1150


def test_past_runs_are_offered_as_references(home: Home) -> None:
    """A second, similar request reuses the first run's brief and says so in its proposal."""
    brief_assets(home)
    first = proposed(home, JOURNEY)
    completed(home, first)
    second = proposed(home, "Write a one-page market-entry note on the Nordic charging market.")
    proposal = home.run(second).feedback.read_text(encoding="utf-8")
    assert "**Past work reused**" in proposal
    assert f"`outputs/{first}/report.md` (run {first}" in proposal
    completed(home, second)
    tasks = (home.run(second).db / "tasks.md").read_text(encoding="utf-8")
    assert f"outputs/{first}/report.md" in tasks and "Read past work" in tasks
    assert only_run is not None  # the helper module is shared; one home holds both runs here


def _publish(home: Home, purpose: str) -> str:
    """Run the builtin publishing task over the journey's assets with this purpose."""
    from executor.builtin import BuiltinExecutor
    from multiverse.models import MajorStage, Phase, Task
    from multiverse.roles import TaskAssignment

    run = "run-20260101-000000-001"
    (home.root / "outputs" / run).mkdir(parents=True, exist_ok=True)
    task = Task(task_id="P4-S02-T01", run_id=run, stage_id="P4-S02", task_name="Publish",
                task_purpose=purpose, related_references=["assets/"],
                output_path=f"outputs/{run}/report.md", execution_order=1)  # fmt: skip
    signal = BuiltinExecutor().execute_task(
        TaskAssignment(
            home=str(home.root), run_id=run,
            request="Write a one-page note on the Nordic charging market.",
            phase=Phase(phase_id="P4", run_id=run, phase_name="GENERATING_OUTPUT"),
            stage=MajorStage(stage_id="P4-S02", run_id=run, phase_id="P4",
                             stage_name="Publish", execution_order=2),
            task=task,
        )
    )  # fmt: skip
    assert signal.status == "COMPLETED", signal.error
    return (home.root / "outputs" / run / "report.md").read_text(encoding="utf-8")


def test_a_task_purpose_edited_by_hand_changes_the_work(home: Home) -> None:
    """The purpose of the publishing task steers which facts lead (the Planner's own words in
    it do not)."""
    brief_assets(home)
    planned = _publish(home, "Publish an evidence brief for the request, the facts ranked.")
    edited = _publish(home, "Only what concerns winter utilisation and heating costs.")
    lead = [line for line in section(edited, "Facts that bear on the question").splitlines()
            if line.startswith("1. ")]  # fmt: skip
    assert lead and "Winter utilisation" in lead[0]
    assert "winter" in edited.split("request's words (", 1)[1].split(")", 1)[0]
    assert "evidence" not in planned.split("request's words (", 1)[1].split(")", 1)[0]


def test_documents_are_catalogued_and_cited_in_a_brief(home: Home) -> None:
    """A PDF, a .docx and an .xlsx (made here with the libraries) are catalogued with their real
    text and quoted in the brief with their file and location (page, heading), a sheet's
    figures computed and cited with the sheet and row."""
    from makedocs import DOCX_SENTENCE, PDF_PAGE_2, write_docx, write_pdf, write_xlsx

    write_pdf(home.assets / "market_study.pdf")
    write_docx(home.assets / "fleet_review.docx")
    write_xlsx(home.assets / "sales.xlsx")
    run_id = proposed(home, "Write a one-page note on e-bike sales, the fleet and Germany.")
    report = completed(home, run_id)
    catalog = (home.db / "knowledge_base_catalog.md").read_text(encoding="utf-8")
    assert "PDF, 2 pages" in catalog and "Germany remains the largest market" in catalog
    assert "Fleet Review 2024" in catalog and "Sales" in catalog
    assert f"{PDF_PAGE_2.split(' in 2024')[0]}" in report
    assert "`assets/market_study.pdf`, § Page 2, line" in report
    assert DOCX_SENTENCE in report and "`assets/fleet_review.docx`, § Summary" in report
    assert "(assets/sales.xlsx, sheet Sales, row" in report  # a sheet's figures are computed
