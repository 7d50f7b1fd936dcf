"""A plain install completes one offline run: the project without extras (`uv pip install .`,
what `pip install .` installs) into a fresh virtual environment, then the real CLI of that
environment serves a request end to end.

Run by `make test` (target `plain-install`) with the fresh environment's python; it imports
nothing of the project itself, only drives the `multiverse` command installed beside it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
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
    print(f"plain install: an offline run COMPLETED ({report.name} written)")


if __name__ == "__main__":
    main()
