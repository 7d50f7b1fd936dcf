"""The table store (SPEC §3.1): typed reads and locked, atomic, durable, merging writes of the
markdown tables, their schemas, and the journal that puts back rows a person's save erased.

The public face of the store; its modules are private to it.
"""

from __future__ import annotations

from multiverse.store.journal import (
    TOMBSTONE_KEEP_SECONDS,
    Restoration,
    Tombstones,
    add_tombstone,
    add_tombstones,
    compact_tombstones,
)
from multiverse.store.schemas import (
    GLOBAL_TABLES,
    KNOWLEDGE_CATALOG,
    MAJOR_STAGES,
    MISTLETOE_LOCK,
    PHASE_TEMPLATE,
    PHASES,
    PROCESS_RUNS,
    RUN_TABLES,
    TASKS,
    TOOL_TASKS,
    USER_INSTRUCTIONS,
    TableSpec,
    decode_cell,
    encode_cell,
    split_row,
)
from multiverse.store.store import TableStore
from multiverse.store.table import FileFlock, LockTimeout, Table
from multiverse.store.tablefile import Stamp, clip, parse_table_text, render_table, stamp_of

__all__ = [
    "GLOBAL_TABLES",
    "KNOWLEDGE_CATALOG",
    "MAJOR_STAGES",
    "MISTLETOE_LOCK",
    "PHASES",
    "PHASE_TEMPLATE",
    "PROCESS_RUNS",
    "RUN_TABLES",
    "TASKS",
    "TOMBSTONE_KEEP_SECONDS",
    "TOOL_TASKS",
    "USER_INSTRUCTIONS",
    "FileFlock",
    "LockTimeout",
    "Restoration",
    "Stamp",
    "Table",
    "TableSpec",
    "TableStore",
    "Tombstones",
    "add_tombstone",
    "add_tombstones",
    "clip",
    "compact_tombstones",
    "decode_cell",
    "encode_cell",
    "parse_table_text",
    "render_table",
    "split_row",
    "stamp_of",
]
