"""Tests of `multiverse doctor` as data and as text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.doctor import DoctorReport, diagnose, render_doctor
from multiverse.config import Tier, TierConfig
from multiverse.home import Home, init_home

SECRET = "sk-test-DOCTOR-secret-0123456789"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    init_home(Home(root))
    return root


def configure(home: Path, text: str) -> None:
    (home / "runtime-mapping.yaml").write_text(text, encoding="utf-8")


class RecordingPing:
    """A reachability probe that answers from a script and records what it was asked."""

    def __init__(self, answers: dict[str, str | None]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def __call__(self, model: str, config: TierConfig) -> str | None:
        self.asked.append(model)
        answer = self.answers[model]
        if answer == "raise":
            raise ConnectionError(f"refused while sending Bearer {SECRET}")
        return answer


def test_fresh_home_is_all_good(home: Path) -> None:
    """A freshly initialised home passes every check with all tiers builtin."""
    report = diagnose(home, {})
    assert report.healthy
    assert report.home.ok and not report.home.missing
    assert report.mapping.present and report.mapping.error is None
    assert [t.tier for t in report.tiers] == [Tier.HIGH, Tier.MEDIUM, Tier.LOW]
    assert {t.mode for t in report.tiers} == {"builtin"}
    assert [p.role for p in report.packages] == ["planner", "executor", "communicator"]
    assert all(p.loaded for p in report.packages)
    text = render_doctor(report)
    assert [line for line in text.splitlines() if "✗" in line] == [
        "✗ daemon: not running: start one with `multiverse start` (or `make start`)"
    ]
    assert "✓ the setup is good; no daemon serves this home" in text
    assert "all good" not in text
    assert not list(home.glob(".doctor-*"))


def test_key_value_never_appears(home: Path) -> None:
    """With a key set, the tier uses its model and only the key's name appears, never its value."""
    configure(home, "tier_mapping:\n  HIGH: openai/gpt-4.1\n")
    report = diagnose(home, {"OPENAI_API_KEY": SECRET})
    high = report.tiers[0]
    assert (high.mode, high.key_env, high.key_set) == ("model", "OPENAI_API_KEY", True)
    text = render_doctor(report)
    assert "key OPENAI_API_KEY: set" in text
    assert SECRET not in text
    assert SECRET not in report.model_dump_json()
    assert report.healthy


def test_missing_key_is_flagged(home: Path) -> None:
    """A tier that degrades for want of a key is marked ✗ and named with the missing variable."""
    configure(home, "tier_mapping:\n  LOW: anthropic/claude-haiku-4-5\n")
    report = diagnose(home, {})
    assert not report.healthy
    low = report.tiers[2]
    assert low.degraded and low.key_env == "ANTHROPIC_API_KEY" and not low.key_set
    text = render_doctor(report)
    assert "✗ LOW" in text
    assert "ANTHROPIC_API_KEY is not set" in text
    assert "key ANTHROPIC_API_KEY: not set" in text


def test_injected_ping_checks_model_tiers_once_each(home: Path) -> None:
    """The ping is asked once per distinct model of the model-backed tiers, never for builtin."""
    configure(
        home,
        "tier_mapping:\n  HIGH: ollama/llama3.1\n  MEDIUM: ollama/llama3.1\n"
        "  LOW: ollama/qwen2.5\n",
    )
    ping = RecordingPing({"ollama/llama3.1": None, "ollama/qwen2.5": "connection refused"})
    report = diagnose(home, {}, ping=ping)
    assert sorted(ping.asked) == ["ollama/llama3.1", "ollama/qwen2.5"]
    assert [(t.pinged, t.ping_error) for t in report.tiers] == [
        (True, None),
        (True, None),
        (True, "connection refused"),
    ]
    assert not report.healthy
    text = render_doctor(report)
    assert "✓ reachable" in text
    assert "✗ connection refused" in text
    assert "✗ LOW" in text


def test_ping_not_called_for_builtin(home: Path) -> None:
    """A home with only builtin tiers needs no ping at all."""
    ping = RecordingPing({})
    report = diagnose(home, {}, ping=ping)
    assert ping.asked == []
    assert not any(t.pinged for t in report.tiers)


def test_failing_ping_is_a_finding_with_keys_masked(home: Path) -> None:
    """A ping that raises is reported as the tier's error, with any key value masked."""
    configure(home, "tier_mapping:\n  MEDIUM: openai/gpt-4.1-mini\n")
    ping = RecordingPing({"openai/gpt-4.1-mini": "raise"})
    report = diagnose(home, {"OPENAI_API_KEY": SECRET}, ping=ping)
    error = report.tiers[1].ping_error
    assert error is not None and error.startswith("ConnectionError: refused")
    assert SECRET not in render_doctor(report)


def test_broken_mapping_is_reported(home: Path) -> None:
    """A broken runtime-mapping.yaml is shown with its ConfigError; agents are not checked."""
    configure(home, "tier_mapping:\n  HIGH:\n    max_tokens: -1\n")
    report = diagnose(home, {})
    assert report.mapping.error is not None
    assert "tier_mapping.HIGH.max_tokens: must be greater than 0" in report.mapping.error
    assert report.tiers == []
    assert not any(p.loaded for p in report.packages)
    assert not report.healthy
    assert "✗" in render_doctor(report)


def test_missing_home_and_layout(tmp_path: Path) -> None:
    """A missing home, and a home missing folders, are named with how to fix them."""
    absent = diagnose(tmp_path / "nowhere", {})
    assert not absent.home.exists
    assert "does not exist" in render_doctor(absent)
    (tmp_path / "inbox").mkdir()
    partial = diagnose(tmp_path, {})
    assert partial.home.exists and partial.home.writable
    assert "runs" in partial.home.missing
    assert "✗ layout: missing" in render_doctor(partial)
    assert not partial.healthy


def test_report_is_plain_data(home: Path) -> None:
    """The report round-trips through JSON (the CLI may print it as data)."""
    report = diagnose(home, {})
    assert DoctorReport.model_validate_json(report.model_dump_json()) == report


def test_doctor_never_imports_litellm(tmp_path: Path) -> None:
    """Diagnosing a home loads neither litellm nor its start-up cost (a real child process)."""
    code = (
        "import sys, pathlib\n"
        "from app.doctor import diagnose\n"
        "diagnose(pathlib.Path('.'), {})\n"
        "print('litellm' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert result.stdout.strip() == "False"


def test_doctor_says_how_much_overlaps_and_the_rate_limits(home: Path) -> None:
    """Each model tier shows its calls at once and rate limits; the report, the runs at once."""
    configure(
        home,
        "tier_mapping:\n"
        "  HIGH: {model: openai/gpt-4.1-mini,\n"
        "         requests_per_minute: 500, tokens_per_minute: 200000}\n"
        "  MEDIUM: {model: openai/qwen, api_base: 'http://127.0.0.1:8088/v1', concurrency: 1}\n",
    )
    report = diagnose(home, {"OPENAI_API_KEY": SECRET})
    high, medium, low = report.tiers
    assert (high.calls_at_once, high.remote, high.requests_per_minute) == (8, True, 500)
    assert (medium.calls_at_once, medium.concurrency_set, medium.remote) == (1, True, False)
    assert low.calls_at_once is None  # builtin: no calls
    assert report.parallel_runs == 8  # a remote model: at least 8 runs at once
    text = render_doctor(report)
    assert "calls at once: 8 (default for a remote provider)" in text
    assert "rate limits: 500 requests a minute, 200,000 tokens a minute" in text
    assert "calls at once: 1 (set by `concurrency`)" in text
    assert "runs advanced at once: 8" in text


def test_doctor_on_a_local_server_defaults_to_its_concurrency(home: Path) -> None:
    """A server on this machine gets 4 calls and, alone, 4 runs at once unless the mapping says."""
    configure(
        home,
        "tier_mapping:\n  MEDIUM: {model: openai/qwen, api_base: 'http://localhost:8088/v1'}\n",
    )
    report = diagnose(home, {})
    assert report.tiers[1].calls_at_once == 4 and report.parallel_runs == 4
    assert "calls at once: 4 (default for a server on this machine or network)" in render_doctor(
        report
    )


def test_a_search_provider_without_its_key_is_flagged(home: Path) -> None:
    """web_search mapped to Tavily whose key variable is unset: doctor says so (✗, not
    healthy); with the variable set it does not."""
    configure(home, "tool_mapping:\n  web_search: {tool: web_search, options: "
                    "{provider: tavily, api_key_env: MY_SEARCH_KEY}}\n")  # fmt: skip
    report = diagnose(home, {})
    assert not report.healthy
    assert report.promises == [
        "web search: web_search is mapped to tavily, but MY_SEARCH_KEY is not set: nothing "
        "will be searched until it is"
    ]
    assert f"✗ {report.promises[0]}" in render_doctor(report)
    assert diagnose(home, {"MY_SEARCH_KEY": "k"}).promises == []


def test_a_recipe_naming_a_tool_type_nothing_provides_is_flagged(home: Path) -> None:
    """A recipe of guidelines/mcp_list.md whose step needs a tool type the mapping does not
    provide is never used: doctor names it; the shipped recipes pass."""
    assert diagnose(home, {}).promises == []
    path = home / "guidelines" / "mcp_list.md"
    row = "| sheets | spreadsheet, table | POST | 1 | spreadsheet_export | Export the figures. |\n"
    path.write_text(path.read_text(encoding="utf-8") + row, encoding="utf-8")
    promises = diagnose(home, {}).promises
    assert len(promises) == 1
    assert "recipe 'sheets' needs tool type spreadsheet_export" in promises[0]
    assert "provided: web_search, data_visualization" in promises[0]
    configure(home, "tool_mapping:\n  web_search:\n")  # turned off: market_research is unused
    assert any("recipe 'market_research' needs tool type web_search" in p
               for p in diagnose(home, {}).promises)  # fmt: skip


def test_a_tool_left_out_of_the_mapping_is_a_notice_not_a_refusal(home: Path) -> None:
    """A tool_mapping that leaves out tools the agents' prompts name: each takes its runtime
    default and is said as a notice; the packages load and the daemon starts (no exit 2)."""
    from journey import cli_process

    configure(home, "tool_mapping:\n  read_file: read_file\n")
    report = diagnose(home, {})
    assert all(p.loaded for p in report.packages) and report.healthy
    notices = [n for p in report.packages for n in p.notices]
    assert any("{tool:glob} is not in tool_mapping: its runtime default `glob` is used" in n
               for n in notices)  # fmt: skip
    assert "  notice: " in render_doctor(report)
    started = cli_process(Home(home), "start", "--once")  # its own process: said once in it
    assert started.returncode == 0, started.stderr
    said = [line for line in started.stderr.splitlines() if line.startswith("notice: ")]
    assert said and len(said) == len(set(said))  # each said once
