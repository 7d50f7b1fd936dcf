"""Which litellm provider a model name belongs to and which variable holds its key, and how much
work overlaps when the mapping does not say: calls in flight to a model, and runs.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

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
