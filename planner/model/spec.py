"""The request spec of a proposal the model writes (SPEC §6a): one JSON call whose schema is made
for the home (`multiverse.spec.draft`: the files and each table's columns as enums, so a small
model cannot name a column that does not exist), its answer checked by the one validator
(`multiverse.spec.check_spec`) as the rules' reading is.

The rules read the request first and their reading is given to the model as a starting point to
correct. Two things the model cannot undo: a file the rules read as left out stays left out (an
exclusion never becomes an inclusion because a model missed it), and a call that fails (no valid
answer after the repairs, a provider error) leaves the rules' spec, logged, never a lost proposal.
"""

from __future__ import annotations

import json
from pathlib import Path

import structlog

from multiverse.agent_package import AgentPackage
from multiverse.gateway import LlmError
from multiverse.home import Home
from multiverse.roles import PlanContext, PlanFailed
from multiverse.spec import HomeScan, RequestSpec, scan_home
from multiverse.spec.draft import describe_home, draft_model, draft_of_spec, spec_of_draft
from planner.builtin import modifications, read_spec, settle_spec
from planner.model.asking import Asker, PlanJob, digest
from planner.model.context import quoted, request_block

log = structlog.get_logger(__name__)

# The answer is a short JSON object; room for a few charts and questions, not for a runaway.
SPEC_TOKENS = 900
GUIDELINES_LIMIT = 4000  # characters of guidelines shown (their format rules are what matter)


def make_spec(asker: Asker, package: AgentPackage, context: PlanContext) -> RequestSpec:
    """The checked spec of the run's request and every MODIFY since, as the model reads it
    (the rules' reading when no model serves the card's tier or the call fails)."""
    home = Home(Path(context.home))
    scan = scan_home(home, context.search_provider)
    texts = modifications(context)
    rules = read_spec(context.request, texts, scan, home.root)
    if not asker.serves(package.card.tier):
        return rules
    job = PlanJob(
        target="spec",
        template="spec",
        values=spec_values(context, scan, rules),
        schema=draft_model(scan),
        check=None,
        start=package.card.tier,
        scope=f"{context.run_id}:spec",
        tokens=SPEC_TOKENS,
        run_id=context.run_id,
        variant=f"modify-{digest(chr(10).join(texts))}" if texts else "default",
    )
    try:
        answer = asker.ask(package, job)
    except (PlanFailed, LlmError) as failed:
        errors = failed.errors[:5] if isinstance(failed, PlanFailed) else [str(failed)]
        log.warning("spec_fallback_rules", run_id=context.run_id, errors=errors)
        return rules
    drafted = spec_of_draft(answer, context.request, scan, rules)
    return settle_spec(_keep_left_out(drafted, rules), scan, home.root)


def spec_values(context: PlanContext, scan: HomeScan, rules: RequestSpec) -> dict[str, str]:
    """Values of the `spec` template."""
    texts = modifications(context)
    said = "\n\n".join(quoted(text, f"modify-{n}") for n, text in enumerate(texts, 1))
    guidelines = "\n\n".join(f"`{item.path}`:\n{quoted(item.text, 'text')}"
                             for item in scan.guidelines)  # fmt: skip
    if len(guidelines) > GUIDELINES_LIMIT:
        guidelines = guidelines[:GUIDELINES_LIMIT] + "\n(cut)"
    return {
        "run_id": context.run_id,
        "request": request_block(context.request),
        "modifications": said or "(none)",
        "home": describe_home(scan),
        "guidelines": guidelines or "(none)",
        "reading": json.dumps(draft_of_spec(rules), ensure_ascii=False, indent=1),
    }


def _keep_left_out(spec: RequestSpec, rules: RequestSpec) -> RequestSpec:
    """The model's spec with every file the rules read as left out still left out."""
    missed = [
        group.model_copy(update={"files": [f for f in group.files if f not in spec.excluded()]})
        for group in rules.left_out
    ]
    missed = [group for group in missed if group.files]
    if not missed:
        return spec
    dropped = {path for group in missed for path in group.files}
    return spec.model_copy(
        update={
            "left_out": [*spec.left_out, *missed],
            "sources": [path for path in spec.sources if path not in dropped],
        }
    )
