"""Search hits out of a provider's JSON results, keeping only the ones that can be fetched."""

from __future__ import annotations

from typing import Any

from executor.tools.base import SearchHit
from executor.tools.httpget import check_url


def hits_from(results: list[Any], snippet_key: str, date_key: str) -> list[SearchHit]:
    """The results with an http(s) URL as hits, in order, each URL once (pure)."""
    hits: list[SearchHit] = []
    seen: set[str] = set()
    for item in results:
        if not isinstance(item, dict):
            continue
        url = str(item.get("url") or "").strip()
        if not url or check_url(url) is not None or url in seen:
            continue
        seen.add(url)
        date = item.get(date_key)
        hits.append(
            SearchHit(
                title=" ".join(str(item.get("title") or url).split()),
                url=url,
                snippet=" ".join(str(item.get(snippet_key) or "").split()),
                published=str(date) if date else None,
            )
        )
    return hits
