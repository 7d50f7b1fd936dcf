"""`make check-agents`: a real agent CLI serving the Executor tier, by hand (not CI).

It installs the real Codex CLI (`@openai/codex` from the npm registry) into `.cache/agents/`
if it is not there, makes sure the local model server answers (`evals.server`), and runs one
Executor task through the `codex` preset pointed at that server (a custom model provider with
`wire_api = "responses"`), in a fresh home with the fixture assets. It prints what the adapter
reported: COMPLETED with the head of the file codex wrote, or the exact FAILED report — never
a hang (the tier's timeout and the no-output watchdog bound it).

Run: `make check-agents` (or `.venv/bin/python -m evals.agents [--timeout 900]`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evals.cases import REPO
from evals.mapping import LOCAL_ALIAS, LOCAL_API_BASE
from evals.server import ServerUnavailable, ensure_server
from executor.process import ProcessExecutor
from multiverse.config import TierConfig
from multiverse.home import Home, init_home
from multiverse.models import MajorStage, Phase, Task
from multiverse.roles import TaskAssignment

AGENTS = REPO / ".cache" / "agents"
CODEX = AGENTS / "node_modules" / ".bin" / "codex"
RUN = "run-20261123-000000-001"
ASSET = "market_report_2024.md"


def install_codex() -> Path:
    """The codex binary, installed from the npm registry on first use."""
    if not CODEX.exists():
        AGENTS.mkdir(parents=True, exist_ok=True)
        print(f"check-agents: installing @openai/codex into {AGENTS}")
        subprocess.run(["npm", "install", "--silent", "--prefix", str(AGENTS), "@openai/codex"],
                       check=True)  # fmt: skip
    return CODEX


def codex_tier(codex: Path, timeout: float) -> TierConfig:
    """The Executor tier: the codex preset on the local server, the binary by its path."""
    provider = (
        f'model_providers.local={{name="local",base_url="{LOCAL_API_BASE}",wire_api="responses"}}'
    )
    return TierConfig(
        preset="codex",
        args=["-c", "model_provider=local", "-c", provider, "-m", LOCAL_ALIAS],
        timeout_seconds=timeout,
        no_output_timeout_seconds=min(timeout, 300),
        pass_env=["CODEX_HOME"],
    )


def assignment(root: Path) -> TaskAssignment:
    """One ANALYZING task: summarise the market report into a file of the workspace."""
    task = Task(task_id="P1-S01-T01", run_id=RUN, stage_id="P1-S01",
                task_name="Market report summary",
                task_purpose="Summarise the market report's key figures in a short markdown note.",
                related_references=[f"assets/{ASSET}"], execution_order=1,
                output_path=f"runs/{RUN}/workspace/ANALYZING/report_summary.md")  # fmt: skip
    return TaskAssignment(
        home=str(root), run_id=RUN,
        request="Summarise the market report in assets/ in a few lines.",
        phase=Phase(phase_id="P1", run_id=RUN, phase_name="ANALYZING"),
        stage=MajorStage(stage_id="P1-S01", run_id=RUN, phase_id="P1",
                         stage_name="Read the report", execution_order=1),
        task=task,
    )  # fmt: skip


def main() -> int:
    """Run the check; exit 0 when the adapter reported (either way), 1 when it could not run."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    try:
        ensure_server(LOCAL_API_BASE, LOCAL_ALIAS)
        codex = install_codex()
    except (ServerUnavailable, subprocess.CalledProcessError, OSError) as error:
        print(f"check-agents: cannot run: {error}", file=sys.stderr)
        return 1
    folder = Path(tempfile.mkdtemp(prefix="mv-check-agents-"))
    home = Home(folder / "home")
    init_home(home)
    shutil.copy(REPO / "tests" / "fixtures" / "assets" / ASSET, home.assets / ASSET)
    (home.run(RUN).workspace / "ANALYZING").mkdir(parents=True)
    os.environ["CODEX_HOME"] = str(folder / "codex-home")
    (folder / "codex-home").mkdir()
    os.environ["PATH"] = f"{codex.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    spec = codex_tier(codex, args.timeout).process_spec()
    assert spec is not None
    print(f"check-agents: home {home.root}")
    print(f"check-agents: command {' '.join(spec.argv)}")
    began = time.monotonic()
    signal = ProcessExecutor(spec, home.root).execute_task(assignment(home.root))
    seconds = time.monotonic() - began
    print(f"check-agents: {signal.status} after {seconds:.0f} s")
    if signal.status == "COMPLETED":
        written = home.root / signal.outputs[0].path
        print(f"--- {signal.outputs[0].path} ---\n{written.read_text('utf-8')[:1500]}")
    else:
        print(f"report: {signal.error}")
    log = home.run(RUN).logs / "P1-S01-T01.log"
    print(f"log: {log} ({log.stat().st_size if log.exists() else 0} bytes)")
    print(f"events: {home.run(RUN).root / 'events.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
