"""Past runs as a daemon leaves them, made directly in a home (for archive tests)."""

from __future__ import annotations

from multiverse.home import Home
from multiverse.models import (
    AssetType,
    CatalogEntry,
    InstructionStatus,
    ProcessRun,
    Status,
    UserInstruction,
)
from multiverse.store import KNOWLEDGE_CATALOG, PROCESS_RUNS, USER_INSTRUCTIONS, TableStore


def make_history(home: Home, statuses: list[Status]) -> list[str]:
    """Runs with these statuses, each with its folder, a catalog row of a workspace file and
    of an output, and an instruction: as the daemon leaves them."""
    store = TableStore()
    run_ids = []
    for n, status in enumerate(statuses):
        run_id = f"run-2026{10 + n % 2:02d}01-1200{n:02d}-001"
        run_ids.append(run_id)
        paths = home.run(run_id)
        (paths.workspace / "ANALYZING").mkdir(parents=True)
        paths.request.write_text(f"Request {n} about heat pumps\n", encoding="utf-8")
        (paths.workspace / "ANALYZING" / "notes.md").write_text("notes\n", encoding="utf-8")
        paths.outputs.mkdir(parents=True)
        (paths.outputs / "report.md").write_text(f"# Report {n}\n", encoding="utf-8")
        store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).insert(
            ProcessRun(run_id=run_id, user_request=f"Request {n} about heat pumps", status=status)
        )
        store.table(USER_INSTRUCTIONS, home.db / USER_INSTRUCTIONS.filename).insert(
            UserInstruction(
                instruction_id=f"I{n + 1:04d}",
                run_id=run_id,
                instruction_type="GOAL",
                content=f"goal {n}",
                status=InstructionStatus.ACTIVE,
            )
        )
        store.table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename).insert(
            CatalogEntry(
                file_path=f"runs/{run_id}/workspace/ANALYZING/notes.md",
                run_id=run_id,
                asset_type=AssetType.ANALYSIS_REPORT,
                summary="notes",
            ),
            CatalogEntry(
                file_path=f"outputs/{run_id}/report.md",
                run_id=run_id,
                asset_type=AssetType.FINAL_OUTPUT,
                summary="report",
            ),
        )
    return run_ids
