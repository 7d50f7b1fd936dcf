"""The builtin offline Executor: extractive analysis, strategy, publishing and charts, no model."""

from __future__ import annotations

from executor.builtin.charts import markdown_to_html
from executor.builtin.deliverable import close_published
from executor.builtin.role import BuiltinExecutor
from executor.builtin.simple import is_known_command, named_paths, table_answer
from executor.builtin.sources import TaskError, in_outputs, relative, resolve_output
from executor.builtin.tablefacts import verified_facts
from executor.builtin.text import clean_inline, split_sentences, terms, unique

__all__ = [
    "BuiltinExecutor",
    "TaskError",
    "clean_inline",
    "close_published",
    "in_outputs",
    "is_known_command",
    "markdown_to_html",
    "named_paths",
    "relative",
    "resolve_output",
    "split_sentences",
    "table_answer",
    "terms",
    "unique",
    "verified_facts",
]
