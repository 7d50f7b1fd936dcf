"""The model path end to end: the real daemon, roles from build_collaborators, a loopback server.

Every tier of runtime-mapping.yaml points at `openai/fake-model` on the fake server; the model's
answers are scripted in the order the workflow asks for them (one stage of one task per phase).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from app.commands import answer_run, drop_request
from app.team import build_collaborators
from multiverse.config import OnceGate, load_runtime_mapping
from multiverse.home import Home
from multiverse.models import Status
from multiverse.spec import ROLE_RULE
from multiverse.store import MAJOR_STAGES, PHASES, PROCESS_RUNS, TASKS, TableStore
from orchestrator.daemon import Daemon

from fake_openai import FakeOpenAI, Reply, text, tools
from journey import cli, copy_assets
from mappings import quick_intake

KEY_ENV = "FAKE_LLM_KEY"
SECRET = "sk-test-SECRET-XYZ"
# Longer than two pages: the model plans its stages and tasks (a shorter one is planned by code).
REQUEST = "Analyse the e-bike market report and write a five-page market-entry memo for the board."
PHASES_IN_ORDER = (
    ("P1", "ANALYZING"),
    ("P2", "STRATEGIZING"),
    ("P3", "REFINING_CONTENT"),
    ("P4", "GENERATING_OUTPUT"),
)


# -- the script builder -----------------------------------------------------------------------


def answer(data: dict[str, Any]) -> Reply:
    """A JSON answer of the model."""
    return text(json.dumps(data, ensure_ascii=False))


def reading() -> Reply:
    """The Planner's reading of the request into the spec (the proposal is its rendering)."""
    return answer({"mode": "run", "deliverable": "memo", "language": "en"})


def wording(words: str) -> Reply:
    """The Communicator's wording of a message."""
    return answer({"text": words})


def done() -> Reply:
    """The Executor's final word after writing its file."""
    return answer(
        {"status": "COMPLETED", "post_tool_required": False, "outputs": [], "error": None}
    )


@dataclass(frozen=True)
class RunScript:
    """Builds the scripted answers of one run, whose run_id is known once it exists."""

    run_id: str

    def workspace(self, phase_name: str, name: str) -> str:
        """A home-relative path in a phase's workspace folder."""
        return f"runs/{self.run_id}/workspace/{phase_name}/{name}"

    @property
    def first_analysis(self) -> str:
        """Phase 0's T04 output."""
        return self.workspace("ANALYZING", "first_analysis.md")

    @property
    def memo(self) -> str:
        """The published deliverable."""
        return f"outputs/{self.run_id}/memo.md"

    def write(self, path: str, content: str) -> Reply:
        """The Executor calls write_file."""
        return tools(("write_file", {"path": path, "content": content}))

    def execute(self, path: str, content: str) -> list[Reply]:
        """One task: write the file, then say COMPLETED."""
        return [self.write(path, content), done()]

    def stage(self, phase_id: str) -> dict[str, Any]:
        """The phase's one stage (code numbers it)."""
        return {"name": f"Build the {phase_id} block",
                "goal": f"One document for {phase_id}, read by the next phase."}  # fmt: skip

    def task(self, phase_id: str, output: str) -> dict[str, Any]:
        """The stage's one task, reading file 2 of the numbered list (this run's newest work)
        and naming its output after `output` (code makes the path)."""
        return {
            "name": f"Write the {phase_id} document",
            "purpose": "Condense the reference into the next building block.",
            "references": [2],
            "file_name": output.rsplit("/", 1)[-1],
            **({"deliverable": True} if phase_id == "P4" else {}),
        }

    def plans(self, phase_id: str, output: str) -> list[Reply]:
        """The phase's plan: its stage with its task in one answer; the publishing phase's
        stage, then its tasks."""
        stage, task = self.stage(phase_id), self.task(phase_id, output)
        if phase_id != "P4":
            return [answer({"stages": [{**stage, "tasks": [task]}]})]
        return [answer({"stages": [stage]}), answer({"tasks": [task]})]

    def output_of(self, phase_id: str, phase_name: str) -> str:
        """The file each phase's one task writes."""
        if phase_id == "P4":
            return self.memo
        return self.workspace(phase_name, f"{phase_id.lower()}_block.md")

    def phase(self, phase_id: str, phase_name: str) -> list[Reply]:
        """A whole phase: its stage, its task, and the task's execution."""
        output = self.output_of(phase_id, phase_name)
        return [
            *self.plans(phase_id, output),
            *self.execute(output, f"# {phase_id}\n\nE-bike market: €18.5 billion in 2023.\n"),
        ]

    def after_confirm(self) -> list[Reply]:
        """Everything after CONFIRM: the first analysis, then P1 to P4 chained."""
        replies = self.execute(self.first_analysis, "# First analysis\n\nRevenue €18.5 bn.\n")
        for phase_id, phase_name in PHASES_IN_ORDER:
            replies += self.phase(phase_id, phase_name)
        return replies


# A memo request is a run whatever a model says: the heuristic decides its mode, no call.
BEFORE_CONFIRM = (reading(), wording("I read your request; here is my proposal."))


# -- the home and the daemon ------------------------------------------------------------------


def configure(home: Home, server: FakeOpenAI, budget_tokens: int | None = None) -> None:
    """runtime-mapping.yaml: every tier on the fake model; the key's variable named; the
    Executor in its tool loop (the scripts answer with tool calls)."""
    tier = {
        "model": "openai/fake-model",
        "api_base": server.base_url,
        "api_key_env": KEY_ENV,
        "executor_mode": "tools",
    }
    mapping: dict[str, Any] = {"tier_mapping": {name: tier for name in ("HIGH", "MEDIUM", "LOW")}}
    if budget_tokens is not None:
        mapping["budget"] = {"max_tokens_per_run": budget_tokens}
    home.mapping_file.write_text(json.dumps(quick_intake(mapping), indent=1), encoding="utf-8")


@pytest.fixture
def model_home(home: Home, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> Home:
    """A home with an asset, every tier on the fake model, and the key set."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    copy_assets(home, "market_report_2024.md")
    configure(home, fake_openai)
    return home


def serve_once(home: Home) -> int:
    """A fresh crew and daemon (as a restart makes them), run until nothing can advance."""
    mapping = load_runtime_mapping(home.root)
    crew = build_collaborators(
        home, mapping, os.environ, lambda said: None, lambda said: None, OnceGate()
    )
    return Daemon(crew, mapping.daemon).run(once=True)


def the_run(home: Home) -> Any:
    """The single row of process_runs.md."""
    rows = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
    assert len(rows) == 1, rows
    return rows[0]


def to_confirmation(home: Home, server: FakeOpenAI) -> str:
    """Submit the request and run until the proposal waits for the user; the run_id."""
    server.script(*BEFORE_CONFIRM)
    drop_request(home, REQUEST, None)
    assert serve_once(home) == 0
    run = the_run(home)
    assert run.status is Status.AWAITING_CONFIRMATION
    return str(run.run_id)


def statuses(home: Home, run_id: str) -> dict[str, Status]:
    """Every row key of the run's phases, stages and tasks → its status."""
    store, db = TableStore(), home.run(run_id).db
    found: dict[str, Status] = {}
    for spec in (PHASES, MAJOR_STAGES, TASKS):
        for row in store.table(spec, db / spec.filename).rows():
            found[row.key] = row.status
    return found


def files_outside(root: Path, home: Home) -> set[Path]:
    """Every file under `root` that is not inside the home."""
    return {p for p in root.rglob("*") if p.is_file() and not p.is_relative_to(home.root)}


def is_planner(request: dict[str, Any]) -> bool:
    """Whether a request to the model came from the Planner (its AGENT.md is the system prompt,
    after the run's prefix once the run has one)."""
    first = request["messages"][0]
    role = str(first["content"]).split(ROLE_RULE)[-1]
    return first["role"] == "system" and role.startswith("# Planner")


def user_messages(request: dict[str, Any]) -> str:
    """Everything a request told the model, as one text."""
    return json.dumps(request["messages"], ensure_ascii=False)


# -- the tests --------------------------------------------------------------------------------


def test_whole_run_on_the_model(model_home: Home, fake_openai: FakeOpenAI) -> None:
    """A run goes from the inbox to COMPLETED with every plan and file made by the model."""
    fake_openai.check_schemas = True
    run_id = to_confirmation(model_home, fake_openai)
    paths = model_home.run(run_id)
    assert fake_openai.count == len(BEFORE_CONFIRM)
    assert "market-entry memo" in paths.feedback.read_text(encoding="utf-8")
    asked = paths.messages.read_text(encoding="utf-8")
    assert "I read your request; here is my proposal." in asked
    assert f"multiverse confirm {run_id}" in asked

    script = RunScript(run_id)
    planned = script.after_confirm()
    fake_openai.script(*planned)
    answer_run(str(model_home.root), run_id, "CONFIRM")
    assert serve_once(model_home) == 0

    run = the_run(model_home)
    assert run.status is Status.COMPLETED
    assert set(statuses(model_home, run_id).values()) == {Status.COMPLETED}
    assert fake_openai.count == len(BEFORE_CONFIRM) + len(planned)
    memo = (model_home.root / script.memo).read_text(encoding="utf-8")
    assert memo == "# P4\n\nE-bike market: €18.5 billion in 2023.\n"  # the model's own words
    said = paths.messages.read_text(encoding="utf-8")
    assert "COMPLETION" in said and script.memo in said
    usage = json.loads((paths.root / "usage.json").read_text(encoding="utf-8"))
    # the calls before CONFIRM are carried into the run
    assert usage["calls"] == len(BEFORE_CONFIRM) + len(planned)
    assert set(usage["by_role"]) == {"planner", "executor", "communicator"}

    # Every planner answer fitted the json_schema its request carried.
    assert fake_openai.schema_violations == []
    planner_calls = [n for n, r in enumerate(fake_openai.requests) if is_planner(r)]
    # The spec; each phase's stages with their tasks in one answer, but the publishing
    # phase's, whose tasks are planned stage by stage.
    assert len(planner_calls) == 1 + len(PHASES_IN_ORDER) + 1
    assert not set(planner_calls) & set(fake_openai.unstructured)
    # Every call after CONFIRM, the Planner's and the Executor's alike, begins with the same
    # bytes (the request, the frozen spec, the ACTIVE instructions), then the role's own text:
    # a provider's prefix cache serves that part of every prompt but the first.
    after = [str(r["messages"][0]["content"]) for r in fake_openai.requests[len(BEFORE_CONFIRM):]]
    assert after and all(ROLE_RULE in system for system in after)
    prefixes = {system.split(ROLE_RULE)[0] for system in after}
    assert len(prefixes) == 1, prefixes
    (prefix,) = prefixes
    assert "What was confirmed" in prefix and '"language":"en"' in prefix
    assert REQUEST in prefix
    # Code chained the phases: each phase's task read the previous phase's output.
    rows = {r.key: r for r in TableStore().table(TASKS, paths.db / TASKS.filename).rows()}
    # The deliverable also reads the original input, so its figures can be traced to it.
    reference = script.first_analysis
    for phase_id, phase_name in PHASES_IN_ORDER:
        row = rows[f"{phase_id}-S01-T01"]
        published = row.output_path.startswith("outputs/")
        assert (row.related_references, row.output_path) == (
            [reference, *(["assets/market_report_2024.md"] if published else [])],
            script.output_of(phase_id, phase_name),
        )
        reference = row.output_path


def test_a_memo_request_becomes_a_run_without_a_mode_call(
    model_home: Home, fake_openai: FakeOpenAI
) -> None:
    """A request asking for a memo is a run whatever a model would say: the heuristic decides
    its mode, and the first call is the spec's."""
    fake_openai.script(reading(), wording("Here is my proposal."))
    drop_request(model_home, "write a memo on the e-bike market", None)
    with capture_logs() as logs:
        assert serve_once(model_home) == 0
    run = the_run(model_home)
    assert run.status is Status.AWAITING_CONFIRMATION
    assert fake_openai.count == 2 and not any(e["event"] == "mode_overridden" for e in logs)
    decided = next(e for e in logs if e["event"] == "mode_decided")
    assert decided["mode"] == "INITIAL_RUN"
    assert "it asks for a deliverable: 'memo'" in decided["reason"]
    assert not list(model_home.inbox_done.glob("*.reply.md"))  # no simple-task answer


def test_malformed_json_repaired_on_second_answer(
    model_home: Home, fake_openai: FakeOpenAI
) -> None:
    """A malformed spec answer is repaired by the second answer; the run goes on to the question."""
    fake_openai.script(text("Sure! {mode: oops"), reading(), wording("Ready."))
    drop_request(model_home, REQUEST, None)
    assert serve_once(model_home) == 0
    run = the_run(model_home)
    assert run.status is Status.AWAITING_CONFIRMATION
    assert fake_openai.count == 3
    repair = fake_openai.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Sure! {mode: oops"}
    assert "could not be used" in repair[-1]["content"]
    feedback = model_home.run(run.run_id).feedback.read_text(encoding="utf-8")
    assert "Read by the model" in feedback


def test_still_malformed_after_two_repairs_fails_the_run(
    model_home: Home, fake_openai: FakeOpenAI
) -> None:
    """A phase plan still malformed after two repairs fails the phase and the run, raw answer
    reported."""
    run_id = to_confirmation(model_home, fake_openai)
    script = RunScript(run_id)
    raw = "RAW-ANSWER-7 {stages: [oops"
    fake_openai.script(
        *script.execute(script.first_analysis, "# First analysis\n"),
        text(raw), text(raw + " again"), text(raw + " still"),
        wording("The run stopped while planning the analysis."),
    )  # fmt: skip
    answer_run(str(model_home.root), run_id, "CONFIRM")
    assert serve_once(model_home) == 1

    run = the_run(model_home)
    assert run.status is Status.FAILED
    assert (run.current_phase_id, run.current_stage_id) == ("P1", None)
    found = statuses(model_home, run_id)
    assert found["P1"] is Status.FAILED and "P1-S01" not in found
    assert found["P0"] is Status.COMPLETED
    messages = model_home.run(run_id).messages.read_text(encoding="utf-8")
    assert "The run stopped while planning the analysis." in messages
    assert raw + " still" in messages
    assert "stages:P1" in messages
    assert fake_openai.count == len(BEFORE_CONFIRM) + 2 + 3 + 1


def test_restart_pays_no_second_call(model_home: Home, fake_openai: FakeOpenAI) -> None:
    """A restarted daemon asks the model nothing again, even for a step redone after a crash."""
    run_id = to_confirmation(model_home, fake_openai)
    paid = fake_openai.count
    assert serve_once(model_home) == 0
    assert fake_openai.count == paid

    # The state a crash leaves right after the proposal was answered: no evidence of the step.
    signals = model_home.run(run_id).signals
    for name in ("proposal-1.json", "asked-1.json"):
        (signals / name).unlink()
    model_home.run(run_id).feedback.unlink()
    runs = TableStore().table(PROCESS_RUNS, model_home.db / PROCESS_RUNS.filename)
    runs.update(run_id, status=Status.PENDING)
    assert serve_once(model_home) == 0
    assert the_run(model_home).status is Status.AWAITING_CONFIRMATION
    assert model_home.run(run_id).feedback.is_file()
    assert fake_openai.count == paid  # the proposal and its wording came from the cache

    script = RunScript(run_id)
    planned = script.after_confirm()
    fake_openai.script(*planned)
    answer_run(str(model_home.root), run_id, "CONFIRM")
    assert serve_once(model_home) == 0
    assert the_run(model_home).status is Status.COMPLETED
    assert fake_openai.count == paid + len(planned)


def test_budget_exhaustion_fails_the_run(
    home: Home, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call that takes the run over its token budget fails it with BUDGET_EXCEEDED."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    copy_assets(home, "market_report_2024.md")
    configure(home, fake_openai, budget_tokens=100)
    run_id = to_confirmation(home, fake_openai)
    script = RunScript(run_id)
    expensive = tools(("write_file", {"path": script.first_analysis, "content": "x"}))
    fake_openai.script(replace(expensive, prompt_tokens=5000))
    answer_run(str(home.root), run_id, "CONFIRM")
    assert serve_once(home) == 1

    assert the_run(home).status is Status.FAILED
    assert statuses(home, run_id)["T04"] is Status.FAILED
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    report = messages[messages.rindex("· FAILURE") :]
    assert "BUDGET_EXCEEDED" in report and "T04" in report
    assert fake_openai.count == len(BEFORE_CONFIRM) + 1  # nothing asked once the budget was spent
    assert not (home.root / script.first_analysis).exists()


def test_hostile_answers_are_refused(
    model_home: Home, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """Paths out of the home, invented references and reads outside are refused and fed back."""
    run_id = to_confirmation(model_home, fake_openai)
    script = RunScript(run_id)
    before = files_outside(tmp_path, model_home)
    escape = f"/tmp/{run_id}-escape.md"
    good = script.output_of("P1", "ANALYZING")
    hostile_plan = answer({"stages": [{**script.stage("P1"), "tasks": [{
        "name": "Escape", "purpose": "Write elsewhere.", "references": [99],
        "file_name": "../../escaped.md", "output_path": "../../escaped.md",
    }]}]})  # fmt: skip
    hostile_tools = tools(
        ("read_file", {"path": "/etc/passwd"}),
        ("read_file", {"path": "../../../../etc/passwd"}),
        ("write_file", {"path": "../../escaped.md", "content": "out"}),
        ("write_file", {"path": escape, "content": "out"}),
        ("write_file", {"path": "assets/injected.md", "content": "out"}),
    )
    replies = [
        *script.execute(script.first_analysis, "# First analysis\n"),
        hostile_plan,
        *script.plans("P1", good),
        hostile_tools,
        *script.execute(good, "# P1\n\nFacts.\n"),
    ]
    for phase_id, phase_name in PHASES_IN_ORDER[1:]:
        replies += script.phase(phase_id, phase_name)
    fake_openai.script(*replies)
    answer_run(str(model_home.root), run_id, "CONFIRM")
    assert serve_once(model_home) == 0
    assert the_run(model_home).status is Status.COMPLETED

    requests = fake_openai.requests
    plan_repair = requests[len(BEFORE_CONFIRM) + 2 + 1]["messages"][-1]["content"]
    assert "reference 99 is not allowed; use one of: 1, 2" in plan_repair
    rows = TableStore().table(TASKS, model_home.run(run_id).db / TASKS.filename).rows()
    assert next(row for row in rows if row.key == "P1-S01-T01").output_path == good
    fed_back = [m for m in requests[len(BEFORE_CONFIRM) + 2 + 3]["messages"] if m["role"] == "tool"]
    assert len(fed_back) == 5 and all(m["content"].startswith("ERROR") for m in fed_back)
    everything_sent = "".join(json.dumps(r, ensure_ascii=False) for r in requests)
    assert "root:x:0:0" not in everything_sent
    assert files_outside(tmp_path, model_home) == before
    assert not Path(escape).exists()
    assert not (model_home.assets / "injected.md").exists()


def test_key_appears_in_no_file(model_home: Home, fake_openai: FakeOpenAI) -> None:
    """After a whole run through the CLI, the key is in no file of the home, logs included."""
    environ = {KEY_ENV: SECRET, "MULTIVERSE_HOME": str(model_home.root)}
    fake_openai.script(*BEFORE_CONFIRM)
    assert cli(model_home, "submit", REQUEST, env=environ).returncode == 0
    first = cli(model_home, "start", "--once", env=environ)
    assert first.returncode == 0, first.stderr
    run_id = str(the_run(model_home).run_id)
    fake_openai.script(*RunScript(run_id).after_confirm())
    assert cli(model_home, "confirm", run_id, env=environ).returncode == 0
    second = cli(model_home, "start", "--once", env=environ)
    assert second.returncode == 0, second.stderr
    assert the_run(model_home).status is Status.COMPLETED

    assert all(h.get("authorization") == f"Bearer {SECRET}" for h in fake_openai.headers)
    assert (model_home.state / "logs" / "daemon.jsonl").is_file()
    leaked = [
        path for path in model_home.root.rglob("*")
        if path.is_file() and SECRET.encode() in path.read_bytes()
    ]  # fmt: skip
    assert leaked == []
    for output in (first, second):
        assert SECRET not in output.stdout and SECRET not in output.stderr
