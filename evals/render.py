"""EVALS.md, rendered from every result file in evals/results/: never written by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals import cells
from evals.cases import CASES, REPO
from evals.results import RESULTS, load_all

EVALS_MD = REPO / "EVALS.md"
_ORDER = {"before": 0, "after": 1}  # then the other labels, by name
_COLUMNS = ("case", "outcome (where/why)", "model calls", "tokens (prompt + completion)",
            "wall time per phase", "checklist")  # fmt: skip


def _labels(results: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(results, key=lambda label: (_ORDER.get(label, 2), label))


def _table(header: tuple[str, ...] | list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cells.cell(c) for c in row) + " |" for row in rows]


def _how(meta: dict[str, Any]) -> list[str]:
    """Command, multiverse checkout, tiers, server and machine of one invocation."""
    rev = meta.get("multiverse") or {}
    commit = str(rev.get("commit") or rev.get("executable", "?"))
    if rev.get("uncommitted_changes"):
        commit += " + uncommitted changes"
    server = meta.get("server") or {}
    served = (f"{server.get('alias')} ({server.get('quantisation') or '?'}), llama.cpp "
              f"{server.get('build') or '?'}, {server.get('slots') or '?'} slot(s)"
              if server else "—")  # fmt: skip
    box = meta.get("machine") or {}
    machine = f"{box.get('cores')} cores ({box.get('cpu') or '?'}), {box.get('memory_gb')} GB"
    return [f"`{meta.get('command', '?')}`", commit, str(meta.get("tiers", "?")), served, machine]


def _runs(results: dict[str, dict[str, Any]]) -> list[str]:
    """How each label ran, one row per invocation: its cases, dates, command, model, machine."""
    rows: dict[tuple[str, ...], list[list[str]]] = {}
    for label in _labels(results):
        for name, case in _cases(results[label], None):
            how = (label, *_how(case.get("meta") or {}))
            rows.setdefault(how, []).append([name, str((case.get("meta") or {}).get("date"))])
    table = [[how[0], ", ".join(n for n, _ in runs), min(d for _, d in runs)[:16], *how[1:]]
             for how, runs in rows.items()]  # fmt: skip
    return _table(("label", "cases", "first date (UTC)", "command", "multiverse", "tiers",
                   "server", "machine"), table)  # fmt: skip


def _cases(data: dict[str, Any], kind: bool | None = False) -> list[tuple[str, dict[str, Any]]]:
    """A label's cases in the order of the case set (unknown names last): the fixed ones
    (`kind` False), the corpus ones (True) or all (None)."""
    order = {name: i for i, name in enumerate(CASES)}
    chosen = [item for item in data["cases"].items()
              if kind is None or bool(item[1].get("corpus")) == kind]  # fmt: skip
    return sorted(chosen, key=lambda item: (order.get(item[0], len(order)), item[0]))


def _fixed(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The labels that ran a fixed case, with those cases only."""
    found = {label: {**data, "cases": dict(_cases(data))} for label, data in results.items()}
    return {label: data for label, data in found.items() if data["cases"]}


def _label_section(label: str, data: dict[str, Any]) -> list[str]:
    rows = [[name, cells.outcome(case), cells.calls(case), cells.tokens(case),
             cells.phases(case), cells.checklist(case)]
            for name, case in _cases(data)]  # fmt: skip
    return [f"## {label}", "", *_table(_COLUMNS, rows), ""]


def _side_by_side(results: dict[str, dict[str, Any]]) -> list[str]:
    """One row per case and measure, one column per label."""
    labels = _labels(results)
    measures = (
        ("outcome", lambda c: str(c.get("outcome"))),
        ("model calls", cells.calls),
        ("tokens", cells.tokens),
        ("wall time", cells.wall_time),
        ("checklist", cells.checklist),
    )
    order = {name: i for i, name in enumerate(CASES)}
    every = {name for data in results.values() for name in data["cases"]}
    names = sorted(every, key=lambda name: (order.get(name, len(order)), name))
    rows = []
    for name in names:
        for measure, show in measures:
            row = [name, measure]
            for label in labels:
                case = results[label]["cases"].get(name)
                row.append(show(case) if case else "not run")
            rows.append(row)
    return _table(["case", "measure", *labels], rows)


def render() -> str:
    """The whole of EVALS.md from the result files."""
    results = load_all()
    lines = [
        "# Evaluations",
        "",
        f"Generated from `{RESULTS.relative_to(REPO)}/*.json` by `make eval-local` "
        "(re-render: `.venv/bin/python -m evals render`); do not edit by hand.",
        "Each case runs end to end in a fresh home: `multiverse init`, the fixture assets, "
        "`multiverse start` as a child, `submit`, `confirm` once the proposal is there, then "
        "polling until the run is final or the case's time limit.",
        "",
        "Checklist: figures = numbers of ≥2 significant digits in the deliverable (no years, no "
        "list numbering) found in the assets' text or the run's verified facts computed from "
        "its tables (from after-26-0335936 on); chart = an .svg/.html chart naming every "
        "country of the CSV with half its revenue cells or every country total; words = "
        "within ±50% of what the request asks (450 words a page, short note ≈ "
        "250; Korean words are eojeol); recommendation = a recommendation with a reason "
        "marker. Model calls are HTTP calls logged as `llm_call`: a repair attempt is one, so "
        "is each continuation of an answer cut at max_tokens. Tokens: prompt (of it, what the "
        "server's prompt cache served: `cached_tokens`, llama-server's `timings.cache_n`) + "
        "completion; results from before that was measured show the two sums alone.",
        "",
        "## Cases",
        "",
        *[f"- **{c.name}**: {c.request}" for c in CASES.values()],
        "",
    ]
    if not results:
        return "\n".join([*lines, "No result yet: run `make eval-local`.", ""])
    lines += ["## How they ran", "", *_runs(results), ""]
    fixed = _fixed(results)
    for label in _labels(fixed):
        lines += _label_section(label, fixed[label])
    if fixed:
        lines += ["## Side by side", "", *_side_by_side(fixed), ""]
    return "\n".join(lines + _corpus_section(results))


_CORPUS_COLUMNS = ("label", "case", "outcome (where/why)", "cost: calls; tokens; cut; minutes",
                   "charts drawn (values)", "exclusions", "lookups, computations",
                   "numbers untraced", "language, words", "problems")  # fmt: skip


def _corpus_section(results: dict[str, dict[str, Any]]) -> list[str]:
    """The corpus cases run end to end: their requests, then one row per label and case."""
    rows, requests = [], {}
    for label in _labels(results):
        for name, case in _cases(results[label], True):
            requests[name] = str(case.get("request", ""))
            rows.append([label, name, cells.outcome(case), cells.cost(case),
                         *cells.corpus_checks(case)])  # fmt: skip
    if not rows:
        return []
    return [
        "## Corpus cases end to end",
        "",
        "Cases of tests/corpus/requests.yaml run like the fixed ones (`make eval-local "
        "CASES=en-chart-01,…`), in a home laid out as `make eval-corpus` lays it out, and judged "
        "by its judges against the case's expectations: the spec CONFIRM froze (charts asked, "
        "files left out, lookups and computations, language, length, mode), then the "
        "deliverable: each expected chart's values, computed from its table, shown by one chart "
        "of the run (printed, or plotted at their height; at least half of them), no file left "
        "out named but in the line that lists them, each expected figure stated, the numbers "
        "the delivery record found in no source or computed fact, its language by script and "
        "its words within ±50% of the length asked. Cost: model calls; prompt tokens (of them "
        "cached by the server) + completion tokens; answers cut at max_tokens; minutes in all "
        "(per phase).",
        "",
        *[f"- **{name}**: {request}" for name, request in sorted(requests.items())],
        "",
        *_table(_CORPUS_COLUMNS, rows),
        "",
    ]


def write(path: Path = EVALS_MD) -> None:
    """Write EVALS.md at the repository root (the corpus results, written by `make
    eval-corpus` and `make eval-local-spec` between their markers, are kept)."""
    from evals.corpus import BEGIN, END
    from evals.corpus_model import MODEL_BEGIN, MODEL_END

    kept = ""
    if path.exists():
        current = path.read_text(encoding="utf-8")
        for begin, end in ((BEGIN, END), (MODEL_BEGIN, MODEL_END)):
            if begin in current and end in current:
                block = begin + current.partition(begin)[2].partition(end)[0] + end
                kept += ("\n" if kept else "") + block + "\n"
    text = render()
    path.write_text(text.rstrip("\n") + "\n\n" + kept if kept else text, encoding="utf-8")
