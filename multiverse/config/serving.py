"""How a tier is served beyond the mapping's own keys: its model's provider, an external
command, or remote workers (a leaf: it imports no other module of the configuration).

- Providers: which litellm provider a model name belongs to and which variable holds its key,
  and how much work overlaps when the mapping does not say: calls in flight to a model, and runs.
- A tier served by an external command (SPEC §11, seed 001 §17): the presets of known agent
  CLIs, and how one session of such a command is started and bounded.
- Where a tier's steps run when not in the daemon's process: `remote:` of a tier (issue 28). A
  tier that says `remote: {broker: redis://host:6379/0, queue: NAME}` has its Executor steps
  done by a `multiverse worker` serving that queue, on this machine or another. Redis is the
  broker and also carries the files and the results (content-addressed), so it is the only
  service both sides need; RabbitMQ is not supported (the files would need a second store).
"""

from __future__ import annotations

import ipaddress
import shutil
from collections.abc import Iterable
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Provider prefix → env vars litellm reads its key from (the first is the one we name).
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "text-completion-openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "codestral": ("CODESTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "cohere": ("COHERE_API_KEY", "CO_API_KEY"),
    "cohere_chat": ("COHERE_API_KEY", "CO_API_KEY"),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY", "OR_API_KEY"),
    "together_ai": ("TOGETHERAI_API_KEY", "TOGETHER_AI_API_KEY", "TOGETHER_API_KEY"),
    "azure": ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY"),
    "azure_ai": ("AZURE_AI_API_KEY",),
    "perplexity": ("PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY"),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY"),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "nvidia_nim": ("NVIDIA_NIM_API_KEY",),
    "sambanova": ("SAMBANOVA_API_KEY",),
    "huggingface": ("HUGGINGFACE_API_KEY", "HF_TOKEN"),
}
KEYLESS_PROVIDERS = frozenset(
    {"ollama", "ollama_chat", "lm_studio", "vllm", "hosted_vllm", "llamafile"}
)
# With their own api_base these speak to any OpenAI-compatible server, which may need no key.
OPENAI_COMPATIBLE = frozenset({"openai", "text-completion-openai"})
# The hosts a provider's own key may be sent to when a tier names them in api_base.
OWN_HOSTS: dict[str, tuple[str, ...]] = {
    "openai": ("api.openai.com",),
    "text-completion-openai": ("api.openai.com",),
    "anthropic": ("api.anthropic.com",),
    "gemini": ("generativelanguage.googleapis.com",),
    "google": ("generativelanguage.googleapis.com",),
    "mistral": ("api.mistral.ai",),
    "groq": ("api.groq.com",),
    "deepseek": ("api.deepseek.com",),
    "xai": ("api.x.ai",),
    "openrouter": ("openrouter.ai",),
    "together_ai": ("api.together.xyz",),
    "fireworks_ai": ("api.fireworks.ai",),
    "deepinfra": ("api.deepinfra.com",),
    "cerebras": ("api.cerebras.ai",),
    "perplexity": ("api.perplexity.ai",),
}
# Bare model names litellm routes without a prefix.
BARE_PREFIXES = (("gpt-", "openai"), ("chatgpt-", "openai"), ("o1", "openai"), ("o3", "openai"),
                 ("o4", "openai"), ("claude", "anthropic"), ("command-", "cohere"))  # fmt: skip


def provider_of(model: str) -> str:
    """The litellm provider of a model name ("" when it cannot be told)."""
    if "/" in model:
        return model.split("/", 1)[0].strip().lower()
    bare = model.lower()
    return next((provider for prefix, provider in BARE_PREFIXES if bare.startswith(prefix)), "")


def own_host(model: str, api_base: str) -> bool:
    """Whether `api_base` is the provider's own host, where its usual key belongs."""
    host = (urlsplit(api_base.strip()).hostname or "").lower()
    return host in OWN_HOSTS.get(provider_of(model), ())


LOCAL_CONCURRENCY = 4  # calls in flight to a local server (a llama.cpp server with 1 slot: 1)
REMOTE_CONCURRENCY = 8  # calls in flight to a remote provider
OFFLINE_PARALLEL_RUNS = 4  # runs at once when no tier calls a model
REMOTE_PARALLEL_RUNS = 8  # at least this many runs at once when a model is remote


def is_remote(model: str, api_base: str | None) -> bool:
    """Whether the model is served by a remote provider rather than this machine or network."""
    if not api_base:
        return provider_of(model) not in KEYLESS_PROVIDERS
    host = (urlsplit(api_base.strip()).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return True  # a name: not resolved here
    return not (address.is_loopback or address.is_private or address.is_link_local)


def default_concurrency(remote: bool) -> int:
    """Calls in flight at once to a model whose tier does not set `concurrency`."""
    return REMOTE_CONCURRENCY if remote else LOCAL_CONCURRENCY


def default_parallel_runs(endpoints: Iterable[tuple[bool, int]]) -> int:
    """Runs advanced at once when `daemon.max_parallel_runs` is not set, from each model tier's
    (remote, concurrency): none → 4 (today's offline default); a remote one → the largest
    concurrency, at least 8 (a run waits on its model most of the time); only local ones → the
    largest concurrency (more runs than the server serves at once would only queue)."""
    served = list(endpoints)
    if not served:
        return OFFLINE_PARALLEL_RUNS
    largest = max(concurrency for _, concurrency in served)
    if any(remote for remote, _ in served):
        return max(REMOTE_PARALLEL_RUNS, largest)
    return largest


Preset = Literal["claude-code", "codex", "gemini-cli"]
PROMPT = "{prompt}"
SESSION = "{session_id}"
DPS_VERSION = "rawp-dps-1.0"
GRACE_SECONDS = 5.0

PRESETS: dict[str, tuple[list[str], list[str]]] = {
    # preset: (the command, the arguments that end it: the prompt's place)
    "claude-code": (
        ["claude", "-p", "--output-format", "text", "--permission-mode", "acceptEdits",
         "--session-id", SESSION],
        [],
    ),
    "codex": (
        ["codex", "exec", "--skip-git-repo-check", "--sandbox", "workspace-write",
         "-c", 'approval_policy="never"'],
        ["-"],
    ),
    "gemini-cli": (
        ["gemini", "--approval-mode", "auto_edit"],
        ["-p", "Do what the instructions above (on standard input) say."],
    ),
}  # fmt: skip


class ProcessSpec(BaseModel):
    """How to start one session of a tier's command, and its limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: list[str] = Field(min_length=1)
    preset: Preset | None = None
    timeout_seconds: float = Field(gt=0)
    # A child that prints nothing on stdout or stderr for this long is stopped (None: never).
    no_output_timeout_seconds: float | None = Field(default=None, gt=0)
    # Environment variables passed through besides the basics and the provider keys.
    pass_env: list[str] = Field(default_factory=list)

    @property
    def name(self) -> str:
        """What the tier is called in logs and reports: the command's name."""
        return f"process:{self.argv[0]}"

    def prompt_on_stdin(self) -> bool:
        """Whether the prompt goes to standard input (no `{prompt}` argument)."""
        return not any(PROMPT in argument for argument in self.argv)

    def command_line(self, prompt: str, session_id: str) -> list[str]:
        """The argv of one session: `{prompt}` and `{session_id}` filled in."""
        return [
            argument.replace(SESSION, session_id).replace(PROMPT, prompt) for argument in self.argv
        ]

    def executable(self) -> str | None:
        """The command's absolute path if it can be found (on PATH or as a path), else None."""
        return shutil.which(self.argv[0])


def process_argv(command: list[str] | None, preset: Preset | None, args: list[str]) -> list[str]:
    """The argv a tier's `command` / `preset` / `args` describe (the command wins)."""
    if command:
        return [*command, *args]
    if preset is None:
        raise ValueError("a process tier needs a command or a preset")
    head, tail = PRESETS[preset]
    return [*head, *args, *tail]


REDIS_SCHEMES = ("redis://", "rediss://")
MIB = 1 << 20


class RemoteConfig(BaseModel):
    """The broker and queue a tier's steps are sent to, and the bounds of one remote step."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    # The Redis broker's URL (redis:// or rediss://): it carries the steps, files and results.
    broker: str = Field(min_length=1)
    # The Celery queue the tier's steps go to; `multiverse worker --queue NAME` serves it.
    queue: str = Field(default="multiverse", min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    # No worker took the step from the queue in this time: the step fails (retry redoes it).
    pickup_timeout_seconds: float = Field(default=120.0, gt=0)
    # A worker that has not said it is alive for this long is lost: the step is sent again.
    lost_after_seconds: float = Field(default=30.0, gt=0)
    # The whole time one step may take on a worker; the worker's broker settings derive from it.
    step_timeout_seconds: float = Field(default=3600.0, gt=0)
    # What may travel with one step: the files its role may read, together.
    max_context_bytes: int = Field(default=64 * MIB, gt=0)
    # What may come back from one step: the files its role wrote, together.
    max_result_bytes: int = Field(default=64 * MIB, gt=0)

    @field_validator("broker")
    @classmethod
    def _redis_only(cls, value: str) -> str:
        if not value.startswith(REDIS_SCHEMES):
            raise ValueError(
                "must be a Redis URL (redis://host:6379/0 or rediss://…): Redis carries the "
                "steps, their files and their results"
            )
        return value


def worker_visibility_seconds(step_timeouts: list[float]) -> float:
    """Redis's `visibility_timeout` for a worker serving steps that may take this long: past
    the longest, with a margin, so a step still running is never handed to a second worker."""
    return max(step_timeouts, default=3600.0) * 1.5 + 60


def worker_time_limit(step_timeouts: list[float]) -> float:
    """The hard time limit of one task on the worker: the longest step, and a grace to end."""
    return max(step_timeouts, default=3600.0) + 30
