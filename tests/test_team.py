"""build_collaborators: builtin or model-backed roles chosen from the mapping and environment."""

from __future__ import annotations

import subprocess
import sys

from structlog.testing import capture_logs

from app.team import build_collaborators
from communicator import BuiltinCommunicator
from communicator.model import ModelCommunicator
from executor.builtin import BuiltinExecutor
from multiverse.config import OnceGate, RuntimeMapping, Tier, TierConfig
from multiverse.home import Home
from planner.builtin import BuiltinPlanner

FAKE_BASE = "http://127.0.0.1:9/v1"  # never called: building a crew makes no request


def _model_mapping(**budget: int) -> RuntimeMapping:
    tier = TierConfig(model="openai/fake", api_base=FAKE_BASE, api_key_env="FAKE_LLM_KEY")
    return RuntimeMapping.model_validate(
        {"tier_mapping": {t: tier for t in Tier}, "budget": budget or None}
    )


def _quiet(text: str) -> None:
    return None


def test_all_builtin_mapping_gives_builtin_roles(home: Home) -> None:
    """With every tier builtin, every role is the builtin one and no gateway is made."""
    with capture_logs() as logs:
        crew = build_collaborators(home, RuntimeMapping(), {}, _quiet, _quiet, OnceGate())
    assert isinstance(crew.planner, BuiltinPlanner)
    assert isinstance(crew.executor, BuiltinExecutor)
    assert isinstance(crew.speaker.role, BuiltinCommunicator)
    assert not [e for e in logs if e["log_level"] == "warning"]
    built = [e for e in logs if e["event"] == "crew_built"]
    assert built and built[0]["gateway"] is False


def test_model_mapping_with_key_gives_model_roles(home: Home) -> None:
    """A fake OpenAI model with its key set gives model-backed roles sharing one gateway."""
    from executor.model import ModelExecutor
    from planner.model import ModelPlanner

    environ = {"FAKE_LLM_KEY": "sk-test-123456789"}
    mapping = _model_mapping(max_tokens_per_run=5000)
    crew = build_collaborators(home, mapping, environ, _quiet, _quiet, OnceGate())
    assert isinstance(crew.planner, ModelPlanner)
    assert isinstance(crew.executor, ModelExecutor)
    communicator = crew.speaker.role
    assert isinstance(communicator, ModelCommunicator)
    assert communicator.tier is not None and communicator.tier.model == "openai/fake"
    gateway = communicator.gateway
    assert gateway.budget.max_tokens_per_run == 5000  # type: ignore[attr-defined]
    assert gateway.cache.folder == home.state / "llm_cache"  # type: ignore[attr-defined]
    assert gateway.runs_root == home.runs  # type: ignore[attr-defined]


def test_each_role_follows_its_own_tier(home: Home) -> None:
    """Only the LOW tier on a model: the Communicator (LOW) is model-backed, the others builtin."""
    tier = TierConfig(model="openai/fake", api_base=FAKE_BASE, api_key_env="FAKE_LLM_KEY")
    mapping = RuntimeMapping.model_validate({"tier_mapping": {"LOW": tier}})
    environ = {"FAKE_LLM_KEY": "sk-test-123456789"}
    crew = build_collaborators(home, mapping, environ, _quiet, _quiet, OnceGate())
    assert isinstance(crew.planner, BuiltinPlanner)  # its card says HIGH
    assert isinstance(crew.executor, BuiltinExecutor)  # its card says MEDIUM
    assert isinstance(crew.speaker.role, ModelCommunicator)


def test_missing_key_degrades_with_one_warning(home: Home) -> None:
    """Without the key every role is builtin, with one warning line, said only once."""
    gate = OnceGate()
    with capture_logs() as logs:
        crew = build_collaborators(home, _model_mapping(), {}, _quiet, _quiet, gate)
        build_collaborators(home, _model_mapping(), {}, _quiet, _quiet, gate)
    assert isinstance(crew.planner, BuiltinPlanner)
    assert isinstance(crew.executor, BuiltinExecutor)
    assert isinstance(crew.speaker.role, BuiltinCommunicator)
    warnings = [e for e in logs if e["event"] == "tier_degraded_to_builtin"]
    assert len(warnings) == 1
    assert sorted(warnings[0]["tiers"]) == ["HIGH", "LOW", "MEDIUM"]
    assert all("FAKE_LLM_KEY is not set" in why for why in warnings[0]["tiers"].values())


def test_debug_line_said_once(home: Home) -> None:
    """MULTIVERSE_DEBUG=1 says the effective-mode line once per process, never again."""
    said: list[str] = []
    gate = OnceGate()
    environ = {"MULTIVERSE_DEBUG": "1"}
    build_collaborators(home, RuntimeMapping(), environ, _quiet, said.append, gate)
    build_collaborators(home, RuntimeMapping(), environ, _quiet, said.append, gate)
    assert len(said) == 1
    assert said[0].startswith("multiverse effective modes:") and "LOW=builtin" in said[0]


def test_no_debug_line_without_the_variable(home: Home) -> None:
    """Without MULTIVERSE_DEBUG no effective-mode line is said."""
    said: list[str] = []
    build_collaborators(home, RuntimeMapping(), {}, _quiet, said.append, OnceGate())
    assert said == []


def test_import_does_not_load_litellm(home: Home) -> None:
    """Importing app.team and building a builtin crew never imports litellm."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from multiverse.home import Home\n"
        "from multiverse.config import RuntimeMapping\n"
        "from app.team import build_collaborators\n"
        "home = Home(Path(sys.argv[1]))\n"
        "build_collaborators(home, RuntimeMapping(), {}, lambda t: None)\n"
        "print('litellm' in sys.modules)\n"
    )
    command = [sys.executable, "-c", code, str(home.root)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip().splitlines()[-1] == "False"


def test_the_configured_search_provider_reaches_the_proposal(home: Home) -> None:
    """The web_search provider the mapping configures is the crew's, and a proposal that asks
    for outside information names it; without one it says nothing will be searched."""
    from multiverse.config import load_runtime_mapping
    from orchestrator.intake import take_in
    from orchestrator.perform import StepRunner

    from stepping import steps_until_settled

    shipped = home.mapping_file.read_text(encoding="utf-8")
    searxng = (
        "web_search: {tool: web_search, options: {provider: searxng, "
        "base_url: 'http://127.0.0.1:8888/'}}"
    )
    home.mapping_file.write_text(shipped.replace("web_search: web_search", searxng, 1))
    searx = load_runtime_mapping(home.root)
    crew = build_collaborators(home, searx, {}, _quiet, _quiet, OnceGate())
    assert crew.search_provider == "searxng (http://127.0.0.1:8888)"
    assert build_collaborators(home, RuntimeMapping(), {}, _quiet, _quiet, OnceGate()) \
        .search_provider is None  # fmt: skip
    (home.inbox / "ask.md").write_text("Write a memo. Search the web for the latest news.")
    run_id = take_in(crew, home.inbox / "ask.md", 1 << 20)
    assert run_id is not None
    steps_until_settled(StepRunner(crew), run_id)
    proposal = home.run(run_id).feedback.read_text(encoding="utf-8")
    assert "provider: searxng (http://127.0.0.1:8888)" in proposal
    assert "| RESEARCH | Search the web (searxng (http://127.0.0.1:8888))" in proposal
