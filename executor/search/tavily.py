"""Tavily's search API through its maintained client, `tavily-python`.

The client takes the endpoint (`api_base_url`), which is how tests reach a loopback server that
speaks the API: `POST /search` with the key as `Authorization: Bearer …` and a JSON body
(`query`, `max_results`, `search_depth`), answering `{"results": [{"title", "url", "content",
"score", "published_date"?}], …}`. The key comes from the environment; it is held out of this
object's repr and never logged. The client (and `requests` under it) is imported on the first
search only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from executor.search.hits import hits_from
from executor.tools.base import SearchError, SearchHit


@dataclass(frozen=True)
class TavilyProvider:
    """Tavily search with one API key."""

    api_key: str = field(repr=False)
    base_url: str | None = None
    timeout_seconds: float = 15.0
    search_depth: str = "basic"
    name: str = "tavily"

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """Tavily's best `limit` results for `query`; SearchError when it cannot answer."""
        from tavily import TavilyClient

        try:
            with TavilyClient(api_key=self.api_key, api_base_url=self.base_url) as client:
                answer: Any = client.search(
                    query,
                    max_results=limit,
                    search_depth=self.search_depth,
                    timeout=self.timeout_seconds,
                )
        # The client raises its own classes, requests' and, on odd statuses, others: whatever
        # it raises is the provider's failure, reported as a value with its class name.
        except Exception as error:
            raise SearchError(f"Tavily search failed: {type(error).__name__}: {error}") from None
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise SearchError("Tavily answered without a results list")
        return hits_from(results, "content", "published_date")[:limit]
