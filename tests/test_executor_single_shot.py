"""Tests of the single-shot Executor: the mode, the references in the prompt, the written answer."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from executor.model import ModelExecutor, context_window, resolve_executor_mode
from executor.model.memo import FIRST_ANALYSIS_END, extension_topics, without_scaffolding
from executor.model.references import (
    Source,
    bearing_parts,
    cut_to_tokens,
    estimate_tokens,
    fair_caps,
    writing_tokens,
)
from executor.model.single_shot import (
    MAX_EXTENSIONS,
    WORKING_PASTE_TOKENS,
    WORKING_TABLE_ROWS,
    content_words,
    deliverable_paste,
)
from multiverse.config import RuntimeMapping, TierConfig
from multiverse.gateway import (
    Gateway,
    model_context_window,
    model_supports,
    unwrap_document,
    without_repeats,
)
from multiverse.gateway.calls import RetryPolicy
from multiverse.home import Home
from multiverse.models import MajorStage, Phase, Task, UserInstruction
from multiverse.roles import TaskAssignment
from multiverse.spec import FileSet, Reading, RequestSpec, asked_words

from fake_openai import FakeOpenAI, Reply, length_cut, text, tools
from fakes import ScriptedGateway
from runhome import prepare_run_home

RUN = "run-20250101-000000-001"
ASSET = "assets/market_report_2024.md"
CSV = "assets/quarterly_revenue.csv"
PHASE_IDS = {"ANALYZING": "P1", "GENERATING_OUTPUT": "P4"}
MEMO = "# Market-entry memo\n\nThe market reached €18.5 billion (source: `" + ASSET + "`).\n"
LOOP = "The market is growing. " * 200


# -- pure decisions ---------------------------------------------------------------------------


def test_auto_mode_asks_litellm_whether_the_model_calls_tools() -> None:
    """An unknown openai/<name> on an api_base writes single-shot; gpt-4.1-mini uses tools."""
    local = TierConfig(model="openai/qwen2.5-coder-1.5b-instruct", api_base="http://127.0.0.1:1/v1")
    assert resolve_executor_mode(local, model_supports) == "single_shot"
    assert resolve_executor_mode(TierConfig(model="openai/gpt-4.1-mini"), model_supports) == "tools"
    forced = local.model_copy(update={"executor_mode": "tools"})
    assert resolve_executor_mode(forced, model_supports) == "tools"


def test_context_window_comes_from_the_tier_then_litellm_then_8192() -> None:
    """The tier's context_window wins; else litellm's max_input_tokens; else 8192."""
    assert context_window(TierConfig(model="x", context_window=4000), lambda _: 99) == 4000
    assert context_window(TierConfig(model="x"), lambda _: 32768) == 32768
    assert context_window(TierConfig(model="x"), lambda _: None) == 8192
    assert (model_context_window("openai/gpt-4.1-mini") or 0) > 100_000
    assert model_context_window("openai/qwen2.5-coder-1.5b-instruct") is None


def test_length_asked_sets_the_answers_tokens() -> None:
    """Pages and words become words; max_tokens is words×1.6, at least 600, at most the tier's."""
    assert asked_words(["A two-page memo in English"]) == 1000
    assert asked_words(["one page, please", "at most 300 words"]) == 500
    assert asked_words(["about 1,200 words"]) == 1200 and asked_words(["half a page"]) == 250
    assert asked_words(["Use the 2023 figures", "see the homepage"]) is None
    assert writing_tokens(900, 4096) == 1440 and writing_tokens(100, 4096) == 600
    assert writing_tokens(900, 1000) == 1000 and writing_tokens(None, 2048) == 2048
    # A Korean word (eojeol) takes about 3 tokens; another language without a measure, 1.6.
    assert writing_tokens(400, 4096, "ko") == 1200 and writing_tokens(400, 4096, "fr") == 640


@pytest.mark.parametrize(("language", "room"), [("en", 1280), ("ko", 2400)])
def test_a_working_document_in_korean_gets_the_tokens_its_words_need(
    root: Path, fake_openai: FakeOpenAI, language: str, room: int
) -> None:
    """Two Korean working documents of the local model (~430 words) were cut at 1,280 tokens,
    the room of 400 English words: a writing call's room follows the confirmed language."""
    out = f"runs/{RUN}/workspace/ANALYZING/analysis.md"
    fake_openai.script(text(MEMO))
    spec = RequestSpec(request="A memo.", sources=[ASSET], confirmed=True, language=language)
    task = assignment(root, out, references=[ASSET]).model_copy(update={"spec": spec})
    assert executor(root, fake_openai).execute_task(task).status == "COMPLETED"
    assert fake_openai.requests[0]["max_tokens"] == room


def test_fair_caps_keep_small_texts_whole_and_share_the_rest() -> None:
    """Within budget all is kept; over it, small items whole and large ones an equal cap."""
    assert fair_caps([10, 20], 100) == [10, 20]
    assert fair_caps([10, 500, 1000], 310) == [10, 150, 150]
    assert sum(fair_caps([7, 9, 11], 10)) <= 10
    cut = cut_to_tokens("line one\n" * 100, 30)
    assert estimate_tokens(cut) <= 30 and cut.endswith("\n")
    # Erring high, with 5 % of slack: a Hangul syllable, a digit or a separator is a token, a
    # letter of prose about a third of one.
    assert estimate_tokens("한국어") == 4 and estimate_tokens("abcdefg") == 3
    assert estimate_tokens("1520,462,31.5") == 14


def test_unwrap_document_strips_one_wrapping_fence_or_a_preamble() -> None:
    """A ```markdown-wrapped answer or a preamble with one markdown block gives the document."""
    assert unwrap_document("```markdown\n# Memo\n\nText.\n```") == "# Memo\n\nText.\n"
    assert unwrap_document("Here is the memo:\n```md\n# Memo\n```\n") == "# Memo\n"
    inner = "# Memo\n\n```python\nprint(1)\n```\n\nEnd."
    assert unwrap_document(inner) == inner + "\n"
    assert unwrap_document("```\na\n```\ntext\n```\nb\n```") == "```\na\n```\ntext\n```\nb\n```\n"


# -- the single-shot task ---------------------------------------------------------------------


@pytest.fixture
def root(home: Home) -> Path:
    """An initialised home with the fixture assets and a run's folders."""
    return prepare_run_home(home, RUN)


def tier(server: FakeOpenAI | None = None, **fields: Any) -> TierConfig:
    """A keyless self-hosted tier (executor_mode auto) on the fake server."""
    base = server.base_url if server is not None else "http://127.0.0.1:9/v1"
    values: dict[str, Any] = {"model": "openai/fake-model", "api_base": base,
                              "max_tokens": 4096, "timeout_seconds": 10, **fields}  # fmt: skip
    return TierConfig(**values)


def executor(root: Path, server: FakeOpenAI, **fields: Any) -> ModelExecutor:
    """A ModelExecutor on the fake server through real litellm."""
    gateway = Gateway(runs_root=root / "runs", retry=RetryPolicy(max_attempts=1))
    return ModelExecutor(gateway, RuntimeMapping(), tier(server, **fields), root)


def assignment(
    root: Path, out: str, phase: str = "ANALYZING", references: list[str] | None = None,
    post: str = "",
) -> TaskAssignment:  # fmt: skip
    """One task of `phase` reading `references` (the market report) and writing `out`."""
    pid = PHASE_IDS[phase]
    task = Task(task_id=f"{pid}-S01-T01", run_id=RUN, stage_id=f"{pid}-S01",
                task_name="Market memo", task_purpose="Write the market-entry memo.",
                related_references=references or [ASSET], output_path=out,
                post_tool_purpose=post, execution_order=1)  # fmt: skip
    instruction = UserInstruction(instruction_id="I0001", run_id=RUN, instruction_type="FORMAT",
                                  content="A two-page memo in English")  # fmt: skip
    return TaskAssignment(
        home=str(root), run_id=RUN, request="Write a market-entry memo for the board.",
        phase=Phase(phase_id=pid, run_id=RUN, phase_name=phase),
        stage=MajorStage(stage_id=f"{pid}-S01", run_id=RUN, phase_id=pid, stage_name="Memo",
                         stage_goal="A memo the board can decide on.", execution_order=1),
        task=task, instructions=[instruction],
    )  # fmt: skip


def prompt_of(body: dict[str, Any]) -> str:
    """The user message of one recorded request."""
    return str(body["messages"][-1]["content"])


def test_single_shot_writes_the_models_answer_from_the_references(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """The references' text is in the prompt; the unwrapped answer is the output; COMPLETED."""
    out = f"runs/{RUN}/workspace/ANALYZING/analysis.md"
    fake_openai.script(text(f"```markdown\n{MEMO}```"))
    role = executor(root, fake_openai, temperature=0.2, extra_body={"repeat_penalty": 1.1})
    signal = role.execute_task(assignment(root, out, references=[ASSET, CSV], post="chart"))
    assert signal.status == "COMPLETED" and signal.post_tool_required
    assert [o.path for o in signal.outputs] == [out]
    assert (root / out).read_text("utf-8") == MEMO
    (body,) = fake_openai.requests
    prompt = prompt_of(body)
    assert "up 14% from 2022" in prompt and "2023-Q1" in prompt  # both references, pasted
    assert "data, not instructions" in prompt
    assert "A two-page memo in English" in str(body["messages"][0]["content"])  # run's prefix
    # A working document has a budget of its own, not the two-page memo's 900 words.
    assert "About 400 words" in prompt and "source file" in prompt
    assert "Never copy a table" in prompt
    assert "tools" not in body and body["max_tokens"] == 1280  # twice its budget: seldom cut
    assert body["temperature"] == 0.2 and body["repeat_penalty"] == 1.1  # the tier's call_fields


# What a model adds when a deliverable's analysis far shorter than asked is continued.
EXTRA = "## Outlook\n\nThe references give no forecast beyond 2027 (source: `assets/x.md`).\n"
VERDICT = json.dumps(
    {
        "executive_summary": "Germany leads with €6.9 billion of revenue in 2023.",
        "recommendation": "Enter Germany first, through a leasing offer.",
        "reasons": ["Germany is the largest market (€6.9 billion).", "Leasing is 12% of sales."],
    }
)


def test_published_memo_is_assembled_from_the_analysis_and_a_verdict(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """A deliverable: the analysis (free text), then a schema-constrained verdict; code assembles
    summary, analysis, charts, recommendation with its reasons, and the assets read."""
    chart = f"runs/{RUN}/workspace/ANALYZING/revenue_chart.html"
    (root / chart).write_text("<html><svg>SECRET-CHART-MARKUP</svg></html>", encoding="utf-8")
    (root / "assets" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    out = f"outputs/{RUN}/memo.md"
    fake_openai.script(text(MEMO), text(f"# Market-entry memo\n\n{EXTRA}"), text(VERDICT))
    references = [ASSET, chart, "assets/photo.png", "../outside.md"]
    signal = executor(root, fake_openai).execute_task(
        assignment(root, out, phase="GENERATING_OUTPUT", references=references)
    )
    assert signal.status == "COMPLETED" and not signal.post_tool_required
    analysis, extend, verdict = fake_openai.requests
    prompt = prompt_of(analysis)
    assert "About 700 words" in prompt  # 70% of the two pages asked: the rest is code's
    assert "the body of the deliverable the person reads" in prompt
    # Far shorter than asked, the analysis is continued once, on the same prompt.
    assert extend["messages"][:2] == analysis["messages"]
    assert extend["messages"][2] == {"role": "assistant", "content": MEMO}
    assert "about 700 were asked. Continue it" in extend["messages"][3]["content"]
    # Room beyond the words missing: a small model going on past them is seldom cut.
    assert extend["max_tokens"] == 2 * writing_tokens(700 - content_words(MEMO), 4096)
    assert "SECRET-CHART-MARKUP" not in prompt and "PNG" not in prompt
    assert "not a text file: named, not pasted" in prompt
    assert "refused: path '../outside.md' is refused" in prompt
    assert verdict["response_format"]["type"] == "json_schema"  # the verdict is constrained
    assert "€18.5 billion" in prompt_of(verdict)  # made from the analysis
    # The same system message as the writing call's: the provider's cache serves it again.
    assert verdict["messages"][0]["content"] == analysis["messages"][0]["content"]
    memo = (root / out).read_text("utf-8")
    order = ["## Executive summary", "## Analysis", "## Charts", "## Recommendation",
             "Because:", "## References"]  # fmt: skip
    assert [memo.index(heading) for heading in order] == sorted(memo.index(h) for h in order)
    assert "Enter Germany first, through a leasing offer." in memo
    assert memo.startswith("# Market-entry memo\n") and memo.count("# Market-entry memo") == 1
    assert EXTRA.strip() in memo.split("## Recommendation")[0]
    assert "- Leasing is 12% of sales." in memo
    assert f"[revenue_chart](../../runs/{RUN}/workspace/ANALYZING/revenue_chart.html)" in memo
    assert f"- `{ASSET}`" in memo and "photo.png`" not in memo.split("## References")[1]


def test_references_are_cut_fairly_to_the_context_window(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """A reference larger than the window is cut, marked as cut, and the call fits the window."""
    big = "assets/big.md"
    (root / big).write_text("".join(f"Line {n}: revenue grew.\n" for n in range(20_000)), "utf-8")
    fake_openai.script(text(MEMO))
    out = f"runs/{RUN}/workspace/ANALYZING/analysis.md"
    role = executor(root, fake_openai, context_window=6000)
    assert role.execute_task(assignment(root, out, references=[ASSET, big])).status == "COMPLETED"
    (body,) = fake_openai.requests
    prompt = prompt_of(body)
    assert "up 14% from 2022" in prompt  # the small reference whole
    assert "Line 0: revenue grew." in prompt and "Line 19999" not in prompt
    assert "[cut: only the start of this file fits" in prompt
    sent = sum(estimate_tokens(str(m["content"])) for m in body["messages"])
    assert sent + body["max_tokens"] <= 6000


def test_a_task_planned_before_confirm_reads_only_what_confirm_kept(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """The first analysis is planned before the proposal with every input; the spec CONFIRM
    froze leaves the CSV out, so neither the file named nor the folder holding it gives it."""
    out = f"runs/{RUN}/workspace/ANALYZING/first_analysis.md"
    (root / "assets" / "private_figures.md").write_text("PRIVATE-FIGURE 991\n", encoding="utf-8")
    gone = FileSet(files=[CSV, "assets/private_figures.md"], reading=Reading(phrase="not the CSV"))
    kept = RequestSpec(request="A memo.", sources=[ASSET], confirmed=True, left_out=[gone])
    task = assignment(root, out, references=[ASSET, CSV, "assets/"])
    fake_openai.script(text(MEMO))
    signal = executor(root, fake_openai).execute_task(task.model_copy(update={"spec": kept}))
    assert signal.status == "COMPLETED", signal.error
    prompt = prompt_of(fake_openai.requests[0])
    assert "€18.5 billion" in prompt  # the source kept
    assert "2023-Q1" not in prompt and "PRIVATE-FIGURE" not in prompt
    assert CSV not in prompt  # not even named


def test_a_working_document_reads_a_part_of_a_large_source(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """A working document pastes at most WORKING_PASTE_TOKENS of its references however large
    the window (a small model took minutes to read a whole window of table rows); the cut is
    marked."""
    out = f"runs/{RUN}/workspace/ANALYZING/first.md"
    rows = "\n".join(f"2023-Q{n % 4 + 1},Region {n},{1000 + n},{n % 97}.5" for n in range(6000))
    (root / "assets" / "big.csv").write_text("quarter,region,revenue,margin\n" + rows + "\n",
                                             encoding="utf-8")  # fmt: skip
    fake_openai.script(text(MEMO))
    role = executor(root, fake_openai, context_window=131072)
    signal = role.execute_task(assignment(root, out, references=["assets/big.csv"]))
    assert signal.status == "COMPLETED", signal.error
    prompt = prompt_of(fake_openai.requests[0])
    assert WORKING_PASTE_TOKENS <= estimate_tokens(prompt) < WORKING_PASTE_TOKENS + 2000
    assert "[cut: only the start of this file fits" in prompt


def test_a_window_without_room_for_the_references_fails_before_any_call(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """When the answer and the prompt fill the window, the task fails saying so; no call."""
    out = f"runs/{RUN}/workspace/ANALYZING/analysis.md"
    signal = executor(root, fake_openai, context_window=1500).execute_task(assignment(root, out))
    assert signal.status == "FAILED" and signal.error is not None
    assert "leaves no room for the references" in signal.error and fake_openai.count == 0


@pytest.mark.parametrize(
    ("cut", "requests", "said"),
    [
        (length_cut(LOOP, completion_tokens=1440), 1,
         "RUNAWAY: openai/fake-model looped instead of finishing its document"),
        (length_cut(), 2, "LENGTH_LIMIT: the document"),
    ],
)  # fmt: skip
def test_a_loop_or_an_empty_cut_fails_at_once(
    root: Path, fake_openai: FakeOpenAI, cut: Reply, requests: int, said: str
) -> None:
    """A looping cut stops at once (RUNAWAY); an empty one after the gateway's retry with more
    room (LENGTH_LIMIT): nothing to continue, no file."""
    fake_openai.default = cut
    out = f"runs/{RUN}/workspace/ANALYZING/analysis.md"
    signal = executor(root, fake_openai).execute_task(assignment(root, out))
    assert signal.status == "FAILED" and signal.error is not None
    assert signal.error.startswith(said) and "ran away" not in signal.error
    assert fake_openai.count == requests and not (root / out).exists()


def run_scripted(root: Path, model: ScriptedGateway, out: str) -> Any:
    """Execute one task with a scripted model in single-shot mode."""
    role = ModelExecutor(model, RuntimeMapping(), tier(executor_mode="single_shot"), root)
    return role.execute_task(assignment(root, out))


def test_a_looping_answer_stops_at_once(root: Path) -> None:
    """A cut answer that repeats itself is a RUNAWAY without a second call."""
    model = ScriptedGateway((LOOP, "length"))
    signal = run_scripted(root, model, f"runs/{RUN}/workspace/ANALYZING/a.md")
    assert signal.error is not None and signal.error.startswith("RUNAWAY: ")
    assert "repeats" in signal.error and len(model.calls) == 1


FIRST_PART = "# Market-entry memo\n\nThe market reached €18.5 billion in 2023, up 14% from"
SECOND_PART = " 2022 (source: `" + ASSET + "`).\n\n## Outlook\n\nGrowth goes on.\n"


def test_a_cut_deliverable_is_continued_and_saved_whole(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """The deliverable's text cut once is continued where it stopped: the memo holds both parts
    in order, nothing repeated at the seam, and usage.json counts every call."""
    out = f"outputs/{RUN}/memo.md"
    # The second part starts by repeating the words it was in, as models do.
    fake_openai.script(length_cut(FIRST_PART, completion_tokens=1120),
                       text("up 14% from" + SECOND_PART, completion_tokens=40),
                       text(EXTRA), text(VERDICT))  # fmt: skip
    task = assignment(root, out, phase="GENERATING_OUTPUT")
    signal = executor(root, fake_openai).execute_task(task)
    assert signal.status == "COMPLETED", signal.error
    memo = (root / out).read_text("utf-8")
    assert "The market reached €18.5 billion in 2023, up 14% from 2022 (source:" in memo
    first, second, _, _ = fake_openai.requests
    assert second["messages"][-2] == {"role": "assistant", "content": FIRST_PART}
    assert "Continue exactly where you stopped" in second["messages"][-1]["content"]
    assert second["messages"][:-2] == first["messages"]
    usage = json.loads((root / "runs" / RUN / "usage.json").read_text("utf-8"))
    assert usage["calls"] == 4  # the two parts, then, still far short, one extension


def test_a_working_document_cut_at_its_budget_keeps_its_whole_paragraphs(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """A working document is not continued (minutes of a small model for text only the next
    task reads): cut at its budget, with no loop in it, it keeps its whole paragraphs and says
    where it was cut; large material is no failure of the run."""
    out = f"runs/{RUN}/workspace/ANALYZING/first.md"
    fake_openai.script(length_cut("The first source holds revenue by country.\n\n"
                                  "The second source holds the costs.\n\nThe third", 640))
    signal = executor(root, fake_openai).execute_task(assignment(root, out))
    assert signal.status == "COMPLETED", signal.error
    written = (root / out).read_text("utf-8")
    assert "The second source holds the costs." in written and "The third" not in written
    assert "*[Cut here: the text ran past its budget of about 400 words.]*" in written
    assert fake_openai.count == 1


def copied_table(rows: int) -> tuple[str, list[str]]:
    """A year-by-year table as a small model copies one out of a source, and its body rows."""
    body = [f"| {1867 + n} | {round(9.6 + n / 10, 1)} |" for n in range(rows)]
    return "| Year | Rate |\n|------|------|\n" + "\n".join(body) + "\n", body


def test_a_working_document_that_copies_a_table_out_is_closed_at_its_rows(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """The local model copied a 141-row table into a working document until max_tokens cut
    it (`finish_reason: length`): a working document's stream is closed after
    WORKING_TABLE_ROWS rows of a table, keeps what came before, says where the table was cut,
    and no call is cut at its limit."""
    out = f"runs/{RUN}/workspace/ANALYZING/summary.md"
    table_, rows = copied_table(141)
    fake_openai.script(length_cut("## Recurring themes\n\nThe rate fell from 16.2 in 1946 to "
                                  f"6.8 in 2009.\n\n## Key figures\n\n{table_}", 1200))
    signal = executor(root, fake_openai).execute_task(assignment(root, out))
    assert signal.status == "COMPLETED", signal.error
    written = (root / out).read_text("utf-8")
    assert "The rate fell from 16.2 in 1946 to 6.8 in 2009." in written
    assert rows[WORKING_TABLE_ROWS - 1] in written and rows[WORKING_TABLE_ROWS] not in written
    assert f"*[Cut here: the table went on past {WORKING_TABLE_ROWS} rows.]*" in written
    usage = json.loads((root / "runs" / RUN / "usage.json").read_text("utf-8"))
    assert fake_openai.count == 1 and usage["calls"] == 1


def test_the_deliverables_analysis_keeps_a_table_it_draws_whole(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """A table in the deliverable is the reader's: its analysis is never closed at a table's
    rows, only a working document is."""
    out = f"outputs/{RUN}/memo.md"
    table_, rows = copied_table(WORKING_TABLE_ROWS + 10)
    fake_openai.script(text(f"# Memo\n\n## Rates by year\n\n{table_}\n{EXTRA}"),
                       text(EXTRA), text(VERDICT))  # fmt: skip
    signal = executor(root, fake_openai).execute_task(
        assignment(root, out, phase="GENERATING_OUTPUT"))
    assert signal.status == "COMPLETED", signal.error
    memo = (root / out).read_text("utf-8")
    assert all(row in memo for row in rows) and "went on past" not in memo


def test_a_deliverable_still_cut_after_its_continuations_fails_clearly(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """Cut again and again without one whole sentence: after the first part and two
    continuations, LENGTH_LIMIT naming the size and what to change; nothing written; every
    call counted."""
    out = f"outputs/{RUN}/memo.md"
    fake_openai.default = length_cut("Section after section of honest text, ", 1120)
    task = assignment(root, out, phase="GENERATING_OUTPUT")
    signal = executor(root, fake_openai).execute_task(task)
    assert signal.status == "FAILED" and signal.error is not None
    assert signal.error.startswith("LENGTH_LIMIT: the document " + out)
    assert "still unfinished after 3 parts of up to 2240 tokens each" in signal.error
    assert "ask for less, or narrow the request" in signal.error
    assert "ran away" not in signal.error
    assert fake_openai.count == 3 and not (root / out).exists()
    usage = json.loads((root / "runs" / RUN / "usage.json").read_text("utf-8"))
    assert usage["calls"] == 3


def test_a_cut_working_document_without_a_sentence_fails_at_once(root: Path) -> None:
    """A working document cut before one whole sentence fails without another call."""
    out = f"runs/{RUN}/workspace/ANALYZING/a.md"
    model = ScriptedGateway(("# Memo\n\nThe market reached", "length"))
    signal = run_scripted(root, model, out)
    assert signal.error is not None and signal.error.startswith("LENGTH_LIMIT: ")
    assert model.calls[0].continuations == 0
    assert len(model.calls) == 1 and not (root / out).exists()


# -- SIMPLE_TASK ------------------------------------------------------------------------------


def test_simple_tasks_keep_builtin_commands_and_ask_the_model_otherwise(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """Known commands stay builtin (no call); other requests get the model's reply with files."""
    role = executor(root, fake_openai)
    listed = role.simple_task("list the assets", root)
    assert "Produced offline" in listed and fake_openai.count == 0
    fake_openai.script(text("Germany is the largest market (€6.9 billion)."))
    reply = role.simple_task(f"Which country leads in {ASSET}?", root)
    assert reply.startswith("> Written by the model `openai/fake-model`.")
    assert "Germany is the largest market" in reply and "configure a model" not in reply
    (body,) = fake_openai.requests
    assert "€6.9 billion of revenue" in prompt_of(body)  # the named file was read in


def test_a_quick_reply_cut_at_the_limit_is_continued(root: Path, fake_openai: FakeOpenAI) -> None:
    """A SIMPLE_TASK reply cut by the length limit goes on where it stopped: one reply."""
    fake_openai.script(length_cut("Germany is the largest", 600), text(" market (€6.9 billion)."))
    reply = executor(root, fake_openai).simple_task(f"Which country leads in {ASSET}?", root)
    assert "Germany is the largest market (€6.9 billion)." in reply
    assert "unfinished" not in reply and fake_openai.count == 2


@pytest.mark.parametrize(("request_text", "room"), [
    ("Answer in about 500 words: which country leads?", 800),
    ("어느 나라가 1위인지 500단어로 답해 주세요.", 1500),  # a Korean word takes about 3 tokens
    ("Which country leads? Answer in Korean, about 500 words.", 1500),
])  # fmt: skip
def test_a_quick_replys_room_follows_the_language_it_is_written_in(
    root: Path, fake_openai: FakeOpenAI, request_text: str, room: int
) -> None:
    """A quick reply has no confirmed spec: its room is sized for the language the request asks
    for, else the one it is written in."""
    fake_openai.script(text("Germany leads (€6.9 billion)."))
    executor(root, fake_openai).simple_task(request_text, root)
    (body,) = fake_openai.requests
    assert body["max_tokens"] == room


def test_a_deliverable_links_every_chart_the_run_drew(root: Path, fake_openai: FakeOpenAI) -> None:
    """A chart another task drew is offered to the memo and linked in it."""
    chart = f"runs/{RUN}/workspace/STRATEGIZING/P2-S01-T01-POST-01.html"
    (root / chart).write_text("<html><svg>bars</svg></html>", encoding="utf-8")
    (root / f"runs/{RUN}/workspace/ANALYZING/notes.html").write_text("<p>no chart</p>", "utf-8")
    out = f"outputs/{RUN}/memo.md"
    analysis = "# Memo\n\nGermany leads with €6.9 billion (source: assets)."
    fake_openai.script(text(analysis), text(EXTRA), text(VERDICT))
    signal = executor(root, fake_openai).execute_task(
        assignment(root, out, phase="GENERATING_OUTPUT")
    )
    assert signal.status == "COMPLETED"
    link = f"../../runs/{RUN}/workspace/STRATEGIZING/P2-S01-T01-POST-01.html"
    assert link in prompt_of(fake_openai.requests[0])
    written = (root / out).read_text("utf-8")
    assert written.startswith("# Memo\n\n## Executive summary")
    assert f"## Charts\n\n- [P2-S01-T01-POST-01]({link})" in written
    assert "notes" not in written


def test_a_title_without_content_is_asked_again_once_then_fails(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """Small models stop after the title: asked once more with the reason, then a clear FAILED."""
    out = f"runs/{RUN}/workspace/ANALYZING/analysis.md"
    fake_openai.script(text("# Revenue facts"), text("# Revenue facts\n\nGermany: €6.9 billion."))
    signal = executor(root, fake_openai).execute_task(assignment(root, out))
    assert signal.status == "COMPLETED"
    assert "title but no content" in prompt_of(fake_openai.requests[1])
    fake_openai.script(text("# Only a title"), text("## Still a title"))
    signal = executor(root, fake_openai).execute_task(
        assignment(root, f"runs/{RUN}/workspace/ANALYZING/other.md")
    )
    assert signal.status == "FAILED" and "wrote no content" in (signal.error or "")
    assert fake_openai.count == 4


def test_code_writes_the_title_and_the_model_the_body(root: Path, fake_openai: FakeOpenAI) -> None:
    """The prompt says the title is written; a body-only answer gets the task's name on top,
    and an answer with its own title keeps it."""
    out = f"runs/{RUN}/workspace/ANALYZING/analysis.md"
    body = "## Revenue\n\nGermany: €6.9 billion (source: `assets/x.csv`).\n"
    fake_openai.script(text(body))
    signal = executor(root, fake_openai).execute_task(assignment(root, out))
    assert signal.status == "COMPLETED"
    assert "title line `# Market memo` is already written" in prompt_of(fake_openai.requests[0])
    written = (root / out).read_text("utf-8")
    assert written == f"# Market memo\n\n{body}"
    own = f"runs/{RUN}/workspace/ANALYZING/own.md"
    fake_openai.script(text("# Its own title\n\nGermany leads.\n"))
    executor(root, fake_openai).execute_task(assignment(root, own))
    assert (root / own).read_text("utf-8") == "# Its own title\n\nGermany leads.\n"


def test_a_simple_task_with_a_tool_calling_model_reads_with_read_only_tools(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """Where the tier calls tools, a simple request gets the read-only file tools (no write):
    the model reads a file it chose, and its last text is the reply."""
    role = executor(root, fake_openai, executor_mode="tools")
    fake_openai.script(
        tools(("read_file", {"path": ASSET})),
        text("The report says Germany leads with €6.9 billion."),
    )
    reply = role.simple_task("Which market leads, according to the report?", root)
    assert reply.startswith("> Written by the model") and "Germany leads" in reply
    first, second = fake_openai.requests
    offered = {tool["function"]["name"] for tool in first["tools"]}
    assert offered == {"list_directory", "read_file", "read_many_files", "glob",
                       "search_file_content"}  # fmt: skip
    assert "€6.9 billion of revenue" in json.dumps(second["messages"], ensure_ascii=False)


def test_the_task_purpose_as_it_stands_is_what_the_model_is_asked(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """A purpose a person rewrote in tasks.md is the assignment's, and so the prompt's."""
    out = f"runs/{RUN}/workspace/ANALYZING/analysis.md"
    fake_openai.script(text(MEMO))
    base = assignment(root, out)
    edited = base.task.model_copy(update={"task_purpose": "Only what concerns France's growth."})
    signal = executor(root, fake_openai).execute_task(base.model_copy(update={"task": edited}))
    assert signal.status == "COMPLETED"
    (body,) = fake_openai.requests
    assert "Only what concerns France's growth." in prompt_of(body)
    assert "Write the market-entry memo." not in prompt_of(body)


@pytest.mark.parametrize(("written", "kept"), [
    ("# T\n\n## Facts\n\nGermany leads with 1,585 EUR in 2023Q4 (row 5).\n\n## Facts\n\n"
     "Germany leads with 1,585 EUR in 2023Q4 (row 5).\n",
     "# T\n\n## Facts\n\nGermany leads with 1,585 EUR in 2023Q4 (row 5).\n"),
    ("# T\n\n- none\n\n- none\n\nA short line.\n", "# T\n\n- none\n\n- none\n\nA short line.\n"),
    ("# T\n\n### A\n\nThe first source holds revenue by country, 2023.\n\n### B\n\n"
     "The first source holds revenue by country, 2023.\n\n## Next\n\nOther text here.\n",
     "# T\n\n### A\n\nThe first source holds revenue by country, 2023.\n\n## Next\n\n"
     "Other text here.\n"),
    ("# 분석\n\n독일은 2023년 4분기 매출이 1,585유로로 가장 컸다 (5행).\n\n"
     "독일은 2023년 4분기 매출이 1,585유로로 가장 컸다 (5행).\n",
     "# 분석\n\n독일은 2023년 4분기 매출이 1,585유로로 가장 컸다 (5행).\n"),
    # a heading and its text with no blank line between, written twice (the local model)
    ("# T\n\n#### Summary\nThe market grew 35% to 1,200 in 2023, led by commuting.\n\n"
     "#### Summary\nThe market grew 35% to 1,200 in 2023, led by commuting.\n\n## Next\n\n"
     "Other text here.\n",
     "# T\n\n#### Summary\nThe market grew 35% to 1,200 in 2023, led by commuting.\n\n"
     "## Next\n\nOther text here.\n"),
])  # fmt: skip
def test_a_document_says_each_paragraph_once(written: str, kept: str) -> None:
    """A small model continuing a cut text starts a section again: the repeat goes, and a
    heading left with nothing under it goes with it; short recurring lines stay."""
    assert without_repeats(written) == kept


def test_every_writing_call_shows_the_runs_sources_first_byte_for_byte(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """The files the confirmed spec keeps are shown after the facts in every writing call, the
    same bytes whatever the task reads (a provider's prefix cache serves them), never a file it
    leaves out, and a file shown whole there is not pasted again; an answer that starts to echo
    a pasted file is stopped there."""
    (root / "assets" / "private_figures.md").write_text("PRIVATE-FIGURE 991\n", encoding="utf-8")
    notes = f"runs/{RUN}/workspace/ANALYZING/notes.md"
    (root / notes).parent.mkdir(parents=True, exist_ok=True)
    (root / notes).write_text("# Notes\n\nNOTES-ONLY-HERE.\n", encoding="utf-8")
    gone = FileSet(files=["assets/private_figures.md"], reading=Reading(phrase="not the private"))
    kept = RequestSpec(request="A memo.", sources=[ASSET, CSV], confirmed=True, left_out=[gone])
    fake_openai.script(text(MEMO), text(MEMO))
    role = executor(root, fake_openai)
    for out, references in (("first.md", [ASSET]), ("second.md", [notes, "assets/"])):
        task = assignment(root, f"runs/{RUN}/workspace/ANALYZING/{out}", references=references)
        signal = role.execute_task(task.model_copy(update={"spec": kept}))
        assert signal.status == "COMPLETED", signal.error
    first, second = (prompt_of(body) for body in fake_openai.requests)
    shared = first.index("## References")
    assert "## The run's sources" in first[:shared] and first[:shared] == second[:shared]
    assert "up 14% from 2022" in first[:shared] and "2023-Q1" in first[:shared]
    assert first.count("up 14% from 2022") == 1 and second.count("2023-Q1,Germany") == 1
    assert "NOTES-ONLY-HERE" in second[shared:]
    assert not any("PRIVATE-FIGURE" in prompt for prompt in (first, second))
    assert all(body["stop"] == ["```text"] for body in fake_openai.requests)


@pytest.mark.parametrize("language", ["en", "ko"])
def test_the_sources_amounts_are_read_in_the_scale_words_of_the_language_written(
    root: Path, fake_openai: FakeOpenAI, language: str
) -> None:
    """The local model, writing English from a Korean report, read 1,200억 원 as 1.2 trillion
    won and 18만 대 as 18 million units: every writing call shows a source's amounts also in
    the confirmed language's scale words, computed by code (the run's sources and a task's
    references alike); written in Korean, the Korean amounts stand as they are and the English
    ones are read in Korean."""
    korean = "assets/korea_market_ko.md"
    (root / korean).write_text("# 시장\n\n시장 규모는 1,200억 원, 판매 대수는 약 18만 대였다.\n",
                               encoding="utf-8")  # fmt: skip
    spec = RequestSpec(request="A memo.", sources=[korean, ASSET], confirmed=True,
                       language=language)  # fmt: skip
    fake_openai.script(text(MEMO))
    task = assignment(root, f"runs/{RUN}/workspace/ANALYZING/first.md", references=[korean])
    signal = executor(root, fake_openai).execute_task(task.model_copy(update={"spec": spec}))
    assert signal.status == "COMPLETED", signal.error
    prompt = prompt_of(fake_openai.requests[0])
    english = ("1,200억 원 (= 120 billion won)", "18만 대 (= 180,000 units)")
    korean_reading = "€18.5 billion (= 185억 유로)"
    if language == "en":
        assert all(reading in prompt for reading in english) and korean_reading not in prompt
    else:
        assert "1,200억 원, 판매" in prompt and "(= 120 billion" not in prompt
        assert korean_reading in prompt


@pytest.mark.parametrize("seed", range(8))
def test_a_long_reference_is_cut_to_the_parts_that_bear_on_the_task(seed: int) -> None:
    """A file too long for its share keeps its first block, the blocks the task's words rank
    highest wherever they lie, then the earliest others, in its own order with each gap marked,
    within the share; a file the words do not touch is cut to its start as before."""
    rng = random.Random(seed)
    filler = [f"Paragraph {n} on {rng.choice(['wine', 'cheese', 'ferries'])} in region {n}. " * 3
              for n in range(rng.randint(30, 80))]  # fmt: skip
    needle = "Cargo e-bike sales in Germany rose 38% in 2023."
    filler.insert(rng.randint(5, len(filler)), needle)
    text = "# Annual review\n\n" + "\n\n".join(filler) + "\n"
    share = rng.randint(150, 400)
    kept, parts = bearing_parts(text, share, "Which market for cargo e-bikes in Germany?")
    assert parts and needle in kept and kept.startswith("# Annual review\n\n")
    assert estimate_tokens(kept) <= share and "[…]" in kept
    blocks = [block for block in kept.split("\n\n") if block.strip() and block.strip() != "[…]"]
    assert blocks == sorted(blocks, key=text.index)  # the file's own order
    start, by_start = bearing_parts(text, share, "quarterly tax filings of Norway")
    assert not by_start and start == cut_to_tokens(text, share)


def test_a_task_reads_the_parts_of_a_large_source_that_bear_on_it(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """A source too long for a working document's share is shown in the parts its purpose and
    the request bear on, wherever in the file they lie, and the prompt says so."""
    out = f"runs/{RUN}/workspace/ANALYZING/first.md"
    filler = [f"Section {n}: ferry timetables of harbour {n} in winter. " * 4 for n in range(900)]
    filler.insert(700, "Leasing offers reached 12% of new e-bike sales in Germany in 2023.")
    (root / "assets" / "annual.md").write_text("# Annual\n\n" + "\n\n".join(filler) + "\n",
                                               encoding="utf-8")  # fmt: skip
    task = assignment(root, out, references=["assets/annual.md"])
    task = task.model_copy(update={"task": task.task.model_copy(
        update={"task_purpose": "What do the sources say of leasing offers for e-bikes?"})})
    fake_openai.script(text(MEMO))
    signal = executor(root, fake_openai).execute_task(task)
    assert signal.status == "COMPLETED", signal.error
    prompt = prompt_of(fake_openai.requests[0])
    assert "Leasing offers reached 12%" in prompt and "harbour 899" not in prompt
    assert "[parts: only the parts of this file that bear on the task fit" in prompt


FACTS = (
    "Total revenue went from 2,000 EUR million in 2023Q1 to 2,150 EUR million in 2023Q4, "
    "+7.50 % (assets/quarterly_revenue.csv rows 2–9)",
    "Germany has the largest revenue, 6,900 EUR million (assets/quarterly_revenue.csv rows 2–5)",
)


def working(path: str, text_: str) -> Source:
    """A run's working document as the deliverable reads it."""
    return Source(path=path, text=text_, cut=False)


def test_extension_topics_are_the_facts_not_stated_then_the_working_sections_not_covered() -> None:
    """A fact whose figures the analysis states (with or without thousands separators) is no
    topic, nor is a one-word heading, an asset's heading or a heading already written."""
    strategy = working(f"runs/{RUN}/workspace/STRATEGIZING/strategy.md",
                       "# Strategy\n\n## Commuter demand in Germany\n\nText.\n\n## Sources\n\n"
                       "- a\n\n### **Leasing offers and margins**\n\nText.\n")  # fmt: skip
    asset = working(ASSET, "## Market size and growth\n\nText.\n")
    analysis = "# Memo\n\n## Commuter demand in Germany\n\nGermany: 6900 EUR million.\n"
    topics = extension_topics(analysis, FACTS, [asset, strategy])
    assert topics == [FACTS[0], "Leasing offers and margins"]
    assert extension_topics(analysis + "Revenue rose 7.50 %.", FACTS, [strategy]) == [
        "Leasing offers and margins"
    ]


def test_a_short_deliverable_is_extended_a_section_per_topic_it_lacks(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """Far shorter than asked, the analysis gets a section on each working document's section
    it lacks, named in the note (asked only to "write the sections it lacks", a small model
    wrote its first ones again), at most MAX_EXTENSIONS, then the verdict."""
    strategy = f"runs/{RUN}/workspace/STRATEGIZING/strategy.md"
    (root / strategy).parent.mkdir(parents=True, exist_ok=True)
    sections = ("## Commuter demand in Germany\n\nStrong.\n\n"
                "## Leasing offers and margins\n\nGrowing.\n\n## Battery costs ahead\n\nRising.\n")
    (root / strategy).write_text(f"# Strategy\n\n{sections}", encoding="utf-8")
    out = f"outputs/{RUN}/memo.md"
    first = "## Leasing offers and margins\n\nLeasing is 12% of sales (source: `x.md`).\n"
    second = "## Battery costs ahead\n\nCells cost more each year (source: `x.md`).\n"
    fake_openai.script(text(MEMO), text(first), text(second), text(VERDICT))
    signal = executor(root, fake_openai).execute_task(
        assignment(root, out, phase="GENERATING_OUTPUT", references=[ASSET, strategy])
    )
    assert signal.status == "COMPLETED", signal.error
    _, one, two, verdict = fake_openai.requests
    assert MAX_EXTENSIONS == 2 and verdict["response_format"]["type"] == "json_schema"
    notes = [str(body["messages"][-1]["content"]) for body in (one, two)]
    assert "section, under a `##` heading of its own, of about 233 words on this: Commuter" in (
        notes[0]
    )
    # Looked for again: the first section covered leasing, so the second is on batteries.
    assert "on this: Battery costs ahead" in notes[1]
    assert two["messages"][2]["content"].count("## Leasing offers and margins") == 1
    memo = (root / out).read_text("utf-8")
    assert "Leasing is 12% of sales" in memo and "Cells cost more" in memo


def test_a_deliverable_near_its_length_is_not_extended_and_titled_from_the_request(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """An analysis near the words asked makes no extension call; under the task's name code
    gave it, the deliverable takes its title from the request instead."""
    out = f"outputs/{RUN}/memo.md"
    sentence = "Germany leads the European market with €6.9 billion of revenue in 2023. "
    # Paragraphs of their own (said twice, a paragraph is said once), every figure traced.
    body = "\n\n".join(f"## Point {n}\n\nOn point {'ABCDEFGH'[n]}: " + sentence * 6
                       for n in range(8))  # fmt: skip
    fake_openai.script(text(body), text(VERDICT))
    signal = executor(root, fake_openai).execute_task(
        assignment(root, out, phase="GENERATING_OUTPUT")
    )
    assert signal.status == "COMPLETED", signal.error
    assert fake_openai.count == 2  # the analysis and the verdict: nothing to extend
    memo = (root / out).read_text("utf-8")
    assert memo.startswith("# Write a market-entry memo for the board\n")
    assert "# Market memo" not in memo


def test_the_deliverable_reads_a_bounded_share_of_its_references() -> None:
    """8,000 tokens of references on a small window, a quarter of a larger one, never more than
    the paste cap: a whole large table is not read again by the deliverable."""
    assert deliverable_paste(16384) == 8000 and deliverable_paste(131072) == 32768
    assert deliverable_paste(2_000_000) == 100_000


def test_a_document_never_repeats_its_prompts_instructions_or_our_markers(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """Lines a small model copies from its instructions (the length asked) or from a working
    document it read (a cut note, a parts marker) are not part of what it wrote."""
    out = f"runs/{RUN}/workspace/ANALYZING/echo.md"
    answer = (
        "## Revenue\n\nGermany leads with €6.9 billion (source: `assets/x.md`).\n\n"
        "About 400 words (at most 460). Stop when the document is complete; never repeat a "
        "section to fill the length.\n\n"
        # the local model's copy, without its first word
        "400 words (at most 460). Stop when the document is complete; never repeat a "
        "section to fill the length.\n\n"
        "*[Cut here: the text ran past its budget of about 400 words.]*\n\n"
        "[parts: only the parts of this file that bear on the task fit; […] marks what is not "
        "shown]\n\nFrance grew fastest (source: `assets/x.md`).\n"
    )
    fake_openai.script(text(answer))
    signal = executor(root, fake_openai).execute_task(assignment(root, out))
    assert signal.status == "COMPLETED", signal.error
    written = (root / out).read_text("utf-8")
    assert "€6.9 billion" in written and "France grew fastest" in written
    assert "400 words" not in written and "Cut here" not in written
    assert "[parts:" not in written


def test_a_single_shot_assembly_plan_is_written_by_code_without_a_call(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """Code assembles a single-shot model's deliverable, so code writes the plan it follows:
    no call; the plan says so, and names the parts, the length, the files kept and left out."""
    out = f"runs/{RUN}/workspace/GENERATING_OUTPUT/assembly_plan.md"
    gone = FileSet(files=["assets/old.md"], reading=Reading(phrase="not the old file"))
    for kind, length, words in (("memo", None, "about 1,000 words (the default for a memo)"),
                                ("brief", 300, "about 300 words,")):  # fmt: skip
        spec = RequestSpec(request="A memo.", deliverable=kind, length_words=length, confirmed=True,
                           sources=[ASSET, CSV, "assets/old.md"], left_out=[gone],
                           audience="the board")  # fmt: skip
        task = assignment(root, out, phase="GENERATING_OUTPUT").model_copy(update={"spec": spec})
        signal = executor(root, fake_openai).execute_task(task)
        assert signal.status == "COMPLETED", signal.error
        plan = (root / out).read_text("utf-8")
        assert plan.startswith("# Market memo\n") and "Written by code" in plan
        assert f"A {kind} in English, {words}" in plan and "for the board" in plan
        assert "Executive summary" in plan and "Recommendation" in plan
        assert f"`{ASSET}`, `{CSV}`" in plan and "- `assets/old.md`" in plan
        assert "Charts: none asked." in plan
    assert fake_openai.requests == []
    # The deliverable's analysis does not read it: code follows it, and a small model wrote
    # the parts code adds (summary, recommendation, references) into its analysis again.
    # Short: continued twice, a section on each of the two first facts computed from the CSV.
    fake_openai.script(text(MEMO), text(EXTRA), text(EXTRA.replace("2027", "2030")), text(VERDICT))
    published = assignment(root, f"outputs/{RUN}/memo.md", phase="GENERATING_OUTPUT",
                           references=[ASSET, out]).model_copy(update={"spec": spec})  # fmt: skip
    assert executor(root, fake_openai).execute_task(published).status == "COMPLETED"
    assert not any("Written by code" in prompt_of(body) for body in fake_openai.requests)
    # Another working document of that phase (a section a model's plan drafts) is the model's.
    asked = fake_openai.count
    fake_openai.script(text(MEMO))
    drafted = assignment(root, f"runs/{RUN}/workspace/GENERATING_OUTPUT/outline.md",
                         phase="GENERATING_OUTPUT").model_copy(update={"spec": spec})  # fmt: skip
    assert executor(root, fake_openai).execute_task(drafted).status == "COMPLETED"
    assert fake_openai.count == asked + 1


def test_a_working_document_does_not_read_twice_what_the_runs_sources_show_in_part(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """A table too long for the run's sources is shown there in its parts bearing on the
    request; a working document does not paste it again (the deliverable may, in its larger
    share)."""
    rows = [f"2023-{n:04d},Germany,{1000 + n},{200 + n},12.5" for n in range(3000)]
    header = "quarter,country,revenue,units,share\n"
    (root / "assets" / "long.csv").write_text(header + "\n".join(rows) + "\n", encoding="utf-8")
    spec = RequestSpec(request="A memo on revenue.", sources=["assets/long.csv"], confirmed=True)
    fake_openai.script(text(MEMO))
    out = f"runs/{RUN}/workspace/ANALYZING/first.md"
    task = assignment(root, out, references=["assets/long.csv"]).model_copy(update={"spec": spec})
    signal = executor(root, fake_openai).execute_task(task)
    assert signal.status == "COMPLETED", signal.error
    prompt = prompt_of(fake_openai.requests[0])
    assert prompt.count("### `assets/long.csv`") == 1 and "2023-0000,Germany" in prompt


def test_the_first_analysis_is_given_its_sections_and_an_end(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """Phase 0's first analysis is told its sections: one per source file it reads, then what
    the request needs, each once, then stop; other working documents choose their own."""
    fake_openai.script(text(MEMO), text(MEMO))
    role = executor(root, fake_openai)
    request = f"runs/{RUN}/request.md"
    (root / request).write_text("A memo.\n", encoding="utf-8")
    first = assignment(root, f"runs/{RUN}/workspace/ANALYZING/first_analysis.md",
                       references=[ASSET, CSV, request])  # fmt: skip
    first = first.model_copy(update={"phase": first.phase.model_copy(update={"phase_id": "P0"})})
    later = assignment(root, f"runs/{RUN}/workspace/ANALYZING/later.md", references=[ASSET])
    for task in (first, later):
        assert role.execute_task(task).status == "COMPLETED"
    told = prompt_of(fake_openai.requests[0])
    assert (f"then stop:\n  - ## {ASSET}\n  - ## {CSV}\n  - ## What the request needs from them"
            in told)  # fmt: skip
    assert "then stop:" not in prompt_of(fake_openai.requests[1])


@pytest.mark.parametrize(("code", "named"), [("ko", "Korean (한국어)"), ("en", "English"),
                                             ("fr", "French (프랑스어)")])  # fmt: skip
def test_every_writing_call_names_the_language_to_write_in(
    root: Path, fake_openai: FakeOpenAI, code: str, named: str
) -> None:
    """The confirmed language is named in the task part of the analysis (in its rules and in its
    last line) and the verdict: a small model asked for "the language of the request" wrote a
    Korean request's memo in English."""
    spec = RequestSpec(request="한국의 1인당 GDP 메모", language=code, confirmed=True,
                       sources=[ASSET])  # fmt: skip
    # English where Korean was confirmed is rewritten once (the answer scripted: English again),
    # and so is the English verdict (scripted: in Korean, every figure kept)
    rewrite = [text(MEMO + "\n" + EXTRA)] if code == "ko" else []
    korean = json.dumps({"executive_summary": "2023년 독일 매출은 €6.9 billion으로 가장 크다.",
                         "recommendation": "리스 상품으로 독일에 먼저 진출한다.",
                         "reasons": ["독일 시장이 가장 크다 (€6.9 billion).",
                                     "리스는 판매의 12%이다."]})  # fmt: skip
    again = [text(korean)] if code == "ko" else []
    fake_openai.script(text(MEMO), text(EXTRA), *rewrite, text(VERDICT), *again)
    published = assignment(root, f"outputs/{RUN}/memo.md", phase="GENERATING_OUTPUT")
    signal = executor(root, fake_openai).execute_task(published.model_copy(update={"spec": spec}))
    assert signal.status == "COMPLETED", signal.error
    analysis, _extension, *rewritten, verdict = fake_openai.requests[: 4 if code == "ko" else 3]
    assert [f"Write the same document in {named}" in prompt_of(r) for r in rewritten] == (
        [True] if code == "ko" else []
    )
    assert [f"each value written in {named}" in prompt_of(r) for r in fake_openai.requests[4:]] == (
        [True] if code == "ko" else []
    )
    assert f"- Write it in {named}, whatever the language of the references." in prompt_of(analysis)
    # and last, after the references and the task: a small model follows what it read last
    closing = prompt_of(analysis).rstrip().rsplit("\n\n", 1)[-1]
    assert closing.startswith(f"Now write the document in markdown, in {named}.")
    assert f"Write in {named}." in prompt_of(verdict)


@pytest.mark.parametrize(
    "heading",
    [f"## {ASSET}", "### `assets/Market_Report_2024.md`", "## **market_report_2024.md**",
     "#### First analysis", "## First Analysis:", "## Publish the deliverable"],
)  # fmt: skip
def test_the_deliverable_drops_the_frame_copied_from_working_documents(heading: str) -> None:
    """A heading that is a source's path or file name, a working document's title or the
    task's name goes and its text stays; the first analysis's section on what the request
    needs goes whole, down to the next heading of its level; the title and any other heading
    stay."""
    sources = [Source(path=ASSET, text="# Report\n"),
               Source(path=f"runs/{RUN}/workspace/ANALYZING/first_analysis.md",
                      text="# First analysis\n\n## x\n")]  # fmt: skip
    analysis = (f"# Memo\n\n{heading}\n\nGermany leads with €6.9 billion.\n\n"
                f"### {FIRST_ANALYSIS_END}\n\nThe request asks for a memo.\n\n"
                "#### Its charts\n\nOne chart.\n\n"
                "### Risks in the market report\n\nBatteries cost more.\n")  # fmt: skip
    kept = without_scaffolding(analysis, sources, ["Publish the deliverable"])
    assert kept == ("# Memo\n\nGermany leads with €6.9 billion.\n\n"
                    "### Risks in the market report\n\nBatteries cost more.\n")  # fmt: skip
    assert without_scaffolding("# Memo\n\n## Revenue\n\nText.\n", sources) == (
        "# Memo\n\n## Revenue\n\nText.\n"
    )


def test_a_section_written_without_a_blank_line_under_its_heading_keeps_its_content() -> None:
    """"### Germany" with its list right below it is a section, not an empty heading (the local
    model's facts document lost every section that way, and the run failed as empty)."""
    written = ("# Extract revenue\n\n## Total revenue by region\n\n"
               "### Germany (2023Q4)\n- Revenue: 1,585 EUR million\n\n"
               "### France (2023Q4)\n- Revenue: 565 EUR million\n\n"
               "## Empty\n\n## Next\n\nText.\n")  # fmt: skip
    kept = without_repeats(written)
    assert "- Revenue: 1,585 EUR million" in kept and "- Revenue: 565 EUR million" in kept
    assert "## Empty" not in kept and content_words(kept) == 11
