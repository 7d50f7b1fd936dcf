"""The model-backed Executor (sdk adapter): a bounded tool-calling loop through the gateway.

ModelExecutor: the model-backed Executor role, sdk adapter (SPEC §10.6, §11, §12).

One task is done in the tier's executor mode (mode.py): a bounded tool-calling loop through
the gateway with the file tools the agent package is given, each confined by the tool layer;
or, for a model that cannot call tools, one written answer (single_shot.py) that code reads
the references into and writes out. The Orchestrator never knows which. The files are the
truth: the task is COMPLETED only if its output file exists at the end. Nothing escapes: every
failure (a model error, a broken configuration, our own bug) is a FAILED result signal.

What stays builtin, and why:
- `data_visualization` tool tasks are a specialised agent; the builtin one is deterministic.
  So is `web_search` without a search provider (its note says plainly that nothing was
  searched); with one, the model plans the research and answers from the fetched pages,
  every citation checked by code (executor.model.research).
- A single-shot model's assembly plan (`assembly_plan*.md`): code assembles its deliverable
  (executor.model.memo), so code writes the plan it follows.
- `summarize`: cheap and deterministic; a model call per catalog file would cost a call for
  every asset, guideline and output of every run.
- `simple_task` for the commands the builtin knows (list, convert, summarize, count) and the
  questions over a table it answers whole (the figure computed from the table, cited); any
  other request is answered by the model.

Escalation (SPEC §10.2): a task the model could not do (no output file, the loop's turns used
up, an answer still invalid after its repairs or running away) is done once more on the tier
the agent card escalates to, when another model serves it, logged and counted in the run's
usage. A budget, timeout or provider error fails at once (another tier would meet it too), and
so does the model's own FAILED report (it says what the task lacks, not that it could not try).

Also here: how the model-backed Executor works for a tier; one prompt in flight per run (SPEC
§4, §11). The SIMPLE_TASK replies the model writes are `executor.model.simple`'s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import structlog

from executor.builtin import (
    BuiltinExecutor,
    TaskError,
    close_published,
    in_outputs,
    is_known_command,
    relative,
    resolve_output,
    table_answer,
)
from executor.model.loop import (
    ApprovalBridge,
    LoopOutcome,
    clipped,
    final_word,
    gate_approvals,
    run_tool_loop,
    shell_policy,
)
from executor.model.prompt import (
    NoRoom,
    NotDone,
    TaskPrompt,
    active_instructions,
    facts_of,
    load_template,
    prompt_version,
    reference_facts,
    task_messages,
)
from executor.model.research import ModelResearch
from executor.model.simple import SimpleWriter
from executor.model.single_shot import SingleShot
from executor.search import WebResearch, fetch_allow_hosts
from executor.tools import (
    Approver,
    McpTool,
    Tool,
    ToolContext,
    ToolRegistry,
    WebSearchProvider,
    builtin_tools,
    task_mcp_tools,
)
from multiverse.agent_package import (
    AgentPackage,
    load_agent_package,
    role_package_dir,
    tiers_to_try,
)
from multiverse.config import RuntimeMapping, Tier, TierConfig
from multiverse.errors import ConfigError
from multiverse.gateway import (
    LlmCall,
    LlmError,
    ModelCalls,
    capability_failure,
    model_context_window,
    model_supports,
)
from multiverse.home import Home
from multiverse.models import asset_type
from multiverse.roles import ProducedFile, ResultSignal, TaskAssignment, ToolAssignment

log = structlog.get_logger(__name__)

WorkMode = Literal["tools", "single_shot"]
DEFAULT_CONTEXT_WINDOW = 8192

Supports = Callable[[str, str | None, str], bool]
WindowLookup = Callable[[str], int | None]


def resolve_executor_mode(tier: TierConfig, supports: Supports) -> WorkMode:
    """The tier's mode: as configured, else tools when `supports(model, api_base, "tools")`."""
    if tier.executor_mode != "auto":
        return tier.executor_mode
    return "tools" if supports(tier.model, tier.api_base, "tools") else "single_shot"


def context_window(tier: TierConfig, lookup: WindowLookup) -> int:
    """Tokens one call may hold: the tier's, else what litellm knows of the model, else 8192."""
    if tier.context_window is not None:
        return tier.context_window
    known = lookup(tier.model)
    return known if known is not None and known > 0 else DEFAULT_CONTEXT_WINDOW


PROMPT_IN_PROGRESS = "PROMPT_IN_PROGRESS"


class RunLocks:
    """A non-blocking lock per run_id; different runs never wait on each other."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._busy: set[str] = set()

    @contextmanager
    def hold(self, run_id: str) -> Iterator[bool]:
        """Yields True with the run's lock held, or False (holding nothing) if it is taken."""
        with self._guard:
            taken = run_id in self._busy
            if not taken:
                self._busy.add(run_id)
        if taken:
            yield False
            return
        try:
            yield True
        finally:
            with self._guard:
                self._busy.discard(run_id)

    def busy(self, run_id: str) -> bool:
        """Whether a prompt of this run is in flight now."""
        with self._guard:
            return run_id in self._busy


ROLE = "executor"
DELEGATED_TOOL_TYPES = ("web_search", "data_visualization")


def _failed(error: str) -> ResultSignal:
    return ResultSignal(status="FAILED", error=error)


class ModelExecutor:
    """The Executor through a model: a tool loop or one written answer per task; never raises."""

    def __init__(
        self,
        gateway: ModelCalls,
        mapping: RuntimeMapping,
        tier_config: TierConfig,
        home: Path,
        max_turns: int = 12,
        fallback: BuiltinExecutor | None = None,
        *,
        approver: Approver | None = None,
        web_search_provider: WebSearchProvider | None = None,
        web_research: WebResearch | None = None,
        tools: Mapping[str, Tool] | None = None,
        supports: Supports | None = None,
        window_lookup: WindowLookup | None = None,
        served: Mapping[Tier, TierConfig] | None = None,
        package_dir: Path | None = None,
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, not {max_turns}")
        self._gateway = gateway
        self._mapping = mapping
        self._tier = tier_config
        self._home = Path(home).resolve()
        self._max_turns = max_turns
        self._fallback = fallback or BuiltinExecutor()
        self._approver = approver
        self._search = web_search_provider
        self._research = web_research  # the configured search agent: research by the model
        self._tools = dict(tools) if tools is not None else builtin_tools()
        self._locks = RunLocks()
        self._supports = supports
        self._window_lookup = window_lookup or model_context_window
        self._served = dict(served or {})  # the model-backed tiers a task may escalate to
        self._package_dir = package_dir or role_package_dir(ROLE)

    @property
    def mode(self) -> WorkMode:
        """How this tier's tasks are done: a tool loop, or one written answer each."""
        return self._mode_of(self._tier)

    @property
    def window(self) -> int:
        """Tokens one call of this tier may hold."""
        return context_window(self._tier, self._window_lookup)

    def _mode_of(self, config: TierConfig) -> WorkMode:
        # litellm is loaded by the first question asked, not by building the crew.
        return resolve_executor_mode(config, self._supports or model_supports)

    def execute_task(self, assignment: TaskAssignment) -> ResultSignal:
        """Do one core task in the tier's mode; any failure is a FAILED signal."""
        run_id, task_id = assignment.run_id, assignment.task.task_id
        with self._locks.hold(run_id) as held:
            signal = self._guarded(assignment) if held else _refused(run_id, task_id)
        log.info("task_executed", run_id=run_id, task_id=task_id, executor="model",
                 status=signal.status, error=signal.error)  # fmt: skip
        return signal

    def execute_tool_task(self, assignment: ToolAssignment) -> ResultSignal:
        """Do one tool task: the specialised agents stay builtin; other types fail."""
        tool = assignment.tool_task
        with self._locks.hold(assignment.run_id) as held:
            if not held:
                return _refused(assignment.run_id, tool.tool_task_id)
            if tool.tool_type == "web_search" and self._research is not None:
                return self._researched(assignment, self._research)
            if tool.tool_type in DELEGATED_TOOL_TYPES:
                return self._fallback.execute_tool_task(assignment)
        known = ", ".join(DELEGATED_TOOL_TYPES)
        return _failed(f"tool type {tool.tool_type!r} is not available (available: {known})")

    def _researched(self, assignment: ToolAssignment, research: WebResearch) -> ResultSignal:
        def package() -> AgentPackage:
            return load_agent_package(self._package_dir, self._mapping)

        researcher = ModelResearch(self._gateway, self._tier, self.window, research, package,
                                   self._fallback.summarize)  # fmt: skip
        return researcher.execute(assignment)

    def summarize(self, path: Path) -> str:
        """The builtin extractive summary: cheap and deterministic, no call per catalog file."""
        return self._fallback.summarize(path)

    def simple_task(self, request: str, home: Path) -> str:
        """A SIMPLE_TASK reply: the builtin's for its exact commands, else the model's.

        Never raises and never declines: a model answers any request it is given.
        """
        if is_known_command(request):
            reply = self._fallback.simple_task(request, home)
            if isinstance(reply, str):
                return reply
        answered = table_answer(request, home)  # a question over a table: computed, cited
        if answered is not None:
            return answered
        try:
            package = load_agent_package(self._package_dir, self._mapping)
            tools = self._tools if self.mode == "tools" else None
            writer = SimpleWriter(self._gateway, self._tier, self.window, ROLE, tools)
            return writer.answer(request, home, package)
        except Exception as error:  # the reply is the only channel back to the user
            log.exception("model_simple_task_crashed")
            return f"The model executor could not do that: {type(error).__name__}: {error}\n"

    def _guarded(self, assignment: TaskAssignment) -> ResultSignal:
        try:
            return self._escalating(assignment)
        except LlmError as error:
            # Budget exceeded, transient faults exhausted, a timeout: "CODE: message".
            return _failed(str(error))
        except (TaskError, NotDone, NoRoom) as error:
            return _failed(str(error))
        except ConfigError as error:
            return _failed(f"the executor cannot be set up: {error}")
        except Exception as error:  # the contract: nothing escapes into the Orchestrator
            log.exception("model_task_crashed", run_id=assignment.run_id,
                          task_id=assignment.task.task_id)  # fmt: skip
            return _failed(f"model executor error: {type(error).__name__}: {error}")

    def _escalating(self, assignment: TaskAssignment) -> ResultSignal:
        """The task on the card's tier, then once on its escalation tier if the model could
        not do it there; the last tier's failure is raised."""
        if Path(assignment.home).resolve() != self._home:
            raise TaskError(f"the assignment's home {assignment.home} is not {self._home}")
        # Loaded on every task: an edited AGENT.md, card or mapping applies to the next task.
        package = load_agent_package(self._package_dir, self._mapping)
        target = resolve_output(self._home, assignment.run_id, assignment.task.output_path)
        start = package.tier
        configs = {**self._served, start: self._tier}
        tiers = tiers_to_try(package.card, start, configs)
        for tier in tiers:
            try:
                return self._task(assignment, package.on_tier(tier), configs[tier], target)
            except (NotDone, LlmError) as error:
                if tier is tiers[-1] or not _escalates(error):
                    raise
                self._gateway.escalated(ROLE, start.value, tiers[-1].value, str(error),
                                        assignment.run_id)  # fmt: skip
                # What the failed attempt left must not pass for the next tier's work.
                target.unlink(missing_ok=True)
        raise RuntimeError("no tier was tried")  # tiers_to_try always gives the start

    def _task(
        self, assignment: TaskAssignment, package: AgentPackage, config: TierConfig, target: Path
    ) -> ResultSignal:
        run_id, task_id = assignment.run_id, assignment.task.task_id
        left_out = assignment.spec.excluded() if assignment.spec is not None else set()
        if self._mode_of(config) == "single_shot":
            registry = self._registry(run_id, package, task_id, {}, left_out)
            window = context_window(config, self._window_lookup)
            SingleShot(self._gateway, config, window, ROLE).write(
                assignment, package, registry, target
            )
            return self._completed(assignment, target, registry, post_tool=False)
        # The MCP servers live as long as the task's tool loop, and no longer.
        with task_mcp_tools(self._mapping, package.card.forbidden_actions, self._home, run_id,
                            self._tools) as mcp:  # fmt: skip
            registry = self._registry(run_id, package, task_id, mcp, left_out)
            output = relative(self._home, target)
            call = self._first_call(assignment, package, registry, output, config)
            outcome = run_tool_loop(self._gateway, call, registry, self._max_turns,
                                    f"{run_id}:{task_id}")  # fmt: skip
        return self._signal(assignment, target, registry, outcome)

    def _registry(
        self,
        run_id: str,
        package: AgentPackage,
        task_id: str,
        mcp: Mapping[str, McpTool],
        left_out: set[str],
    ) -> ToolRegistry:
        approver = self._approver or ApprovalBridge(
            Home(self._home).run(run_id).root, run_id, task_id,
            self._mapping.daemon.approval_timeout_seconds,
        )  # fmt: skip
        context = ToolContext(
            home=self._home,
            run_id=run_id,
            **shell_policy(package.tools),
            approver=approver,
            web_search_provider=self._search,
            web_allow_hosts=fetch_allow_hosts(package.tools),
            left_out=frozenset(left_out or ()),
        )
        catalogue = gate_approvals(self._tools, package.tools, approver, mcp)
        allowed = [binding.tool for binding in package.tools.values()]
        return ToolRegistry(context, [*allowed, *mcp], catalogue)

    def _first_call(
        self,
        assignment: TaskAssignment,
        package: AgentPackage,
        registry: ToolRegistry,
        output_path: str,
        config: TierConfig,
    ) -> LlmCall:
        template = load_template()
        context = registry.context
        prompt = TaskPrompt(
            assignment=assignment,
            output_path=output_path,
            workspace=context.relative(context.workspace),
            outputs=context.relative(context.outputs),
            references=reference_facts(context, assignment.task.related_references),
            facts=facts_of(self._home, assignment),
        )
        return LlmCall(
            role=ROLE,
            agent_version=package.agent_version,
            prompt_version=prompt_version(package, template),
            scope=f"{assignment.run_id}:{assignment.task.task_id}:turn1",
            run_id=assignment.run_id,
            tier=package.tier.value,
            messages=task_messages(package, template, prompt),
            **config.call_fields(),
            max_tokens=config.max_tokens,
        )

    def _signal(
        self,
        assignment: TaskAssignment,
        target: Path,
        registry: ToolRegistry,
        outcome: LoopOutcome,
    ) -> ResultSignal:
        output = relative(self._home, target)
        if not outcome.finished:
            raise NotDone(
                f"tool loop did not finish in {outcome.turns} turns; "
                f"the model's last text: {clipped(outcome.text) or '(none)'}"
            )
        word = final_word(outcome.text)
        if word.failed is not None:
            return _failed(f"the model reported FAILED: {word.failed}")
        if not target.is_file():
            raise NotDone(
                f"the output file {output} does not exist after the tool loop; "
                f"the model's last text: {clipped(outcome.text) or '(none)'}"
            )
        return self._completed(assignment, target, registry, word.wants_visual)

    def _completed(
        self, assignment: TaskAssignment, target: Path, registry: ToolRegistry, post_tool: bool
    ) -> ResultSignal:
        output = relative(self._home, target)
        if not target.is_file():
            raise NotDone(f"the output file {output} does not exist")
        records: list[str] = []
        if in_outputs(self._home, assignment.run_id, target) and target.suffix.lower() == ".md":
            # Every number of a published memo traced; the ones found nowhere listed at its end.
            untraced, record = close_published(self._home, assignment.run_id, assignment.request,
                                               assignment.spec, target)  # fmt: skip
            log.info("numbers_traced", run_id=assignment.run_id, task_id=assignment.task.task_id,
                     untraced_numbers=untraced)  # fmt: skip
            records.append(relative(self._home, record))
        paths = [output, *sorted(registry.written_files - {output}), *records]
        outputs = [self._produced(assignment, path, path == output) for path in paths]
        post_tool = bool(assignment.task.post_tool_purpose.strip()) or post_tool
        return ResultSignal(
            status="COMPLETED",
            post_tool_required=post_tool,
            outputs=[item for item in outputs if item is not None],
        )

    def _produced(
        self, assignment: TaskAssignment, path: str, is_output: bool
    ) -> ProducedFile | None:
        real = self._home / path
        if not real.is_file():
            return None
        published = in_outputs(self._home, assignment.run_id, real)
        kind = asset_type(assignment.phase, is_output, published)
        return ProducedFile(path=path, asset_type=kind, summary=self._fallback.summarize(real))


def _escalates(error: NotDone | LlmError) -> bool:
    """Whether a failed attempt is the model's want of capability (a higher tier may do it)."""
    return isinstance(error, NotDone) or capability_failure(error)


def _refused(run_id: str, item_id: str) -> ResultSignal:
    log.warning("prompt_refused", run_id=run_id, item_id=item_id, reason=PROMPT_IN_PROGRESS)
    return _failed(
        f"{PROMPT_IN_PROGRESS}: a prompt of run {run_id} is already in flight; "
        f"{item_id} was refused, not queued"
    )


__all__ = [
    "PROMPT_IN_PROGRESS",
    "ModelExecutor",
    "RunLocks",
    "active_instructions",
    "clipped",
    "load_template",
]
