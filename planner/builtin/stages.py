"""The builtin stage plans: a small, fixed shape per phase that the offline Executor can fill."""

from __future__ import annotations

from multiverse.contracts import PlanContext, StagesPlan
from multiverse.models import MajorStage, Phase, stage_id_of

# phase_name -> (stage_name, stage_goal) in execution order. Each goal says what the stage
# produces and which later work uses it (SPEC §7.2).
STAGE_SHAPES: dict[str, tuple[tuple[str, str], ...]] = {
    "ANALYZING": (
        (
            "Source fact extraction",
            "Produces one facts file per group of sources (headings, figures with their "
            "context, key sentences); the consolidated analysis of the next stage reads them.",
        ),
        (
            "Consolidated analysis",
            "Produces one analysis summary that merges the per-source facts (themes, compared "
            "figures, open questions); STRATEGIZING builds its assessment on it.",
        ),
    ),
    "STRATEGIZING": (
        (
            "Strategic assessment",
            "Produces a strategy document (strengths, weaknesses, opportunities, threats, "
            "prioritised options, a recommended direction) from the analysis; REFINING_CONTENT "
            "turns it into argued content.",
        ),
    ),
    "REFINING_CONTENT": (
        (
            "Content refinement",
            "Produces refined content blocks (claim, evidence with figures, implication) fusing "
            "analysis and strategy; GENERATING_OUTPUT assembles the deliverable from them.",
        ),
    ),
    "GENERATING_OUTPUT": (
        (
            "Assembly plan",
            "Produces the assembly plan of the deliverable (sections, which block feeds each, "
            "format rules); the publishing stage follows it.",
        ),
        (
            "Publish deliverables",
            "Produces the final deliverables in outputs/<run_id>/ from the assembly plan and the "
            "refined content; the user receives them at completion.",
        ),
    ),
}


def stage_shape(phase: Phase) -> tuple[tuple[str, str], ...]:
    """The stages of a phase; a phase unknown to the template gets one synthesis stage."""
    known = STAGE_SHAPES.get(phase.phase_name)
    if known is not None:
        return known
    purpose = phase.phase_purpose.strip() or f"the work of {phase.phase_name}"
    goal = (
        f"Produces one synthesis document for {phase.phase_name} ({purpose}); the next phase "
        "builds on it."
    )
    return ((f"{phase.phase_name.replace('_', ' ').title()} synthesis", goal),)


def plan_stages(context: PlanContext, phase: Phase) -> StagesPlan:
    """The stages of `phase`, ids `<phase_id>-S01`…, PENDING, in order."""
    shape = stage_shape(phase)
    stages = [
        MajorStage(
            stage_id=stage_id_of(phase.phase_id, order),
            run_id=context.run_id,
            phase_id=phase.phase_id,
            stage_name=name,
            stage_goal=goal.replace("<run_id>", context.run_id),
            execution_order=order,
        )
        for order, (name, goal) in enumerate(shape, start=1)
    ]
    return StagesPlan(stages=stages)
