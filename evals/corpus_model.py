"""The corpus read by a real model (`make eval-local-spec`): chosen cases of tests/corpus read into
specs by the model Planner's spec call, the production seam through litellm, each judged as the
offline reading is (`evals.corpus.judge`) and recorded in EVALS.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.corpus import Verdict, cases, corpus_home, judge, spec_of, write_block


@dataclass
class ModelVerdict:
    """One case read by the model: its verdict, whether the model's answer was used (or the
    rules' spec after a failed call), and how long the call took."""

    verdict: Verdict
    used: bool
    seconds: float
    asked: bool = True  # False: the rules answer the request at once; the model is not asked
    errors: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # what the model read unlike the rules


def evaluate_model(documents: Path, ids: list[str], tier: dict[str, Any]) -> list[ModelVerdict]:
    """The chosen cases read by the model Planner's spec call (the production seam, through
    litellm) on one tier, each judged as the offline reading is."""
    import time

    from structlog.testing import capture_logs

    from multiverse.agent_package import load_agent_package, role_package_dir
    from multiverse.config import RuntimeMapping, TierConfig
    from multiverse.gateway import Gateway
    from multiverse.roles import PlanContext
    from planner.model import make_spec
    from planner.model.context import Asker

    package = load_agent_package(role_package_dir("planner"), RuntimeMapping())
    asker = Asker(Gateway(), {package.card.tier: TierConfig.model_validate(tier)})
    chosen = [case for case in cases() if case["id"] in ids]
    found: list[ModelVerdict] = []
    for case in chosen:
        with corpus_home(case, documents) as home:
            context = PlanContext(
                home=str(home.root),
                run_id=f"eval-{case['id']}",
                request=case["request"],
                modifications=case.get("modify") or [],
            )
            rules, _scan = spec_of(case, home)
            started = time.monotonic()
            with capture_logs() as logs:
                spec = make_spec(asker, package, context)
            seconds = time.monotonic() - started
        failed = [e for e in logs if e["event"] == "spec_fallback_rules"]
        errors = [str(error) for e in failed for error in e.get("errors", [])]
        changed = [
            name for name in ("mode", "deliverable", "audience", "length_words", "language",
                              "sources", "charts", "questions", "research")
            if _plain(getattr(spec, name)) != _plain(getattr(rules, name))
        ]  # fmt: skip
        asked = any(e["event"] == "llm_call" for e in logs) or bool(failed)
        found.append(ModelVerdict(judge(case, spec), not failed, seconds, asked=asked,
                                  errors=errors, changed=changed))  # fmt: skip
    return found


def _plain(value: Any) -> Any:
    """A spec field comparable across readings (readings' phrases and origins left out)."""
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if hasattr(value, "model_dump"):
        data = value.model_dump(exclude={"reading"})
        return {k: v for k, v in data.items() if k not in ("reading", "preview", "title")}
    return value


def model_report(found: list[ModelVerdict], model: str) -> str:
    """The model's readings as markdown: per case, used or fallen back, time, problems."""
    lines = [
        f"Model: `{model}`. Each case's request read by the model Planner's spec call "
        "(`make_spec` of planner/model/__init__.py, through the gateway), checked by the one "
        "validator and judged "
        "as the offline reading is.",
        "",
        "| case | model answer used | read unlike the rules | seconds | charts | exclusions | "
        "questions | problems |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for item in found:
        v = item.verdict
        problems = "; ".join(v.problems + item.errors).replace("|", "\\|")[:400] or "none"
        lines.append(
            f"| {v.case} | {_used(item)} | "
            f"{', '.join(item.changed) or 'nothing'} | {item.seconds:.0f} | "
            f"{v.charts[0]}/{v.charts[1]} | {v.exclusions[0]}/{v.exclusions[1]} | "
            f"{v.questions[0]}/{v.questions[1]} | {problems} |"
        )
    return "\n".join(lines)


MODEL_BEGIN = "<!-- corpus on the local model: make eval-local-spec -->"
MODEL_END = "<!-- end of corpus on the local model -->"


def write_model(text: str, revision: str) -> None:
    """Put the model's readings into EVALS.md between their markers."""
    block = (
        f"{MODEL_BEGIN}\n## The corpus on the local model (`make eval-local-spec`, {revision})"
        f"\n\n{text}\n{MODEL_END}"
    )
    write_block(MODEL_BEGIN, MODEL_END, block)


def _used(item: ModelVerdict) -> str:
    if not item.asked:
        return "not asked (the tables answer it at once)"
    return "yes" if item.used else "no (rules)"
