"""What a finished (or stopped) case left in its home, read into one plain result."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evals import checklist, logread
from evals.cases import Case

_LINK = re.compile(r"\]\(([^)\s]+)\)|(?:src|href)=\"([^\"]+)\"")
# Events worth counting: a model's bad answers, plans, failures and retries of calls.
COUNTED = (
    "llm_json_invalid", "plan_made", "plan_answer_invalid", "llm_call_failed", "llm_retry",
    "mode_decided", "task_executed", "tool_task_executed",
)  # fmt: skip


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def failure(run_dir: Path, events: list[logread.Event], run_id: str) -> dict[str, Any] | None:
    """Where and why the run failed: its failure signal, else the log, else messages.md."""
    record = _json(run_dir / "signals" / "failure.json")
    if isinstance(record, dict):
        keys = ("role", "phase_id", "stage_id", "task_id", "tool_task_id", "error")
        return {key: record.get(key) for key in keys}
    error = logread.run_failure(events, run_id)
    if error:
        return {"error": error}
    try:
        text = (run_dir / "messages.md").read_text(encoding="utf-8")
    except OSError:
        return None
    said = [p for p in re.split(r"\n\s*\n", text) if re.search(r"fail", p, re.I)]
    return {"error": " ".join(said[-1].split())[:600]} if said else None


def _prose(path: Path) -> str:
    """A deliverable's text: markdown as written, a page without its markup."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return checklist.visible_text(text) if path.suffix == ".html" else text


def deliverable(out_dir: Path) -> tuple[Path | None, str]:
    """The main deliverable: the longest markdown (or text) in outputs/<run_id>/, else a page."""
    for suffixes in ((".md", ".txt"), (".html",)):
        found = [p for p in sorted(out_dir.rglob("*")) if p.is_file() and p.suffix in suffixes]
        texts = {p: _prose(p) for p in found}
        if texts:
            best = max(texts, key=lambda p: checklist.word_count(texts[p]))
            return best, texts[best]
    return None, ""


def charts(out_dir: Path, home: Path, text: str) -> dict[str, str]:
    """The charts among the outputs and the files the deliverable links to (e.g. workspace)."""
    home, out_dir = home.resolve(), out_dir.resolve()
    files = {p for p in out_dir.rglob("*") if p.suffix in (".svg", ".html")}
    for match in _LINK.finditer(text):
        target = (match[1] or match[2]).split("#")[0]
        for base in (out_dir, home):
            candidate = (base / target).resolve()
            # Only the home's own files: a link may point anywhere.
            inside = candidate.is_relative_to(home) and candidate.is_file()
            if inside and candidate.suffix in (".svg", ".html"):
                files.add(candidate)
    parts: dict[str, str] = {}
    for path in sorted(files):
        markup = path.read_text(encoding="utf-8", errors="replace")
        parts.update(checklist.chart_parts(str(path.relative_to(home)), markup))
    return parts


def direct_answer(home: Path) -> tuple[str, Path] | None:
    """A request handled without a run: a SIMPLE_TASK reply, or a refusal (inbox/rejected/)."""
    replies = sorted((home / "inbox" / "done").glob("*.reply.md"))
    if replies:
        return "SIMPLE_REPLY", replies[0]
    rejected = sorted(p for p in (home / "inbox" / "rejected").glob("*") if p.is_file())
    return ("REJECTED", rejected[-1]) if rejected else None


COMPUTED = "(computed facts)"  # not a file: the run's verified facts, as one text


def computed_facts(home: Path, run_id: str | None) -> str:
    """The verified facts of the run's confirmed spec, one per line ("" without a spec)."""
    from evals.corpus_run import run_spec  # the whole engine: imported only for a run's facts
    from executor.builtin.tablefacts import verified_facts

    spec = run_spec(home, run_id)
    return "\n".join(verified_facts(home, spec)) if spec is not None else ""


def deliverable_checks(case: Case, home: Path, run_id: str | None) -> dict[str, Any]:
    """The checklist of the run's deliverable, or of the reply given without a run."""
    out_dir = home / "outputs" / (run_id or "-")
    path, text = deliverable(out_dir) if out_dir.is_dir() else (None, "")
    answer = direct_answer(home) if run_id is None else None
    if answer is not None and answer[0] == "SIMPLE_REPLY":
        path, text = answer[1], answer[1].read_text(encoding="utf-8", errors="replace")
    result: dict[str, Any] = {
        "deliverable": str(path.relative_to(home)) if path else None,
        "outputs": sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if p.is_file())
        if out_dir.is_dir()
        else [],
    }
    if case.corpus is not None:
        from evals import corpus_run  # the whole engine: imported only for a corpus case

        return {**result, "corpus": corpus_run.checks(case.corpus, home, run_id, text)}
    assets = {p.name: p.read_text(encoding="utf-8") for p in case.asset_paths()}
    # A figure computed from the tables (a change, a share) is traced as a source's is: the
    # product states it from the computation CONFIRM froze, and so may the deliverable.
    figures = checklist.check_figures(text, {**assets, COMPUTED: computed_facts(home, run_id)})
    result.update({
        "figures": {**asdict(figures), "passed": figures.passed and path is not None},
        "length": asdict(checklist.check_length(text, case.request)),
        "recommendation": {**asdict(rec := checklist.check_recommendation(text)),
                           "passed": rec.passed},
        "chart": None,
    })  # fmt: skip
    if case.chart_csv:
        series = checklist.revenue_by_country(assets[case.chart_csv])
        found = charts(out_dir, home, text) if out_dir.is_dir() else {}
        result["chart"] = asdict(checklist.check_chart(found, series))
    return result


def model_use(events: list[logread.Event], run_dir: Path | None) -> dict[str, Any]:
    """Calls per role, repairs per call, constrained calls, tokens, and what served each tier."""
    calls = logread.llm_calls(events)
    usage = _json(run_dir / "usage.json") if run_dir else None
    by_role = (
        {role: dict(v) for role, v in usage.get("by_role", {}).items()}
        if isinstance(usage, dict)
        else None
    )
    known = [c.constrained for c in calls if c.constrained is not None]
    crew = next((e for e in events if e.get("event") == "crew_built"), {})
    return {
        "model_backed": crew.get("model_backed"),
        "usage": {k: v for k, v in usage.items() if k != "by_role"} if usage else None,
        "by_role": by_role,
        "calls_logged": len(calls),
        "calls_by_role_logged": dict(Counter(str(c.role) for c in calls)),
        "repair_attempts": sum(1 for c in calls if (c.repairs or 0) > 0),
        "repairs_per_call": {str(k): v for k, v in logread.repairs_per_call(calls).items()},
        "constrained": None if not known and calls else sum(known),
        "constrained_known": len(known),
        "prompt_tokens": sum(c.prompt_tokens or 0 for c in calls),
        "completion_tokens": sum(c.completion_tokens or 0 for c in calls),
        "cached_tokens": (sum(c.cached_tokens or 0 for c in calls)
                          if any(c.cached_tokens is not None for c in calls) else None),
        "finish_length": sum(1 for c in calls if c.finish_reason == "length"),
        # Cut answers that went on: each continuation follows one cut part.
        "continued": sum(1 for c in calls if (c.continuation or 0) > 0),
        "events": logread.event_counts(events, COUNTED),
        "calls": [asdict(c) for c in calls],
    }


def read_back(case: Case, home: Path, run_id: str | None) -> dict[str, Any]:
    """The run's failure, model use, timing and checklist, from its files and the daemon log."""
    events = logread.read_events(home / ".multiverse" / "logs")
    if run_id is None:
        answer = direct_answer(home)
        return {
            "direct_answer": [answer[0], str(answer[1].relative_to(home))] if answer else None,
            "model": model_use(events, None),
            "checklist": deliverable_checks(case, home, None) if answer else None,
        }
    run_dir = home / "runs" / run_id
    timing = logread.timing(events, run_id)
    return {
        "failure": failure(run_dir, events, run_id),
        "model": model_use(events, run_dir),
        "timing": asdict(timing),
        "phase_names": _phase_names(run_dir),
        "checklist": deliverable_checks(case, home, run_id),
    }


def _phase_names(run_dir: Path) -> dict[str, str]:
    """P1 → ANALYZING…, from the run's phases table (read directly: the daemon is gone)."""
    try:
        lines = (run_dir / "db" / "phases.md").read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines
            if line.lstrip().startswith("|")]  # fmt: skip
    if not rows or "phase_id" not in rows[0] or "phase_name" not in rows[0]:
        return {}
    key, name = rows[0].index("phase_id"), rows[0].index("phase_name")
    return {row[key]: row[name] for row in rows[2:] if len(row) > max(key, name)}


def cost(found: dict[str, Any]) -> dict[str, Any]:
    """What one deliverable cost: model calls, prompt tokens (of them cached), completion
    tokens, answers cut at max_tokens, and minutes in all and per phase (pure)."""
    model = found.get("model") or {}
    usage = model.get("usage") or {}
    cached = usage.get("cached_prompt_tokens", model.get("cached_tokens"))
    names = found.get("phase_names") or {}
    spent = (found.get("timing") or {}).get("phases") or {}
    return {
        "calls": usage.get("calls", model.get("calls_logged", 0)),
        "prompt_tokens": usage.get("prompt_tokens", model.get("prompt_tokens", 0)),
        "cached_prompt_tokens": cached,  # None: the run's files do not say
        "completion_tokens": usage.get("completion_tokens", model.get("completion_tokens", 0)),
        "cut_at_max_tokens": model.get("finish_length", 0),
        "minutes": round(float(found.get("total_s") or 0.0) / 60, 2),
        "minutes_per_phase": {names.get(p, p): round(s / 60, 2) for p, s in spent.items()},
        "by_role": {role: {k: v for k, v in spent_by.items() if k in _ROLE_COST}
                    for role, spent_by in (model.get("by_role") or {}).items()},
    }  # fmt: skip


_ROLE_COST = ("calls", "tokens", "cached_prompt_tokens")
