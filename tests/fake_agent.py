"""A fake coding-agent CLI, run as a real child process by the process-adapter tests.

usage: fake_agent.py MODE [STATE_FOLDER]

It reads its prompt on stdin and its task from the environment, as any script serving a
process tier can. MODE:
- write: writes MULTIVERSE_OUTPUT_PATH (its environment as JSON, under a title) and exits 0;
  each write is counted in STATE_FOLDER/writes-<task id>.
- exit1: says why on stderr, exits 1.
- signal: kills itself with SIGKILL (a crash by a signal).
- no-file: prints a line and exits 0 without writing the output file.
- hang: prints a line, then waits forever (a timeout stops it).
- silent: prints nothing, waits forever (the no-output watchdog stops it).
- stubborn: ignores SIGTERM and waits forever (only SIGKILL ends it).
- stubborn-once: the first time (no STATE_FOLDER/hung), like stubborn; later, like write.
- wait-in-phases: writes Phase 0's tasks (T..) like write; a task of a later phase (P..)
  marks STATE_FOLDER/waiting-<task id> and waits forever; on SIGTERM it marks
  STATE_FOLDER/terminated-<task id> and exits 143 (a task a cancel interrupts).
- answer: prints a JSON answer that fits the schema given in the prompt (a Planner or
  Communicator served by a CLI).
- daemonize: like write, and first leaves a grandchild behind (as agent CLIs that daemonise
  helpers do): it calls setsid, ignores SIGTERM (when STATE_FOLDER/stubborn exists) and appends
  a line to STATE_FOLDER/grandchild.log every 20 ms, forever; with STATE_FOLDER/bare, it is
  started with an empty environment. hang-after-daemonize: the same grandchild, then like hang.
- slow-first: every start appends "<task id> <pid>" to STATE_FOLDER/starts.log; Phase 0's tasks
  (T..) write at once; the first start of a later task waits STATE_FOLDER/seconds (default 30)
  before writing, later starts write at once; on SIGTERM while waiting it marks
  STATE_FOLDER/terminated-<task id> and exits 143 (a remote step the tests stop or lose).
The process carries its mode and RAWP_SESSION_ID in its argv/environment, so a test can find it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


def _wait_forever() -> None:
    threading.Event().wait()


def _wait_for_sigterm(state: Path, task_id: str) -> None:
    def terminated(signum: int, frame: object) -> None:
        (state / f"terminated-{task_id}").touch()
        os._exit(143)

    signal.signal(signal.SIGTERM, terminated)
    (state / f"waiting-{task_id}").touch()
    print("working until stopped", flush=True)
    _wait_forever()


def _slow_first(state: Path, task_id: str) -> None:
    with (state / "starts.log").open("a", encoding="utf-8") as handle:
        handle.write(f"{task_id} {os.getpid()}\n")
    if task_id.startswith("T"):
        return
    try:
        (state / "slowed").touch(exist_ok=False)
    except FileExistsError:
        return

    def terminated(signum: int, frame: object) -> None:
        (state / f"terminated-{task_id}").touch()
        os._exit(143)

    signal.signal(signal.SIGTERM, terminated)
    seconds = state / "seconds"
    time.sleep(float(seconds.read_text()) if seconds.exists() else 30.0)


def _write() -> None:
    target = Path(os.environ["MULTIVERSE_OUTPUT_PATH"])
    target.parent.mkdir(parents=True, exist_ok=True)
    shown = {key: value for key, value in os.environ.items() if not key.endswith("_KEY")}
    shown["KEYS_PASSED"] = ",".join(sorted(k for k in os.environ if k.endswith("_KEY")))
    shown["CWD"] = os.getcwd()
    target.write_text(
        "# Done by the fake agent\n\n```json\n" + json.dumps(shown, indent=1) + "\n```\n",
        encoding="utf-8",
    )
    if len(sys.argv) > 2:
        counter = Path(sys.argv[2]) / f"writes-{os.environ.get('MULTIVERSE_TASK_ID', '')}"
        with counter.open("a", encoding="utf-8") as handle:
            handle.write("1\n")
    print(f"wrote {target}")


def instance(schema: dict[str, Any], defs: dict[str, Any], name: str = "") -> Any:
    """A small value that validates against `schema` (the shapes multiverse sends)."""
    if "$ref" in schema:
        return instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, name)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return instance(schema[key][0], defs, name)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        props = schema.get("properties", {})
        required = schema.get("required", props)
        return {key: instance(props[key], defs, key) for key in required}
    if kind == "array":
        return [instance(schema.get("items", {}), defs, name)] * max(1, schema.get("minItems", 1))
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if name.endswith("_type"):
        return "GOAL"  # checked by code: an UPPER_CASE word
    return "Done by the fake agent." if schema.get("minLength", 0) < 40 else "x" * 40


def _answer(prompt: str) -> None:
    marker = "validates against this JSON schema:"
    if marker not in prompt:
        print("A plain answer from the fake agent.")
        return
    schema = json.loads(prompt.split(marker, 1)[1].strip().splitlines()[0])
    print(json.dumps(instance(schema, schema.get("$defs", {}))))


def _grandchild(state: Path) -> None:
    if (state / "stubborn").exists():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(PermissionError):
        os.setsid()  # its own session, out of the group the child was started in
    while True:
        with (state / "grandchild.log").open("a", encoding="utf-8") as handle:
            handle.write("still here\n")
        time.sleep(0.02)


def main() -> None:
    """Behave as MODE says."""
    mode = sys.argv[1]
    state = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    if mode == "grandchild" and state is not None:
        _grandchild(state)
    if mode in ("daemonize", "hang-after-daemonize") and state is not None:
        bare = {} if (state / "bare").exists() else None  # a cleared environment
        subprocess.Popen([sys.executable, __file__, "grandchild", str(state)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=bare)  # fmt: skip
        deadline = time.monotonic() + 30
        while not (state / "grandchild.log").exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # until the helper is up (and, if stubborn, ignores SIGTERM)
        mode = "write" if mode == "daemonize" else "hang"
    prompt = sys.stdin.read()
    if mode == "stubborn-once" and state is not None:
        flag = state / "hung"
        mode = "write" if flag.exists() else "stubborn"
        flag.touch()
    if mode == "wait-in-phases":
        mode = "write" if os.environ.get("MULTIVERSE_TASK_ID", "").startswith("T") else mode
    if mode == "slow-first" and state is not None:
        _slow_first(state, os.environ.get("MULTIVERSE_TASK_ID", ""))
        mode = "write"
    if mode == "write":
        _write()
    elif mode == "wait-in-phases" and state is not None:
        _wait_for_sigterm(state, os.environ.get("MULTIVERSE_TASK_ID", ""))
    elif mode == "exit1":
        print("the fake agent cannot do this task", file=sys.stderr)
        sys.exit(1)
    elif mode == "signal":
        print("about to crash", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "no-file":
        print("I thought about it but wrote nothing.")
    elif mode == "hang":
        print("working...", flush=True)
        _wait_forever()
    elif mode == "silent":
        _wait_forever()
    elif mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ignoring SIGTERM", flush=True)
        _wait_forever()
    elif mode == "answer":
        _answer(prompt)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
