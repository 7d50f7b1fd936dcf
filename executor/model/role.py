"""ModelExecutor: the model-backed Executor role, sdk adapter (SPEC §10.6, §11, §12).

One task is a bounded tool-calling loop through the gateway with the file tools the agent
package is given, each confined by the tool layer. The files are the truth: the task is
COMPLETED only if its output file exists at the end. Nothing escapes: every failure (a model
error, a broken configuration, our own bug) is a FAILED result signal.

What stays builtin, and why:
- `web_search` and `data_visualization` tool tasks are specialised agents; the builtin ones
  are deterministic and say plainly what they cannot do offline.
- `summarize` and `simple_task`: cheap and deterministic; a model call per catalog file would
  cost a call for every asset, guideline and output of every run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import structlog

from executor.builtin.paths import TaskError, in_outputs, relative, resolve_output
from executor.builtin.role import BuiltinExecutor
from executor.model.approval import gate_approvals, shell_allow_list
from executor.model.loop import Completer, LoopOutcome, run_tool_loop
from executor.model.prompt import (
    TaskPrompt,
    load_template,
    prompt_version,
    reference_facts,
    task_messages,
)
from executor.model.runlock import PROMPT_IN_PROGRESS, RunLocks
from executor.model.verdict import clipped, final_word
from executor.tools.base import Approver, Tool, ToolContext, WebSearchProvider
from executor.tools.registry import ToolRegistry, builtin_tools
from multiverse.agent_package import AgentPackage, load_agent_package, role_package_dir
from multiverse.asset_types import asset_type
from multiverse.config import RuntimeMapping, TierConfig
from multiverse.contracts import ProducedFile, ResultSignal, TaskAssignment, ToolAssignment
from multiverse.errors import ConfigError
from multiverse.llm import LlmCall, LlmError

log = structlog.get_logger(__name__)

ROLE = "executor"
DELEGATED_TOOL_TYPES = ("web_search", "data_visualization")


def _failed(error: str) -> ResultSignal:
    return ResultSignal(status="FAILED", error=error)


class ModelExecutor:
    """The Executor through a model: a bounded tool loop per task; never raises."""

    def __init__(
        self,
        gateway: Completer,
        mapping: RuntimeMapping,
        tier_config: TierConfig,
        home: Path,
        max_turns: int = 12,
        fallback: BuiltinExecutor | None = None,
        *,
        approver: Approver | None = None,
        web_search_provider: WebSearchProvider | None = None,
        tools: Mapping[str, Tool] | None = None,
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
        self._tools = dict(tools) if tools is not None else builtin_tools()
        self._locks = RunLocks()

    def execute_task(self, assignment: TaskAssignment) -> ResultSignal:
        """Do one core task through the tool loop; any failure is a FAILED signal."""
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
            if tool.tool_type in DELEGATED_TOOL_TYPES:
                return self._fallback.execute_tool_task(assignment)
        known = ", ".join(DELEGATED_TOOL_TYPES)
        return _failed(f"tool type {tool.tool_type!r} is not available (available: {known})")

    def summarize(self, path: Path) -> str:
        """The builtin extractive summary: cheap and deterministic, no call per catalog file."""
        return self._fallback.summarize(path)

    def simple_task(self, request: str, home: Path) -> str:
        """The builtin answer to a SIMPLE_TASK: immediate commands need no model."""
        return self._fallback.simple_task(request, home)

    def _guarded(self, assignment: TaskAssignment) -> ResultSignal:
        try:
            return self._task(assignment)
        except LlmError as error:
            # Budget exceeded, transient faults exhausted, a timeout: "CODE: message".
            return _failed(str(error))
        except TaskError as error:
            return _failed(str(error))
        except ConfigError as error:
            return _failed(f"the executor cannot be set up: {error}")
        except Exception as error:  # the contract: nothing escapes into the Orchestrator
            log.exception("model_task_crashed", run_id=assignment.run_id,
                          task_id=assignment.task.task_id)  # fmt: skip
            return _failed(f"model executor error: {type(error).__name__}: {error}")

    def _task(self, assignment: TaskAssignment) -> ResultSignal:
        if Path(assignment.home).resolve() != self._home:
            raise TaskError(f"the assignment's home {assignment.home} is not {self._home}")
        # Loaded on every task: an edited AGENT.md or mapping applies to the next task.
        package = load_agent_package(role_package_dir(ROLE), self._mapping)
        target = resolve_output(self._home, assignment.run_id, assignment.task.output_path)
        registry = self._registry(assignment.run_id, package)
        call = self._first_call(assignment, package, registry, relative(self._home, target))
        scope = f"{assignment.run_id}:{assignment.task.task_id}"
        outcome = run_tool_loop(self._gateway, call, registry, self._max_turns, scope)
        return self._signal(assignment, target, registry, outcome)

    def _registry(self, run_id: str, package: AgentPackage) -> ToolRegistry:
        context = ToolContext(
            home=self._home,
            run_id=run_id,
            shell_allow=shell_allow_list(package.tools),
            approver=self._approver,
            web_search_provider=self._search,
        )
        catalogue = gate_approvals(self._tools, package.tools, self._approver)
        allowed = [binding.tool for binding in package.tools.values()]
        return ToolRegistry(context, allowed, catalogue)

    def _first_call(
        self,
        assignment: TaskAssignment,
        package: AgentPackage,
        registry: ToolRegistry,
        output_path: str,
    ) -> LlmCall:
        template = load_template()
        context = registry.context
        prompt = TaskPrompt(
            assignment=assignment,
            output_path=output_path,
            workspace=context.relative(context.workspace),
            outputs=context.relative(context.outputs),
            references=reference_facts(context, assignment.task.related_references),
        )
        return LlmCall(
            role=ROLE,
            agent_version=package.agent_version,
            prompt_version=prompt_version(package, template),
            scope=f"{assignment.run_id}:{assignment.task.task_id}:turn1",
            run_id=assignment.run_id,
            tier=package.tier.value,
            model=self._tier.model,
            api_base=self._tier.api_base,
            api_key_env=self._tier.api_key_env,
            messages=task_messages(package, template, prompt),
            max_tokens=self._tier.max_tokens,
            timeout_seconds=self._tier.timeout_seconds,
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
            return _failed(
                f"tool loop did not finish in {outcome.turns} turns; "
                f"the model's last text: {clipped(outcome.text) or '(none)'}"
            )
        word = final_word(outcome.text)
        if word.failed is not None:
            return _failed(f"the model reported FAILED: {word.failed}")
        if not target.is_file():
            return _failed(
                f"the output file {output} does not exist after the tool loop; "
                f"the model's last text: {clipped(outcome.text) or '(none)'}"
            )
        paths = [output, *sorted(registry.written_files - {output})]
        outputs = [self._produced(assignment, path, path == output) for path in paths]
        post_tool = bool(assignment.task.post_tool_purpose.strip()) or word.wants_visual
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


def _refused(run_id: str, item_id: str) -> ResultSignal:
    log.warning("prompt_refused", run_id=run_id, item_id=item_id, reason=PROMPT_IN_PROGRESS)
    return _failed(
        f"{PROMPT_IN_PROGRESS}: a prompt of run {run_id} is already in flight; "
        f"{item_id} was refused, not queued"
    )
