"""How much work overlaps when the mapping does not say: calls in flight to a model, and runs.

A remote provider serves many calls at once (its real bound is its rate limit, honoured by
`multiverse.rate_limits`); a server on this machine or network serves a few. Whether a model is
remote is read from the mapping alone (no name is resolved): an `api_base` whose host is
`localhost` or a loopback, private or link-local address is local, and so is a provider that
serves on this machine without an `api_base` (ollama, lm_studio, ...); any other host, a
provider's own included, is remote. A process tier is a command on this machine: local.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from multiverse.provider_keys import KEYLESS_PROVIDERS, provider_of

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
