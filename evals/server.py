"""The local model server: is it answering, and if not, start it with the shared setup script."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from evals.cases import REPO

TOOLS_ENV = "LOCAL_MODEL_TOOLS"
DEFAULT_TOOLS = REPO.parent / "shared" / "tools" / "local-model"


class ServerUnavailable(Exception):
    """The local model server does not answer and could not be started."""


def _get(url: str, timeout: float = 5.0) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            data = json.loads(answer.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def served_models(api_base: str) -> list[str] | None:
    """The model ids the server lists at /models, or None when it does not answer."""
    data = _get(api_base.rstrip("/") + "/models")
    if data is None:
        return None
    return [str(m.get("id") or m.get("name")) for m in data.get("data") or data.get("models") or []]


def describe(api_base: str) -> dict[str, Any]:
    """What the server says of itself (llama.cpp's /props: alias, quantisation, build, and the
    context each slot holds)."""
    root = api_base.rstrip("/").removesuffix("/v1")
    props = _get(root + "/props") or {}
    return {
        "api_base": api_base,
        "models": served_models(api_base),
        "alias": props.get("model_alias"),
        "quantisation": props.get("model_ftype"),
        "build": props.get("build_info"),
        "slots": props.get("total_slots"),
        "context": (props.get("default_generation_settings") or {}).get("n_ctx"),
    }


def tools_dir() -> Path:
    """Where setup.sh lives: $LOCAL_MODEL_TOOLS, else ../shared/tools/local-model."""
    return Path(os.environ.get(TOOLS_ENV) or DEFAULT_TOOLS)


def ensure_server(api_base: str, alias: str) -> None:
    """Return once `alias` is served at api_base, starting the server if nothing answers."""
    models = served_models(api_base)
    if models is None:
        script = tools_dir() / "setup.sh"
        if not script.is_file():
            raise ServerUnavailable(
                f"no server answers at {api_base} and {script} does not exist "
                f"(set {TOOLS_ENV} to the folder holding setup.sh)"
            )
        print(f"eval: no server at {api_base}; starting it with {script} (first run builds it)")
        done = subprocess.run(["bash", str(script)], check=False)
        models = served_models(api_base)
        if models is None:
            raise ServerUnavailable(
                f"{script} exited with {done.returncode} and nothing answers at {api_base}; "
                "see its log under $LOCAL_MODEL_DIR (default ~/.cache/multiverse-local-model)"
            )
    if alias not in models:
        raise ServerUnavailable(f"{api_base} serves {models}, not {alias}")
