"""Benchmark of the process adapter: what a task costs beyond its script (SPEC §11).

Run: `.venv/bin/python bench/process_adapter.py [--repeats 30]`. A no-op script (`sh`: write
an empty file at MULTIVERSE_OUTPUT_PATH) serves the Executor tier. Measured, interleaved:
- direct: the script started with subprocess.run and the same environment (its own time);
- adapter: `ProcessExecutor.execute_task` from the call to its COMPLETED signal (spawn,
  process group, record file, log, DPS events, the output check and its catalog summary).
The overhead is the difference of the medians; target ≤ 50 ms.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import structlog

from executor.process import ProcessExecutor
from multiverse.config import TierConfig
from multiverse.home import Home, init_home
from multiverse.models import MajorStage, Phase, Task
from multiverse.roles import TaskAssignment

RUN = "run-20261123-000000-001"
SCRIPT = ': > "$MULTIVERSE_OUTPUT_PATH"'


def _assignment(root: Path, number: int) -> TaskAssignment:
    task = Task(task_id=f"P1-S01-T{number % 99 + 1:02d}", run_id=RUN, stage_id="P1-S01",
                task_name="No-op", task_purpose="Nothing.", execution_order=1,
                output_path=f"runs/{RUN}/workspace/ANALYZING/out-{number}.md")  # fmt: skip
    return TaskAssignment(
        home=str(root), run_id=RUN, request="Nothing.",
        phase=Phase(phase_id="P1", run_id=RUN, phase_name="ANALYZING"),
        stage=MajorStage(stage_id="P1-S01", run_id=RUN, phase_id="P1", stage_name="No-op",
                         execution_order=1),
        task=task,
    )  # fmt: skip


def measure(repeats: int) -> dict[str, float]:
    """Medians (ms) of the script alone and of the adapter's task, interleaved."""
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder) / "home")
        init_home(home)
        workspace = home.run(RUN).workspace
        (workspace / "ANALYZING").mkdir(parents=True)
        spec = TierConfig(command=["sh", "-c", SCRIPT], timeout_seconds=60).process_spec()
        assert spec is not None
        executor = ProcessExecutor(spec, home.root)
        env = {"PATH": os.environ.get("PATH", ""), "MULTIVERSE_OUTPUT_PATH": ""}
        direct, adapter = [], []
        for number in range(-1, repeats):  # -1: the warm-up, not kept
            env["MULTIVERSE_OUTPUT_PATH"] = str(workspace / f"direct-{number}.md")
            began = time.perf_counter()
            subprocess.run(["sh", "-c", SCRIPT], env=env, cwd=workspace, check=True,
                           stdin=subprocess.DEVNULL, capture_output=True)  # fmt: skip
            direct_ms = (time.perf_counter() - began) * 1000
            assignment = _assignment(home.root, number + 1)
            began = time.perf_counter()
            signal = executor.execute_task(assignment)
            adapter_ms = (time.perf_counter() - began) * 1000
            assert signal.status == "COMPLETED", signal.error
            if number >= 0:
                direct.append(direct_ms)
                adapter.append(adapter_ms)
    return {"direct": statistics.median(direct), "adapter": statistics.median(adapter)}


def main() -> None:
    """Print the medians and the overhead."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    result = measure(args.repeats)
    overhead = result["adapter"] - result["direct"]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {args.repeats} tasks")
    print(f"script alone (median):            {result['direct']:.1f} ms")
    print(f"adapter task to COMPLETED (median): {result['adapter']:.1f} ms")
    verdict = "✓" if overhead <= 50 else "✗"
    print(f"overhead:                          {overhead:.1f} ms (target ≤ 50 ms) {verdict}")


if __name__ == "__main__":
    main()
