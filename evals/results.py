"""Result files, one per label (evals/results/<label>.json), and what the machine was."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.cases import REPO

RESULTS = REPO / "evals" / "results"
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def check_label(label: str) -> str:
    """A label that is safe as a file name, else ValueError."""
    if not _LABEL.match(label):
        raise ValueError(f"label {label!r}: use letters, digits, '.', '_' or '-'")
    return label


def _first(path: str, key: str) -> str | None:
    try:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine() -> dict[str, Any]:
    """Cores, CPU, memory and system of this machine."""
    memory = _first("/proc/meminfo", "MemTotal")
    return {
        "cores": os.cpu_count(),
        "cpu": _first("/proc/cpuinfo", "model name") or platform.processor() or None,
        "memory_gb": round(int(memory.split()[0]) / 1024**2, 1) if memory else None,
        "system": platform.platform(),
        "python": platform.python_version(),
    }


def revision(exe: Path) -> dict[str, Any]:
    """The checkout an executable was installed from (…/.venv/bin/multiverse) and its commit."""
    found: dict[str, Any] = {"executable": str(exe)}
    venv = exe.absolute().parent.parent
    checkout = venv.parent if (venv / "pyvenv.cfg").is_file() else None
    if checkout is None:
        return found

    def git(*args: str) -> str | None:
        done = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True,
                              text=True, check=False)  # fmt: skip
        return done.stdout.strip() if done.returncode == 0 else None

    found["checkout"] = str(checkout)
    found["commit"] = git("rev-parse", "--short", "HEAD")
    changed = git("status", "--porcelain", "--untracked-files=no")
    # Uncommitted changes are part of what ran (an editable install runs the work tree).
    found["uncommitted_changes"] = bool(changed) if changed is not None else None
    return found


def now() -> str:
    """This moment in UTC, to the second."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def load(label: str) -> dict[str, Any]:
    """The result file of a label, or an empty one."""
    path = RESULTS / f"{check_label(label)}.json"
    if not path.is_file():
        return {"label": label, "cases": {}}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def save(label: str, case: dict[str, Any]) -> Path:
    """Put one case's result into its label's file (replacing that case's earlier result)."""
    data = load(label)
    data["cases"][case["case"]] = case
    data["updated"] = now()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{label}.json"
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)  # a reader never sees half a file
    return path


def load_all() -> dict[str, dict[str, Any]]:
    """Every label's results."""
    return {p.stem: load(p.stem) for p in sorted(RESULTS.glob("*.json"))}
