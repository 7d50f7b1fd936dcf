"""The builtin offline Executor: extractive analysis, strategy, publishing and charts, no model."""

from __future__ import annotations

from executor.builtin.deliverable import deliverable_title
from executor.builtin.delivery import close_published
from executor.builtin.relevance import spec_query, text_scores
from executor.builtin.role import BuiltinExecutor, tool_folder
from executor.builtin.simple import is_known_command, named_paths, table_answer
from executor.builtin.sources import TaskError, in_outputs, relative, resolve_output
from executor.builtin.specialists import nothing_usable_note, search_queries
from executor.builtin.tablefacts import verified_facts
from executor.builtin.text import clean_inline, split_sentences, terms, unique

__all__ = [
    "BuiltinExecutor",
    "TaskError",
    "clean_inline",
    "close_published",
    "deliverable_title",
    "in_outputs",
    "is_known_command",
    "named_paths",
    "nothing_usable_note",
    "relative",
    "resolve_output",
    "search_queries",
    "spec_query",
    "split_sentences",
    "table_answer",
    "terms",
    "text_scores",
    "tool_folder",
    "unique",
    "verified_facts",
]
