"""A command channel's receiver for the tests: appends what it reads on stdin to a file.

Usage: channel_sink.py OUT_FILE [FAIL_MARKER]. Each message becomes one JSON line holding the
MULTIVERSE_MESSAGE_ID it was given and the stdin text. While FAIL_MARKER exists it exits 1.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    """Append one line per message; exit 1 while the failure marker exists."""
    out = Path(sys.argv[1])
    if len(sys.argv) > 2 and Path(sys.argv[2]).exists():
        sys.stderr.write("sink is failing on purpose\n")
        return 1
    record = {
        "id": os.environ.get("MULTIVERSE_MESSAGE_ID", ""),
        "kind": os.environ.get("MULTIVERSE_MESSAGE_KIND", ""),
        "stdin": sys.stdin.read(),
    }
    with out.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
