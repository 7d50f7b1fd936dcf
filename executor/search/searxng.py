"""SearXNG, the self-hosted, keyless metasearch engine, through its JSON API.

`GET {base_url}/search?q=…&format=json` answers `{"results": [{"title", "url", "content",
"publishedDate", …}], …}`. An instance answers 403 to `format=json` unless `json` is listed
under `search.formats` in its settings.yml; that is said plainly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from executor.search.hits import hits_from
from executor.tools.base import SearchError, SearchHit

USER_AGENT = "multiverse-executor/0.1"


@dataclass(frozen=True)
class SearxngProvider:
    """A SearXNG instance at `base_url`."""

    base_url: str
    timeout_seconds: float = 15.0
    language: str | None = None
    categories: str | None = None
    name: str = "searxng"

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """The instance's best `limit` results for `query`; SearchError when it cannot answer."""
        params = {"q": query, "format": "json"}
        if self.language:
            params["language"] = self.language
        if self.categories:
            params["categories"] = self.categories
        where = f"SearXNG at {self.base_url}"
        try:
            response = httpx.get(
                f"{self.base_url}/search",
                params=params,
                headers={"Accept": "application/json", "User-Agent": USER_AGENT},
                timeout=self.timeout_seconds,
            )
        except httpx.HTTPError as error:
            raise SearchError(f"{where} is unreachable: {type(error).__name__}: {error}") from None
        if response.status_code == 403:
            raise SearchError(
                f"{where} refused format=json (HTTP 403): list `json` under search.formats "
                "in its settings.yml"
            )
        if response.is_error:
            raise SearchError(f"{where} answered HTTP {response.status_code}")
        return hits_from(_results(response, where), "content", "publishedDate")[:limit]


def _results(response: httpx.Response, where: str) -> list[Any]:
    try:
        data = response.json()
    except ValueError:
        raise SearchError(f"{where} did not answer JSON") from None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise SearchError(f"{where} answered JSON without a results list")
    return results
