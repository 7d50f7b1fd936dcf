"""The SIMPLE_TASK replies the model-backed Executor writes (SPEC §6.1): the files the request
names read in (confined like the read tools) and, where the tier calls tools, the read-only file
tools to look further; it is given no tool that writes, and the reply says the model wrote it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import structlog

from executor.builtin import named_paths, other_script
from executor.model.loop import clipped, run_tool_loop
from executor.model.prompt import MAX_PASTED_TOKENS, WRITER, load_template
from executor.model.references import (
    estimate_tokens,
    fit_sources,
    gather_sources,
    render_sources,
    room_for_references,
    writing_tokens,
)
from executor.model.single_shot import MAX_CONTINUATIONS
from executor.tools import Tool, ToolContext, ToolRegistry
from multiverse.agent_package import AgentPackage
from multiverse.config import TierConfig
from multiverse.gateway import (
    ChatMessage,
    LlmCall,
    LlmError,
    ModelCalls,
    repetition,
    unwrap_document,
)
from multiverse.spec import asked_words, languages_asked

log = structlog.get_logger(__name__)

SIMPLE = "simple_task.md"
READ_ONLY_TOOLS = ("list_directory", "read_file", "read_many_files", "glob", "search_file_content")
MAX_TURNS = 6
# A simple task belongs to no run; its tools write nothing, so no run's folder is ever touched.
NO_RUN = "run-00000000-000000-000"
TOOLS_NOTE = (
    "## Tools\n\nYou may look at the home's files with the read-only tools (list_directory, "
    "read_file, read_many_files, glob, search_file_content; paths relative to the home, e.g. "
    "assets/). Read what the request needs, then give the answer as your last message."
)


_SCRIPT_CODES = {"Hangul": "ko", "Japanese": "ja", "Han": "zh", "Cyrillic": "ru"}


def reply_language(request: str) -> str | None:
    """The language of a quick reply, which sizes its room: the one the request asks for,
    else the one its script says (a reply has no confirmed spec to say it); None: English or
    another Latin-script language."""
    asked = languages_asked(request)
    if len(asked) == 1:
        return asked.pop()
    return _SCRIPT_CODES.get(other_script("en", request) or "")


def simple_messages(request: str, home: Path, window: int, max_tokens: int) -> list[ChatMessage]:
    """The writer's role, then the request with the files it names fitted into the window."""
    sources = [
        source for source in gather_sources(home, named_paths(request))
        if source.note != "not found in the home"  # "e.g. notes.txt" names nothing real
    ]  # fmt: skip
    system = load_template(WRITER).body
    template = load_template(SIMPLE)
    own = estimate_tokens(system + template.render(request=request, references=""))
    room = min(MAX_PASTED_TOKENS, room_for_references(window, max_tokens, own))
    references = render_sources(fit_sources(sources, room))
    user = template.render(request=request.strip(), references=references)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class SimpleWriter:
    """Answers one SIMPLE_TASK request with the model; never raises."""

    gateway: ModelCalls
    tier: TierConfig
    window: int
    role: str
    # Where the tier calls tools: the read-only tools, so the model can look beyond the files
    # the request names (None: one written answer).
    tools: Mapping[str, Tool] | None = None

    def answer(self, request: str, home: Path, package: AgentPackage) -> str:
        """The reply (markdown), saying that the model wrote it; a failure is a reply too."""
        banner = f"> Written by the model `{self.tier.model}`."
        try:
            return f"{banner}\n\n{self._text(request, home.resolve(), package)}"
        except LlmError as error:
            return f"{banner} It could not answer: {error}\n"

    def _text(self, request: str, home: Path, package: AgentPackage) -> str:
        max_tokens = writing_tokens(asked_words([request]), self.tier.max_tokens,
                                    reply_language(request))  # fmt: skip
        texts = "\0".join(load_template(name).body for name in (WRITER, SIMPLE))
        call = LlmCall(
            role=self.role,
            agent_version=package.agent_version,
            prompt_version=f"{package.prompt_version}+simple@"
            f"{hashlib.sha256(texts.encode()).hexdigest()[:12]}",
            scope=f"simple:{hashlib.sha256(request.encode()).hexdigest()[:16]}",
            tier=package.tier.value,
            messages=simple_messages(request, home, self.window, max_tokens),
            **self.tier.call_fields(),
            max_tokens=max_tokens,
            # One written answer goes on where it was cut; a tool loop's turns are not joined.
            continuations=MAX_CONTINUATIONS if self.tools is None else 0,
        )
        if self.tools is not None:
            return self._with_tools(call, home)
        answer = self.gateway.complete(call)
        text = unwrap_document(answer.text)
        if answer.finish_reason == "length":
            # Still cut after its continuations: a loop is refused, an honest cut is said.
            loop = repetition(answer.text)
            if loop is not None:
                log.warning("simple_task_runaway", model=self.tier.model, why=loop)
                return f"The model looped ({loop}); no answer is given.\n"
            return (
                f"{text}\n[the answer was still unfinished after {answer.parts} part(s) of "
                f"{max_tokens} tokens; ask for less or raise the tier's max_tokens]\n"
            )
        return text

    def _with_tools(self, call: LlmCall, home: Path) -> str:
        """A bounded loop with the read-only tools; the model's last text is the reply."""
        context = ToolContext(home=home, run_id=NO_RUN)
        registry = ToolRegistry(context, READ_ONLY_TOOLS, self.tools)
        messages = [*call.messages[:-1], {
            "role": "user", "content": f"{call.messages[-1]['content']}\n\n{TOOLS_NOTE}",
        }]  # fmt: skip
        first = call.model_copy(update={"messages": messages})
        outcome = run_tool_loop(self.gateway, first, registry, MAX_TURNS, call.scope)
        if not outcome.finished:
            return (
                f"The model did not finish in {outcome.turns} turns; its last text: "
                f"{clipped(outcome.text) or '(none)'}\n"
            )
        return unwrap_document(outcome.text)


