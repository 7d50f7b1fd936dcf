"""Agent cards honoured (SPEC §10.1, seed 000 ⑤): handoff conditions the runtime checks after a
step, and escalation to the card's higher tier for every role, recorded in the logs and in
usage.json. The model calls go through litellm to the loopback fake server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from communicator import BuiltinCommunicator
from communicator.model import ModelCommunicator
from executor.model import ModelExecutor
from multiverse.agent_package import (
    KNOWN_ROUTES,
    MANDATORY_ROUTES,
    POST_TOOLS,
    HandoffOn,
    handoff_routes,
    load_agent_package,
    role_package_dir,
)
from multiverse.config import RuntimeMapping, Tier, TierConfig
from multiverse.errors import ConfigError
from multiverse.gateway import Gateway, UsageLedger
from multiverse.gateway.calls import RetryPolicy
from multiverse.home import Home
from multiverse.models import MajorStage, Phase, Status, Task, Timing
from multiverse.roles import Message, MessageKind, PlanContext, PlanFailed, TaskAssignment
from orchestrator.crew import Collaborators
from orchestrator.decide import POST_TOOLS_NOT_HANDED_OFF, StepKind
from orchestrator.perform import StepRunner
from planner.model import ModelPlanner

from fake_openai import FakeOpenAI, error, text, tools
from journey import copy_assets
from runhome import prepare_run_home
from stepping import builtin_collaborators, confirmed_run

KEY_ENV = "MULTIVERSE_TEST_CARDS_KEY"
RUN = "run-20260101-120000-001"
DONE = '{"status": "COMPLETED", "post_tool_required": false, "outputs": [], "error": null}'


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake key in the environment, named by every tier's api_key_env."""
    monkeypatch.setenv(KEY_ENV, "sk-cards-test")


def tier(server: FakeOpenAI, name: str, **settings: Any) -> TierConfig:
    """A tier served by the fake server under the model `openai/<name>`."""
    fields = {"max_tokens": 1024, "timeout_seconds": 10, **settings}
    return TierConfig.model_validate(
        {"model": f"openai/{name}", "api_base": server.base_url, "api_key_env": KEY_ENV, **fields}
    )


def gateway(home: Home) -> Gateway:
    """A gateway charging each run's usage.json, one attempt per call (no sleeping)."""
    return Gateway(runs_root=home.runs, retry=RetryPolicy(max_attempts=1), sleep=lambda _: None)


def card_variant(
    tmp_path: Path, role: str, tier_name: str | None = None, *, escalation: bool = True,
    handoff: bool = True,
) -> Path:  # fmt: skip
    """A copy of a shipped agent package, its card on another tier, without its escalation or
    with `handoff: []`."""
    folder = tmp_path / f"{role}-agent"
    shutil.copytree(role_package_dir(role), folder)
    card = folder / "agentcard.yaml"
    lines, kept, skipping = card.read_text(encoding="utf-8").splitlines(), [], False
    for line in lines:
        block = line.split(":")[0] if line and not line.startswith((" ", "#")) else None
        if block is not None:
            skipping = (block == "escalation" and not escalation) or (
                block == "handoff" and not handoff
            )
            if block == "handoff" and not handoff:
                kept.append("handoff: []")
            if block == "tier" and tier_name is not None:
                line = f"tier: {tier_name}"
        if not skipping:
            kept.append(line)
    card.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return folder


def escalations(logs: list[dict[str, Any]]) -> list[tuple[str, str, str, str | None]]:
    """The (role, from tier, to tier, run) of every escalation the logs hold."""
    return [
        (e["role"], e["from_tier"], e["to_tier"], e["run_id"])
        for e in logs
        if e["event"] == "role_escalated"
    ]


def usage(home: Home) -> dict[str, Any]:
    """The run's usage.json."""
    data: dict[str, Any] = json.loads((home.run(RUN).root / "usage.json").read_text("utf-8"))
    return data


# -- the cards --------------------------------------------------------------------------------


def test_shipped_cards_name_every_route_and_say_nothing() -> None:
    """Each shipped card hands off by `on:` conditions covering SPEC's routes; no notice."""
    routes = handoff_routes()
    assert routes == KNOWN_ROUTES
    for role in ("planner", "executor", "communicator"):
        package = load_agent_package(role_package_dir(role), RuntimeMapping())
        assert package.notices == []
        assert all(item.on is not None for item in package.card.handoff)


def test_an_old_cards_when_text_gives_the_condition(tmp_path: Path) -> None:
    """Without `on:`, the keyword in parentheses, else the one condition named as a word, is
    the condition; a text naming none is not consulted, and load says so."""
    folder = card_variant(tmp_path, "executor")
    card = folder / "agentcard.yaml"
    text_of = card.read_text(encoding="utf-8")
    old = text_of.replace('    "on": post_tool_required\n', "").replace('    "on": failed\n', "")
    old = old.replace(
        "when: the result signal asks for POST tool tasks",
        "when: the result signal asks for POST tool tasks (post_tool_required)",
    )
    card.write_text(old, encoding="utf-8")
    package = load_agent_package(folder, RuntimeMapping())
    assert [item.on for item in package.card.handoff] == [
        HandoffOn.POST_TOOL_REQUIRED,
        HandoffOn.FAILED,  # "the result signal is FAILED; ..."
    ]
    assert package.card.routes() == {POST_TOOLS} | {
        r for r in MANDATORY_ROUTES if r.role == "executor"
    }
    card.write_text(old.replace(" (post_tool_required)", ""), encoding="utf-8")
    vague = load_agent_package(folder, RuntimeMapping())
    assert vague.card.handoff[0].on is None and POST_TOOLS not in vague.card.routes()
    assert any("names no condition it knows" in said for said in vague.notices)


def test_an_unknown_condition_is_an_error_naming_the_card(tmp_path: Path) -> None:
    """An explicit `on:` outside the vocabulary fails the load with the card's path; the
    Orchestrator then takes only the mandatory routes (spawning the role says why)."""
    folder = card_variant(tmp_path, "executor")
    card = folder / "agentcard.yaml"
    card.write_text(card.read_text(encoding="utf-8").replace(
        '"on": post_tool_required', '"on": whenever'), encoding="utf-8")  # fmt: skip
    with pytest.raises(ConfigError, match=r"agentcard\.yaml"):
        load_agent_package(folder, RuntimeMapping())
    with capture_logs() as logs:
        assert handoff_routes({"executor": folder}) == MANDATORY_ROUTES
    assert [e["role"] for e in logs if e["event"] == "agent_card_unreadable"] == ["executor"]
    card.write_text(card.read_text(encoding="utf-8").replace(
        '"on": whenever', '"on": POST_TOOL_REQUIRED'), encoding="utf-8")  # fmt: skip
    assert POST_TOOLS in load_agent_package(folder, RuntimeMapping()).card.routes()


def test_a_card_without_a_mandatory_route_is_said_and_the_route_stays(tmp_path: Path) -> None:
    """`handoff: []` on the Executor: load says failures are reported regardless; the
    Orchestrator still takes the failure route, but not the POST tools one."""
    folder = card_variant(tmp_path, "executor", handoff=False)
    package = load_agent_package(folder, RuntimeMapping())
    assert package.card.handoff == []
    assert any("no handoff to communicator on failed" in said for said in package.notices)
    routes = handoff_routes({"executor": folder})
    assert POST_TOOLS not in routes and routes >= MANDATORY_ROUTES


def test_an_unknown_escalation_condition_never_escalates(tmp_path: Path) -> None:
    """An escalation on a condition the runtime does not know is said at load and not taken."""
    folder = card_variant(tmp_path, "executor")
    card = folder / "agentcard.yaml"
    card.write_text(
        card.read_text(encoding="utf-8").replace(
            '"on": validation_failed_after_repairs', '"on": whenever_it_feels_like_it'
        ),
        encoding="utf-8",
    )
    package = load_agent_package(folder, RuntimeMapping())
    assert package.card.escalation_tier() is None
    assert any("never escalates" in said for said in package.notices)


# -- handoff: the Executor's POST tool tasks --------------------------------------------------


def _until_a_task_executes(
    home: Home, executor_card: Path | None
) -> tuple[Collaborators, StepRunner, str, str]:
    """A confirmed builtin run advanced to its first master-loop task, which is then given a
    POST tool purpose; returns the crew, the runner, the run and the task."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home)
    if executor_card is not None:
        crew.package_dirs = {"executor": executor_card}
    run_id, runner = confirmed_run(crew)
    for _ in range(100):
        decided = runner.decide(run_id)
        assert decided is not None
        step = decided[1]
        if step.kind is StepKind.EXECUTE_TASK and step.phase_id != "P0":
            break
        runner.perform(*decided)
    else:
        raise AssertionError("no master-loop task came up")
    assert step.task_id is not None
    crew.run(run_id).tasks.update(step.task_id, post_tool_purpose="Chart the market figures.")
    runner.advance(run_id)  # the builtin Executor: COMPLETED, post_tool_required
    return crew, runner, run_id, step.task_id


def test_post_tool_tasks_are_planned_when_the_card_hands_them_to_the_planner(
    home: Home,
) -> None:
    """With the shipped Executor card, a result asking for POST tools has them planned."""
    crew, runner, run_id, task_id = _until_a_task_executes(home, None)
    decided = runner.decide(run_id)
    assert decided is not None and decided[1].kind is StepKind.PLAN_TOOLS
    assert decided[1].timing is Timing.POST
    runner.perform(*decided)
    post = [t for t in crew.run(run_id).tools.rows() if t.parent_task_id == task_id]
    assert post and {t.timing for t in post} == {Timing.POST}


def test_a_card_with_no_handoff_gets_no_post_tool_tasks_and_the_log_says_so(
    home: Home, tmp_path: Path
) -> None:
    """An Executor card with `handoff: []`: no POST tool task is planned, the task completes,
    and the request it did not hand over is logged."""
    card = card_variant(tmp_path, "executor", handoff=False)
    crew, runner, run_id, task_id = _until_a_task_executes(home, card)
    decided = runner.decide(run_id)
    assert decided is not None
    assert (decided[1].kind, decided[1].reason) == (
        StepKind.COMPLETE_TASK,
        POST_TOOLS_NOT_HANDED_OFF,
    )
    with capture_logs() as logs:
        runner.perform(*decided)
    said = [e for e in logs if e["event"] == "handoff_not_on_card"]
    assert said and said[0]["task_id"] == task_id and said[0]["to"] == "planner"
    assert said[0]["post_tool_purpose"] == "Chart the market figures."
    assert not [t for t in crew.run(run_id).tools.rows() if t.parent_task_id == task_id]
    task = crew.run(run_id).tasks.get(task_id)
    assert task is not None and task.status is Status.COMPLETED


# -- escalation: the Planner ------------------------------------------------------------------


def _planner(server: FakeOpenAI, home: Home, agent: Path) -> ModelPlanner:
    configs = {Tier.MEDIUM: tier(server, "medium-model"), Tier.HIGH: tier(server, "high-model")}
    return ModelPlanner(gateway(home), RuntimeMapping(), configs, home.root, agent_dir=agent)


def _plan_context(home: Home) -> PlanContext:
    run = home.run(RUN)
    run.root.mkdir(parents=True, exist_ok=True)
    (run.root / "request.md").write_text("Analyse the report; write a memo.", encoding="utf-8")
    phase = Phase(phase_id="P1", run_id=RUN, phase_name="ANALYZING",
                  phase_purpose="What is given? Analyse the facts.")  # fmt: skip
    return PlanContext(home=str(home.root), run_id=RUN, request="Analyse the report.",
                       phases=[phase], phase=phase)  # fmt: skip


def _stages(goal: str) -> Any:
    """A phase's stages with their tasks (one answer); an empty `goal` is refused."""
    task = {"name": "Read", "purpose": "List the figures.", "references": [1]}
    return text(json.dumps({"stages": [
        {"name": "Revenue facts", "goal": goal, "tasks": [{**task, "file_name": "a.md"}]},
        {"name": "Market reading", "goal": "Compare regions; STRATEGIZING builds on it.",
         "tasks": [{**task, "file_name": "b.md"}]},
    ]}))  # fmt: skip


def test_the_planner_escalates_and_records_it(
    fake_openai: FakeOpenAI, home: Home, tmp_path: Path
) -> None:
    """A MEDIUM Planner card whose plan stays invalid is asked on HIGH, whose plan is used;
    the log and usage.json record the escalation."""
    fake_openai.script(_stages(""), _stages(""), _stages(""), _stages("Extract the figures."))
    planner = _planner(fake_openai, home, card_variant(tmp_path, "planner", "MEDIUM"))
    with capture_logs() as logs:
        plan = planner.plan_stages(_plan_context(home))
    assert plan.stages[0].stage_goal == "Extract the figures."
    assert [r["model"] for r in fake_openai.requests] == ["medium-model"] * 3 + ["high-model"]
    assert escalations(logs) == [("planner", "MEDIUM", "HIGH", RUN)]
    assert usage(home)["by_role"]["planner"]["escalations"] == 1
    assert usage(home)["by_role"]["planner"]["calls"] == 4


def test_the_planner_without_escalation_on_its_card_does_not(
    fake_openai: FakeOpenAI, home: Home, tmp_path: Path
) -> None:
    """Without the card's escalation the plan fails on its own tier; nothing is recorded."""
    fake_openai.script(_stages(""), _stages(""), _stages(""))
    agent = card_variant(tmp_path, "planner", "MEDIUM", escalation=False)
    with capture_logs() as logs, pytest.raises(PlanFailed):
        _planner(fake_openai, home, agent).plan_stages(_plan_context(home))
    assert fake_openai.count == 3 and escalations(logs) == []
    assert usage(home)["by_role"]["planner"]["escalations"] == 0


# -- escalation: the Executor -----------------------------------------------------------------


def _executor(server: FakeOpenAI, root: Path, agent: Path | None = None) -> ModelExecutor:
    medium = tier(server, "medium-model", executor_mode="tools")
    high = tier(server, "high-model", executor_mode="tools")
    return ModelExecutor(gateway(Home(root)), RuntimeMapping(), medium, root,
                         served={Tier.MEDIUM: medium, Tier.HIGH: high},
                         package_dir=agent)  # fmt: skip


def _assignment(root: Path, out: str) -> TaskAssignment:
    task = Task(task_id="P1-S01-T01", run_id=RUN, stage_id="P1-S01", task_name="Market analysis",
                task_purpose="Extract the market figures.",
                related_references=["assets/market_report_2024.md"], output_path=out,
                execution_order=1)  # fmt: skip
    return TaskAssignment(
        home=str(root), run_id=RUN, request="Write a market-entry memo.",
        phase=Phase(phase_id="P1", run_id=RUN, phase_name="ANALYZING"),
        stage=MajorStage(stage_id="P1-S01", run_id=RUN, phase_id="P1", stage_name="Stage",
                         execution_order=1),
        task=task,
    )  # fmt: skip


OUT = f"runs/{RUN}/workspace/ANALYZING/analysis.md"


def test_the_executor_escalates_a_task_its_tier_could_not_do(
    fake_openai: FakeOpenAI, home: Home
) -> None:
    """MEDIUM answers without writing the output; the task is done once more on HIGH, whose
    file completes it; the log and usage.json record the escalation."""
    root = prepare_run_home(home, RUN)
    fake_openai.script(
        text("Here is my analysis in prose, not in a file."),
        tools(("write_file", {"path": OUT, "content": "# Analysis\n\nThe market: €18.5 bn.\n"})),
        text(DONE),
    )
    with capture_logs() as logs:
        signal = _executor(fake_openai, root).execute_task(_assignment(root, OUT))
    assert signal.status == "COMPLETED", signal.error
    assert (root / OUT).read_text(encoding="utf-8").startswith("# Analysis")
    assert [r["model"] for r in fake_openai.requests] == ["medium-model"] + ["high-model"] * 2
    assert escalations(logs) == [("executor", "MEDIUM", "HIGH", RUN)]
    reason = next(e["reason"] for e in logs if e["event"] == "role_escalated")
    assert "does not exist" in reason
    tiers = [e["tier"] for e in logs if e["event"] == "llm_call"]
    assert tiers == ["MEDIUM", "HIGH", "HIGH"]
    assert usage(home)["by_role"]["executor"]["escalations"] == 1


def test_the_executor_without_escalation_on_its_card_fails_on_its_tier(
    fake_openai: FakeOpenAI, home: Home, tmp_path: Path
) -> None:
    """Without the card's escalation the task fails where it started; HIGH is never asked."""
    root = prepare_run_home(home, RUN)
    fake_openai.script(text("Prose, no file."))
    agent = card_variant(tmp_path, "executor", escalation=False)
    with capture_logs() as logs:
        signal = _executor(fake_openai, root, agent).execute_task(_assignment(root, OUT))
    assert signal.status == "FAILED" and signal.error and "does not exist" in signal.error
    assert [r["model"] for r in fake_openai.requests] == ["medium-model"]
    assert escalations(logs) == []


def test_a_provider_error_is_no_reason_to_escalate(fake_openai: FakeOpenAI, home: Home) -> None:
    """A refused call (HTTP 400) is not the model's capability: FAILED at once, no escalation."""
    root = prepare_run_home(home, RUN)
    fake_openai.script(error(400, "bad request"))
    with capture_logs() as logs:
        signal = _executor(fake_openai, root).execute_task(_assignment(root, OUT))
    assert signal.status == "FAILED" and signal.error and "PROVIDER_ERROR" in signal.error
    assert fake_openai.count == 1 and escalations(logs) == []


# -- escalation: the Communicator -------------------------------------------------------------

FAILURE = Message(
    kind=MessageKind.FAILURE,
    run_id=RUN,
    facts={"role": "executor", "phase": "P1", "task": "P1-S01-T01", "error": "disk on fire"},
)


def _communicator(server: FakeOpenAI, home: Home, agent: Path | None = None) -> ModelCommunicator:
    low, medium = tier(server, "low-model"), tier(server, "medium-model")
    mapping = RuntimeMapping(tier_mapping={Tier.LOW: low, Tier.MEDIUM: medium})
    return ModelCommunicator(home, gateway(home), mapping, low, package_dir=agent,
                             served={Tier.LOW: low, Tier.MEDIUM: medium})  # fmt: skip


def test_the_communicator_escalates_an_invalid_wording(fake_openai: FakeOpenAI, home: Home) -> None:
    """A wording still invalid after its repairs on LOW is asked on MEDIUM, whose words are
    said; the log and usage.json record the escalation."""
    fake_openai.script(text("not json"), text('{"words": 1}'), text("{]"),
                       text(json.dumps({"text": "The run stopped at the analysis."})))  # fmt: skip
    with capture_logs() as logs:
        said = _communicator(fake_openai, home).compose(FAILURE)
    assert said.startswith("The run stopped at the analysis.") and "disk on fire" in said
    assert [r["model"] for r in fake_openai.requests] == ["low-model"] * 3 + ["medium-model"]
    assert escalations(logs) == [("communicator", "LOW", "MEDIUM", RUN)]
    assert not [e for e in logs if e["event"] == "communicator_model_fallback"]
    assert usage(home)["by_role"]["communicator"]["escalations"] == 1


def test_the_communicator_without_escalation_falls_back_on_its_tier(
    fake_openai: FakeOpenAI, home: Home, tmp_path: Path
) -> None:
    """Without the card's escalation, the builtin template speaks after LOW's repairs."""
    fake_openai.script(text("not json"), text('{"words": 1}'), text("{]"))
    agent = card_variant(tmp_path, "communicator", escalation=False)
    with capture_logs() as logs:
        said = _communicator(fake_openai, home, agent).compose(FAILURE)
    assert said == BuiltinCommunicator().compose(FAILURE)
    assert fake_openai.count == 3 and escalations(logs) == []


def test_old_usage_files_read_with_no_escalations(home: Home) -> None:
    """A usage.json written before escalations were counted reads with zero of them."""
    folder = home.run(RUN).root
    folder.mkdir(parents=True)
    (folder / "usage.json").write_text(json.dumps({
        "run_id": RUN, "calls": 2, "cache_hits": 0, "prompt_tokens": 10,
        "completion_tokens": 5, "cost_usd": 0.0,
        "by_role": {"planner": {"calls": 2, "cache_hits": 0, "tokens": 15, "cost_usd": 0.0}},
    }), encoding="utf-8")  # fmt: skip
    ledger = UsageLedger(folder)
    assert ledger.totals().by_role["planner"].escalations == 0
    assert ledger.record_escalation("planner").by_role["planner"].escalations == 1
