"""Benchmark of the LLM gateway: its overhead per call, a cache hit, and CLI start-up.

Run: `.venv/bin/python bench/gateway.py`. Against the loopback fake OpenAI server of the tests:
the median latency of raw `litellm.completion` and of `Gateway.complete` (cache off), their
difference being the gateway's overhead; the CPU of a streamed answer, with litellm's logging
of each chunk off (as `load_litellm` sets it) and on; the median cache hit (without and with
the run's ledger); the median start time of `multiverse --help` and `multiverse status` (5 runs
each); and whether `import app.cli` imports litellm. Targets: overhead ≤ 1 ms, cache hit ≤ 2 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import structlog
from timing import median_ms  # bench/timing.py: the script's folder is on sys.path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from multiverse.gateway import Gateway, LlmCache, LlmCall, load_litellm
from multiverse.home import Home, init_home
from multiverse.logs import mask_processor

from fake_openai import FakeOpenAI, running_server, text

KEY_ENV = "BENCH_FAKE_API_KEY"
CLI = Path(sys.executable).parent / "multiverse"


def _call(server: FakeOpenAI, number: int) -> LlmCall:
    return LlmCall(
        role="planner",
        agent_version="1",
        prompt_version="p1",
        scope=f"bench:{number}",
        model="openai/bench-model",
        api_base=server.base_url,
        api_key_env=KEY_ENV,
        messages=[{"role": "user", "content": f"Summarise report {number}."}],
    )


def measure_calls(repeats: int) -> dict[str, float]:
    """Median ms of raw litellm, the gateway without cache, and cache hits."""
    os.environ[KEY_ENV] = "sk-bench-0000000000"
    litellm = load_litellm()
    with running_server() as server, tempfile.TemporaryDirectory() as folder:
        server.default = text("A short summary.")

        def raw(number: int) -> object:
            return litellm.completion(
                model="openai/bench-model",
                api_base=server.base_url,
                api_key=os.environ[KEY_ENV],
                max_tokens=1024,
                sampling={"temperature": 0.0},
                timeout=60.0,
                max_retries=0,
                messages=[{"role": "user", "content": f"Summarise {number}."}],
            )

        plain = Gateway()
        cached = Gateway(cache=LlmCache(Path(folder) / "cache"))
        ledgered = Gateway(cache=LlmCache(Path(folder) / "cache"), runs_root=Path(folder) / "runs")
        warm = _call(server, 0)
        cached.complete(warm)
        run_call = warm.model_copy(update={"run_id": "run-20261121-000000-001"})
        ledgered.complete(run_call)
        raw_ms = median_ms(raw, repeats)
        gateway_ms = median_ms(lambda n: plain.complete(_call(server, n)), repeats)
        # A streamed prose answer of 50 chunks (1,200 characters, about 300 tokens), with
        # litellm's logging of each chunk off (as load_litellm sets it) and on.
        server.default = text(" ".join(["Revenue grew in every region."] * 40)[:1200])
        streamed = [_call(server, n).model_copy(update={"stop_repeats": True}) for n in
                    range(-1, repeats)]  # fmt: skip
        cpu = {}
        for logged in (True, False):
            litellm.disable_streaming_logging = not logged
            cpu[logged] = cpu_ms_per_call(lambda n: plain.complete(streamed[n + 1]), repeats)
        litellm.disable_streaming_logging = True
        return {
            "raw": raw_ms,
            "gateway": gateway_ms,
            "cpu_logged": cpu[True],
            "cpu": cpu[False],
            "hit": median_ms(lambda n: cached.complete(warm), repeats),
            "hit_ledger": median_ms(lambda n: ledgered.complete(run_call), repeats),
        }


def cpu_ms_per_call(operation: Callable[[int], object], repeats: int) -> float:
    """CPU milliseconds of this process (every thread, the loopback server's too) per call,
    counted once the threads a call left behind have ended."""
    operation(-1)
    threads = threading.active_count()
    began = time.process_time()
    for number in range(repeats):
        operation(number)
    deadline = time.monotonic() + 10
    while threading.active_count() > threads and time.monotonic() < deadline:
        time.sleep(0.01)
    return (time.process_time() - began) * 1000 / repeats


def _start_ms(arguments: list[str]) -> str:
    if not CLI.exists():
        return "not available"
    times = []
    for _ in range(5):
        began = time.perf_counter()
        done = subprocess.run([str(CLI), *arguments], capture_output=True, text=True)
        times.append((time.perf_counter() - began) * 1000)
        if done.returncode != 0:
            return f"not available (exit {done.returncode})"
    return f"{statistics.median(times):.0f} ms"


def litellm_in_cli_import() -> str:
    """Whether `import app.cli` imports litellm, from -X importtime."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import app.cli"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return "not available (app.cli does not import)"
    return "yes" if "litellm" in done.stderr else "no"


def main() -> None:
    """Measure and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    repeats = parser.parse_args().repeats
    # Log events rendered as in production (masked JSON), but not printed.
    structlog.configure(
        processors=[mask_processor, structlog.processors.JSONRenderer()],
        logger_factory=structlog.ReturnLoggerFactory(),
    )
    calls = measure_calls(repeats)
    with tempfile.TemporaryDirectory() as folder:
        init_home(Home(Path(folder)))
        help_ms = _start_ms(["--help"])
        status_ms = _start_ms(["status", "--home", folder])
    overhead = calls["gateway"] - calls["raw"]
    rows = [
        ("litellm.completion, raw (median)", f"{calls['raw']:.2f} ms", ""),
        ("Gateway.complete, cache off (median)", f"{calls['gateway']:.2f} ms", ""),
        ("gateway overhead per call", f"{overhead:.2f} ms", "≤ 1 ms"),
        ("CPU per streamed answer of 50 chunks (all threads)", f"{calls['cpu']:.1f} ms", ""),
        ("the same with litellm's logging of each chunk on", f"{calls['cpu_logged']:.1f} ms", ""),
        ("cache hit (median)", f"{calls['hit']:.3f} ms", "≤ 2 ms"),
        ("cache hit + run ledger update (median)", f"{calls['hit_ledger']:.3f} ms", ""),
        ("`multiverse --help` start (median of 5)", help_ms, ""),
        ("`multiverse status --home` start (median of 5)", status_ms, ""),
        ("litellm imported by `import app.cli`", litellm_in_cli_import(), "no"),
    ]
    print(f"Gateway benchmark ({repeats} calls per figure, loopback fake server)\n")
    print("| measure | value | target |")
    print("| --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
