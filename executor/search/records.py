"""What one web_search tool task found: plain data, no I/O (the leaf of executor.search)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    """Base of the records: strict and immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class QueryOutcome(Record):
    """One query sent to the provider and what came of it."""

    query: str
    hits: int = 0
    error: str | None = None


class Source(Record):
    """A page fetched in this run and the passages of it that are quoted."""

    title: str
    url: str  # the URL the page was read from (after redirects)
    fetched_at: str  # UTC, ISO 8601
    query: str
    passages: list[str] = Field(min_length=1)
    published: str | None = None


class Skipped(Record):
    """A result that was tried and not cited, and why."""

    url: str
    reason: str


class Findings(Record):
    """Everything a web_search tool task did: queries, cited sources, skipped results."""

    provider: str
    queries: list[QueryOutcome]
    sources: list[Source]
    skipped: list[Skipped] = Field(default_factory=list)
    searched_at: str
