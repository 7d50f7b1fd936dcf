"""`python -m evals run|render`: the command line of the evaluation (make eval-local)."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from evals import cases, collect, mapping, render, results, server
from evals.session import Settings, run_case

DEFAULT_EXE = cases.REPO / ".venv" / "bin" / "multiverse"
# Outcomes that say the harness (not the product) did not do its job.
HARNESS_FAULTS = {"INTERRUPTED", "DAEMON_EXITED", "SUBMIT_FAILED", "NO_RUN"}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evals", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run cases end to end, save results, render EVALS.md")
    run.add_argument("--label", help="result file evals/results/LABEL.json (default: after, "
                     "or builtin with --builtin)")  # fmt: skip
    run.add_argument("--cases", help=f"comma-separated, of: {', '.join(cases.CASES)} (all) "
                     "and any case id of tests/corpus/requests.yaml")  # fmt: skip
    how = run.add_mutually_exclusive_group()
    how.add_argument("--builtin", action="store_true", help="no model: checks the harness")
    how.add_argument("--mapping", type=Path, help="runtime-mapping.yaml to use as it is")
    run.add_argument(
        "--multiverse",
        type=Path,
        default=DEFAULT_EXE,
        help="the multiverse executable to evaluate (default: this repo's .venv)",
    )
    run.add_argument("--limit-min", type=float, default=100.0, help="per case (default 100)")
    # Each poll is one `multiverse status` process (~0.3 s of CPU), taken from the model's cores.
    run.add_argument("--poll", type=float, help="seconds between status polls (10; builtin 0.5)")
    run.add_argument(
        "--grace",
        type=float,
        default=30.0,
        help="seconds between SIGTERM and SIGKILL of the daemon (default 30)",
    )
    run.add_argument("--work-dir", type=Path, help="where the temporary homes go (default: TMPDIR)")
    again = commands.add_parser(
        "collect",
        help="read a saved case's home again (e.g. after a fix of the harness) and render EVALS.md",
    )
    again.add_argument("--label", required=True)
    again.add_argument("--cases", required=True, help="comma-separated case names")
    commands.add_parser("render", help="render EVALS.md from evals/results/*.json")
    corpus = commands.add_parser("corpus", help="the corpus of real data, offline (EVALS.md)")
    corpus.add_argument("--write", action="store_true", help="record the results in EVALS.md")
    corpus.add_argument("--model", action="store_true",
                        help="read the --cases with the local model's spec call instead")
    corpus.add_argument("--cases", help="comma-separated case ids (with --model)")
    return parser  # fmt: skip


def _mapping_text(args: argparse.Namespace) -> str | None:
    if args.builtin:
        return None
    return mapping.read_text(args.mapping) if args.mapping else mapping.local_mapping_text()


def _tiers(text: str | None) -> str:
    if text is None:
        return "all builtin"
    tiers = mapping.tiers_of(text)
    shown = {f"{t.get('model')}" + (f" @ {t['api_base']}" if t.get("api_base") else "")
             for t in tiers.values()}  # fmt: skip
    return (
        "all " + shown.pop()
        if len(shown) == 1 and len(tiers) == 3
        else "; ".join(f"{name}: {t.get('model')}" for name, t in tiers.items())
    )


def _servers(text: str | None) -> dict[str, Any]:
    """Start the local servers the mapping needs; what the (first) one says of itself."""
    found = sorted(mapping.local_servers(text)) if text else []
    for api_base, alias in found:
        server.ensure_server(api_base, alias)
    return server.describe(found[0][0]) if found else {}


def run(args: argparse.Namespace) -> int:
    """Run the selected cases one after the other; save each result as soon as it is known."""
    label = results.check_label(args.label or ("builtin" if args.builtin else "after"))
    chosen = cases.select(args.cases)
    exe = args.multiverse if args.multiverse.is_absolute() else args.multiverse.absolute()
    if not exe.is_file():
        raise ValueError(f"{exe}: no such multiverse executable")
    text = _mapping_text(args)
    servers = _servers(text)
    if text is not None and args.mapping is None and servers.get("context"):
        # The tiers' window is the server's own: references are fitted to what it holds.
        text = mapping.local_mapping_text(int(servers["context"]))
    meta = {
        "command": shlex.join(["python", "-m", "evals", *sys.argv[1:]]),
        "machine": results.machine(),
        "multiverse": results.revision(exe),
        "tiers": _tiers(text),
        "server": servers,
    }
    stop = threading.Event()
    # Handlers only set the flag: the driver sees it at its next poll and stops the daemon.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    settings = Settings(exe, text, args.limit_min * 60, args.poll or (0.5 if text is None else 10),
                        args.grace, args.work_dir, stop)  # fmt: skip
    outcomes = []
    for case in chosen:
        if stop.is_set():
            break
        found = run_case(case, settings)
        found["meta"] = {**meta, "date": results.now()}
        path = results.save(label, found)
        outcomes.append(found["outcome"])
        print(f"eval {case.name}: saved to {path.relative_to(cases.REPO)}", flush=True)
    render.write()
    print(f"eval: {', '.join(outcomes) or 'nothing ran'}; EVALS.md rendered", flush=True)
    return 1 if stop.is_set() or HARNESS_FAULTS.intersection(outcomes) else 0


def collect_again(args: argparse.Namespace) -> int:
    """Read the homes of saved cases again; what the harness saw while driving is kept."""
    saved = results.load(results.check_label(args.label))
    for case in cases.select(args.cases):
        found = saved["cases"].get(case.name)
        if found is None:
            raise ValueError(f"{args.label}: no result for {case.name}")
        found.update(collect.read_back(case, Path(found["home"]), found.get("run_id")))
        found.update(corpus=case.corpus is not None, cost=collect.cost(found))
        results.save(args.label, found)
        print(f"eval {case.name}: collected again from {found['home']}")
    render.write()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse, run, and turn a user's mistake or an absent server into a message and exit 2."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "collect":
            return collect_again(args)
        if args.command == "corpus":
            from evals import corpus

            given = ["--write"] if args.write else []
            if args.model:
                given += ["--model", "--cases", args.cases or ""]
            return corpus.main(given)
        if args.command == "render":
            render.write()
            print(f"rendered {render.EVALS_MD}")
            return 0
        return run(args)
    except (ValueError, OSError, server.ServerUnavailable) as error:
        print(f"eval: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
