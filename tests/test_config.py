"""Tests of runtime-mapping.yaml loading, effective modes and tool resolution."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from multiverse.config import (
    OnceGate,
    debug_enabled,
    debug_mode_line_once,
    effective_tiers,
    resolve_tier,
    warn_degraded_once,
)
from multiverse.config.mapping import (
    DEFAULT_ACTION_MAPPING,
    DEFAULT_TOOLS,
    RuntimeMapping,
    Tier,
    TierConfig,
    ToolBinding,
    concrete_tools,
    load_runtime_mapping,
)
from multiverse.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent


def write_mapping(home: Path, text: str) -> Path:
    path = home / "runtime-mapping.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_gives_documented_defaults(tmp_path: Path) -> None:
    """Without runtime-mapping.yaml every tier is builtin and the default tools and limits hold."""
    mapping = load_runtime_mapping(tmp_path)
    assert list(mapping.tier_mapping) == [Tier.HIGH, Tier.MEDIUM, Tier.LOW]
    assert all(config == TierConfig() for config in mapping.tier_mapping.values())
    assert TierConfig().model == "builtin"
    assert TierConfig().max_tokens == 4096
    assert set(mapping.tool_mapping) == set(DEFAULT_TOOLS)
    assert mapping.tool_mapping["read_file"] == ToolBinding(tool="read_file")
    assert mapping.action_mapping == DEFAULT_ACTION_MAPPING
    assert mapping.daemon.max_parallel_runs == 4
    assert mapping.daemon.inbox_max_bytes == 1024 * 1024
    assert mapping.daemon.debounce_ms == 75
    assert mapping.budget.max_tokens_per_run == 2_000_000


@pytest.mark.parametrize(
    ("value", "levels"),
    [
        ("", set()),
        ("stages", {"stages"}),
        ("Tasks", {"tasks"}),
        ("[stages, tasks]", {"stages", "tasks"}),
    ],
)
def test_pause_before_names_one_plan_level_or_several(
    tmp_path: Path, value: str, levels: set[str]
) -> None:
    """`daemon.pause_before` is empty by default, one level as a word, or a list of levels."""
    write_mapping(tmp_path, f"daemon:\n  pause_before: {value}\n")
    assert load_runtime_mapping(tmp_path).daemon.pause_before == levels


def test_shipped_mappings_are_identical_and_load() -> None:
    """The repository's mapping and the home template are the same file and load as all builtin."""
    template = REPO / "multiverse" / "home_template" / "runtime-mapping.yaml"
    assert template.read_bytes() == (REPO / "runtime-mapping.yaml").read_bytes()
    mapping = load_runtime_mapping(REPO)
    assert {config.model for config in mapping.tier_mapping.values()} == {"builtin"}
    assert mapping.tier_mapping[Tier.LOW].max_tokens == 1024
    assert set(mapping.tool_mapping) == set(DEFAULT_TOOLS)


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    """An empty file (or only comments) is the same as no file."""
    write_mapping(tmp_path, "# nothing configured yet\n")
    assert load_runtime_mapping(tmp_path) == RuntimeMapping()


def test_partial_file_fills_missing_keys(tmp_path: Path) -> None:
    """Keys left out of the file take their defaults, tier by tier and field by field."""
    write_mapping(
        tmp_path,
        "tier_mapping:\n  MEDIUM:\n    model: ollama/llama3.1\n  low: openai/gpt-4.1-mini\n"
        "budget:\n  max_cost_per_run_usd: null\ndaemon:\n",
    )
    mapping = load_runtime_mapping(tmp_path)
    assert mapping.tier_mapping[Tier.HIGH] == TierConfig()
    assert mapping.tier_mapping[Tier.MEDIUM].model == "ollama/llama3.1"
    assert mapping.tier_mapping[Tier.MEDIUM].timeout_seconds == 120
    assert mapping.tier_mapping[Tier.LOW].model == "openai/gpt-4.1-mini"
    assert mapping.budget.max_cost_per_run_usd is None
    assert mapping.budget.max_tokens_per_run == 2_000_000
    assert mapping.daemon.max_parallel_runs == 8  # derived: LOW is a remote model
    assert set(mapping.tool_mapping) == set(DEFAULT_TOOLS)


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    """A YAML syntax error is a ConfigError naming the file and the line."""
    path = write_mapping(tmp_path, "tier_mapping:\n  HIGH:\n    model: [builtin\n  LOW: x\n")
    with pytest.raises(ConfigError) as caught:
        load_runtime_mapping(tmp_path)
    message = str(caught.value)
    assert str(path) in message
    assert "invalid YAML" in message
    assert f"{path}:4:" in message


def test_bad_value_names_the_key_path(tmp_path: Path) -> None:
    """A value out of range is a ConfigError naming the file and the key path in plain words."""
    write_mapping(tmp_path, "tier_mapping:\n  HIGH:\n    max_tokens: 0\n")
    with pytest.raises(ConfigError) as caught:
        load_runtime_mapping(tmp_path)
    assert str(caught.value).endswith(
        "runtime-mapping.yaml: tier_mapping.HIGH.max_tokens: must be greater than 0"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "tier_mapping:\n  HUGE: builtin\n",
            "tier_mapping.HUGE: must be 'HIGH', 'MEDIUM' or 'LOW'",
        ),
        ("budgets: {}\n", "budgets: unknown key"),
        ("daemon:\n  max_parallel_runs: 0\n", "daemon.max_parallel_runs: must be greater than"),
        (
            "daemon:\n  pause_before: plans\n",
            "daemon.pause_before: must be stages, tasks or a list",
        ),
        ("tool_mapping:\n  read_file: {requires_approval: maybe}\n", "tool_mapping.read_file"),
        ("- just\n- a list\n", "must be a mapping with the sections"),
    ],
)
def test_other_bad_values_are_named(tmp_path: Path, text: str, expected: str) -> None:
    """Unknown tiers, unknown sections, bad numbers and a non-mapping file are each named."""
    write_mapping(tmp_path, text)
    with pytest.raises(ConfigError, match=r"runtime-mapping\.yaml") as caught:
        load_runtime_mapping(tmp_path)
    assert expected in str(caught.value)


def test_non_utf8_file_is_a_config_error(tmp_path: Path) -> None:
    """A file that is not UTF-8 text is refused with a clear message, not a traceback."""
    (tmp_path / "runtime-mapping.yaml").write_bytes(b"tier_mapping:\n  HIGH: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_runtime_mapping(tmp_path)


def test_tool_bindings_as_string_or_mapping(tmp_path: Path) -> None:
    """A tool binding may be a plain concrete name or a mapping; an empty value disables it."""
    write_mapping(
        tmp_path,
        "tool_mapping:\n"
        "  read_file: safe_reader\n"
        "  run_shell_command:\n"
        "    requires_approval: true\n"
        "    options: {allow: [ls, wc]}\n"
        "  web_search: {tool: duck_search, options: {provider: duckduckgo}}\n"
        "  web_fetch:\n",
    )
    tools = load_runtime_mapping(tmp_path).tool_mapping
    assert tools["read_file"] == ToolBinding(tool="safe_reader")
    assert tools["run_shell_command"].tool == "run_shell_command"
    assert tools["run_shell_command"].requires_approval is True
    assert tools["run_shell_command"].options == {"allow": ["ls", "wc"]}
    assert tools["web_search"].options == {"provider": "duckduckgo"}
    assert "web_fetch" not in tools
    assert "write_file" not in tools


def test_action_mapping_keeps_defaults_for_missing_actions(tmp_path: Path) -> None:
    """An action_mapping section overrides the actions it names; the others keep their defaults."""
    write_mapping(tmp_path, "action_mapping:\n  access_network: web_search\n  delete: [rm]\n")
    actions = load_runtime_mapping(tmp_path).action_mapping
    assert actions["access_network"] == ["web_search"]
    assert actions["delete"] == ["rm"]
    assert actions["modify_files"] == DEFAULT_ACTION_MAPPING["modify_files"]


def test_tier_escalation_order() -> None:
    """Escalation goes LOW → MEDIUM → HIGH and stops above HIGH."""
    assert Tier.LOW.next_up() is Tier.MEDIUM
    assert Tier.MEDIUM.next_up() is Tier.HIGH
    assert Tier.HIGH.next_up() is None


def test_builtin_tier_is_builtin() -> None:
    """A tier configured as builtin is served by the builtin engine and is not degraded."""
    effective = resolve_tier(TierConfig(), {}, Tier.HIGH)
    assert (effective.tier, effective.mode, effective.degraded) == (Tier.HIGH, "builtin", False)


def test_openai_without_key_degrades() -> None:
    """An OpenAI model without OPENAI_API_KEY degrades to builtin and says why."""
    effective = resolve_tier(TierConfig(model="openai/gpt-4.1-mini"), {"OPENAI_API_KEY": " "})
    assert effective.mode == "builtin"
    assert effective.degraded
    assert effective.reason == "OPENAI_API_KEY is not set"
    assert (effective.key_env, effective.key_set) == ("OPENAI_API_KEY", False)


def test_openai_with_key_uses_the_model() -> None:
    """With its key set the model serves the tier, and the key's value is never recorded."""
    secret = "sk-test-not-a-real-key-123456"
    effective = resolve_tier(TierConfig(model="openai/gpt-4.1-mini"), {"OPENAI_API_KEY": secret})
    assert effective.mode == "model"
    assert (effective.key_env, effective.key_set) == ("OPENAI_API_KEY", True)
    assert secret not in effective.model_dump_json()


@pytest.mark.parametrize(
    ("model", "environ", "key"),
    [
        ("claude-sonnet-4-5", {"ANTHROPIC_API_KEY": "x" * 10}, "ANTHROPIC_API_KEY"),
        ("gemini/gemini-2.5-flash", {"GOOGLE_API_KEY": "x" * 10}, "GOOGLE_API_KEY"),
        ("together_ai/llama", {"TOGETHER_API_KEY": "x" * 10}, "TOGETHER_API_KEY"),
    ],
)
def test_provider_keys_and_alternates(model: str, environ: dict[str, str], key: str) -> None:
    """Bare model names and alternative key variables litellm accepts are recognised."""
    effective = resolve_tier(TierConfig(model=model), environ)
    assert (effective.mode, effective.key_env) == ("model", key)


def test_ollama_needs_no_key() -> None:
    """A local Ollama model is used without any key."""
    effective = resolve_tier(TierConfig(model="ollama/llama3.1"), {})
    assert effective.mode == "model"
    assert effective.reason == "ollama needs no key"


def test_openai_compatible_server_with_api_base_needs_no_key() -> None:
    """An openai/ model with its own api_base is used even without a key."""
    config = TierConfig(model="openai/qwen", api_base="http://127.0.0.1:8000/v1")
    effective = resolve_tier(config, {})
    assert effective.mode == "model"
    assert "api_base" in effective.reason
    assert effective.key_set is False


def test_api_key_env_override() -> None:
    """api_key_env names the variable to read; when it is missing the tier degrades."""
    config = TierConfig(
        model="openai/qwen", api_base="http://127.0.0.1:8000/v1", api_key_env="MY_SERVER_KEY"
    )
    assert resolve_tier(config, {"MY_SERVER_KEY": "abcdef123"}).key_env == "MY_SERVER_KEY"
    missing = resolve_tier(config, {"OPENAI_API_KEY": "abcdef123"})
    assert (missing.mode, missing.reason) == ("builtin", "MY_SERVER_KEY is not set")


def test_unknown_provider_is_used_and_says_so() -> None:
    """An unknown provider is not silently degraded; the reason says keys are unchecked."""
    effective = resolve_tier(TierConfig(model="bedrock/anthropic.claude-v2"), {})
    assert effective.mode == "model"
    assert "not checked" in effective.reason


def test_effective_tiers_covers_every_tier() -> None:
    """effective_tiers resolves each of HIGH, MEDIUM and LOW with its tier named."""
    mapping = RuntimeMapping.model_validate({"tier_mapping": {"LOW": "anthropic/claude-haiku"}})
    effective = effective_tiers(mapping, {})
    assert [item.tier for item in effective.values()] == [Tier.HIGH, Tier.MEDIUM, Tier.LOW]
    assert effective[Tier.LOW].degraded
    assert not effective[Tier.HIGH].degraded


def test_degraded_tiers_warn_once_per_process() -> None:
    """Degraded tiers are warned about in one line, once, with model and reason; builtin never."""
    mapping = RuntimeMapping.model_validate(
        {"tier_mapping": {"HIGH": "openai/gpt-4.1", "LOW": "anthropic/claude-haiku"}}
    )
    effective = effective_tiers(mapping, {})
    gate = OnceGate()
    with capture_logs() as events:
        first = warn_degraded_once(effective, gate=gate)
        again = warn_degraded_once(effective, gate=gate)
    assert [item.tier for item in first] == [Tier.HIGH, Tier.LOW]
    assert again == []
    warnings = [e for e in events if e["event"] == "tier_degraded_to_builtin"]
    assert len(warnings) == 1
    assert warnings[0]["tiers"] == {
        "HIGH": "openai/gpt-4.1 (OPENAI_API_KEY is not set)",
        "LOW": "anthropic/claude-haiku (ANTHROPIC_API_KEY is not set)",
    }
    assert warnings[0]["log_level"] == "warning"


def test_debug_mode_line_once() -> None:
    """With MULTIVERSE_DEBUG=1 one line lists every tier's effective mode, once per process."""
    mapping = RuntimeMapping.model_validate({"tier_mapping": {"MEDIUM": "ollama/llama3.1"}})
    gate = OnceGate()
    line = debug_mode_line_once(effective_tiers(mapping, {}), gate=gate)
    assert line is not None
    assert "HIGH=builtin" in line
    assert "MEDIUM=ollama/llama3.1" in line
    assert "LOW=builtin" in line
    assert debug_mode_line_once(effective_tiers(mapping, {}), gate=gate) is None
    assert debug_enabled({"MULTIVERSE_DEBUG": "1"})
    assert not debug_enabled({})


def test_concrete_tools_minus_forbidden_actions() -> None:
    """Tools map through tool_mapping (one left out takes its default, one turned off none);
    forbidden actions' tools are dropped."""
    mapping = RuntimeMapping.model_validate(
        {
            "tool_mapping": {
                "read_file": "safe_read",
                "write_file": "write_file",
                "web_fetch": "web_fetch",
                "replace": None,
            }
        }
    )
    tools = concrete_tools(
        mapping, ["read_file", "write_file", "web_fetch", "glob", "replace"], ["modify_files"]
    )
    assert tools == {
        "read_file": ToolBinding(tool="safe_read"),
        "web_fetch": ToolBinding(tool="web_fetch"),
        "glob": ToolBinding(tool="glob"),
    }
    assert mapping.disabled_tools == {"replace"}
    assert "web_fetch" not in concrete_tools(mapping, ["web_fetch"], ["access_network"])


def test_unknown_forbidden_action_is_refused() -> None:
    """A forbidden action the mapping cannot translate is a ConfigError, never silently ignored."""
    with pytest.raises(ConfigError, match="'fly' has no entry"):
        concrete_tools(RuntimeMapping(), ["read_file"], ["fly"])
