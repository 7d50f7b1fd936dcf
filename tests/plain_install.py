"""A plain install completes one offline run: the project without extras (`uv pip install .`,
what `pip install .` installs) into a fresh virtual environment, then the real CLI of that
environment serves a request end to end.

Run by `make test` (target `plain-install`) with the fresh environment's python; it imports
nothing of the project itself, only drives the `multiverse` command installed beside it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

CLI = [str(Path(sys.executable).parent / "multiverse")]
ASSET = "# Nordic charging\n\nRevenue grew 12% in 2024 to EUR 40 million, led by Norway.\n"
REQUEST = "Summarise the Nordic charging notes in a one-page memo."


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One CLI command on the home; its output is shown when it fails."""
    done = subprocess.run([*CLI, *args, "--home", str(home)], capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"`multiverse {' '.join(args)}` exited {done.returncode}:\n"
                         f"{done.stdout}\n{done.stderr}")  # fmt: skip
    return done


def main() -> None:
    """Init a home, submit, serve, confirm, serve: the run must be COMPLETED with a report."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        run(home, "init")
        (home / "assets" / "nordic.md").write_text(ASSET, encoding="utf-8")
        run(home, "submit", "--no-wait", REQUEST)
        run(home, "start", "--once")
        (row,) = json.loads(run(home, "status", "--json").stdout)
        run(home, "confirm", row["run_id"])
        run(home, "start", "--once")
        (row,) = json.loads(run(home, "status", "--json").stdout)
        report = home / "outputs" / row["run_id"] / "report.md"
        if row["status"] != "COMPLETED" or not report.is_file():
            log = run(home, "logs", row["run_id"]).stdout
            raise SystemExit(f"the run is {row['status']}, report {report.is_file()}:\n{log}")
        served = web_view(home, row["run_id"])
        remote = remote_refused(home)
    print(f"plain install: an offline run COMPLETED ({report.name} written); {served}; {remote}")


def remote_refused(home: Path) -> str:
    """A remote tier without the `workers` extra: `start` says what to install, no traceback."""
    mapping = home / "runtime-mapping.yaml"
    mapping.write_text("tier_mapping:\n  MEDIUM:\n    remote: {broker: 'redis://127.0.0.1:9/0'}\n",
                       encoding="utf-8")  # fmt: skip
    for command in (["start", "--once"], ["doctor"], ["worker"]):
        done = subprocess.run([*CLI, *command, "--home", str(home)], capture_output=True,
                              text=True)  # fmt: skip
        said = done.stdout + done.stderr
        if done.returncode == 0 or "multiverse[workers]" not in said or "Traceback" in said:
            raise SystemExit(f"`multiverse {command[0]}` with a remote tier and no Celery: exit "
                             f"{done.returncode}, said:\n{said}")  # fmt: skip
    return "a remote tier without Celery: start, doctor and worker say what to install"


def web_view(home: Path, run_id: str) -> str:
    """`multiverse ui` serves the run's page and its packaged assets (templates, htmx)."""
    child = subprocess.Popen([*CLI, "ui", "--port", "0", "--home", str(home)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert child.stdout is not None
        found = re.search(r"(http://\S+/)\?token=(\S+)", child.stdout.readline())
        if found is None:
            raise SystemExit(f"`multiverse ui` printed no URL: {child.stderr.read()}")
        base, token = found[1], found[2]
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback
        for path in (f"runs/{run_id}", "static/htmx.min.js"):
            with direct.open(f"{base}{path}?token={token}", timeout=30) as answer:
                if answer.status != 200:
                    raise SystemExit(f"`multiverse ui`: /{path} answered {answer.status}")
    finally:
        child.terminate()
        child.wait(timeout=30)
    return "`multiverse ui` serves its page and htmx"


if __name__ == "__main__":
    main()
