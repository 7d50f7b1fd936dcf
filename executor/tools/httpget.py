"""One guarded HTTP GET (SPEC §12): checked addresses, redirects by hand, size and time limits.

Every hop (the first URL and each redirect) goes through the network guard before any
connection, and the request is sent to the very address the guard checked: the URL's host stays
in the Host header and, for https, in the TLS server name, so the certificate is still verified
against the host name. Environment proxies are not used, because a proxy would make the
connection somewhere the guard did not check. The one window left is the resolver itself: a
name lookup has no time limit of its own (the system resolver's applies).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from executor.tools.netguard import AddressRefused, HostRule, Target, check_target

USER_AGENT = "multiverse-executor/0.1"
MAX_REDIRECTS = 5
_CHUNK = 65536
_DEFAULT_PORTS = {"http": 80, "https": 443}


class FetchError(Exception):
    """A GET that got no usable response: refused, unresolvable, a transport fault, a loop."""


@dataclass
class Fetched:
    """The bounded body of one HTTP response (filled while it streams)."""

    url: str
    status: int
    content_type: str
    encoding: str = "utf-8"
    body: bytearray = field(default_factory=bytearray)
    truncated: bool = False


def check_url(url: str) -> str | None:
    """Why `url` may not be fetched, or None: only http and https with a host."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        parts.port  # noqa: B018  (a port out of range raises here)
    except ValueError as error:
        return f"{url!r} is not a valid URL: {error}"
    if parts.scheme.lower() not in ("http", "https"):
        return f"only http and https URLs are fetched, not {parts.scheme or 'a bare path'!r}"
    if not host:
        return f"{url!r} names no host"
    return None


def fetch(url: str, timeout: float, max_bytes: int, allow: Iterable[HostRule] = ()) -> Fetched:
    """GET `url` through the guard, keeping at most `max_bytes` and taking `timeout` in total."""
    rules = tuple(allow)
    deadline = time.monotonic() + timeout
    current = url.strip()
    for _hop in range(MAX_REDIRECTS + 1):
        # A client per hop: a pooled connection made for one host name is never reused for
        # another name that happens to share its address.
        with httpx.Client(follow_redirects=False, trust_env=False) as client:
            request = _pinned_request(client, current, rules, deadline)
            try:
                response = client.send(request, stream=True)
            except httpx.HTTPError as error:
                reason = f"{type(error).__name__}: {error}"
                raise FetchError(f"fetching {current} failed: {reason}") from None
            try:
                location = response.headers.get("location")
                if not (response.has_redirect_location and location):
                    return _read(response, current, deadline, max_bytes)
            finally:
                response.close()
            current = urljoin(current, location)
    raise FetchError(f"{url} redirected more than {MAX_REDIRECTS} times")


def _pinned_request(
    client: httpx.Client, url: str, rules: tuple[HostRule, ...], deadline: float
) -> httpx.Request:
    refusal = check_url(url)
    if refusal is not None:
        raise FetchError(refusal)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or _DEFAULT_PORTS[scheme]
    try:
        target = check_target(parts.hostname or "", port, rules)
    except AddressRefused as error:
        raise FetchError(f"{url}: {error}") from None
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchError(f"fetching {url} ran out of time")
    # https: the TLS server name (and so the certificate check) stays the URL's host.
    extensions: dict[str, Any] = {"sni_hostname": target.host} if scheme == "https" else {}
    try:
        pinned = httpx.URL(url).copy_with(host=str(target.address), fragment=None)
    except httpx.InvalidURL as error:
        raise FetchError(f"{url!r} is not a valid URL: {error}") from None
    headers = {"User-Agent": USER_AGENT, "Host": _host_header(target, scheme)}
    return client.build_request(
        "GET", pinned, headers=headers, timeout=httpx.Timeout(left), extensions=extensions
    )


def _host_header(target: Target, scheme: str) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    return host if target.port == _DEFAULT_PORTS[scheme] else f"{host}:{target.port}"


def _read(response: httpx.Response, url: str, deadline: float, max_bytes: int) -> Fetched:
    fetched = Fetched(url, response.status_code, _media_type(response))
    fetched.encoding = response.charset_encoding or "utf-8"
    if response.is_error:
        return fetched
    try:
        for chunk in response.iter_bytes(_CHUNK):
            room = max_bytes - len(fetched.body)
            fetched.body += chunk[:room]
            if len(chunk) > room or time.monotonic() > deadline:
                # Stop reading: a body past the cap or a server that drips past the deadline.
                fetched.truncated = True
                break
    except httpx.HTTPError as error:
        raise FetchError(f"reading {url} failed: {type(error).__name__}: {error}") from None
    return fetched


def _media_type(response: httpx.Response) -> str:
    header = str(response.headers.get("content-type", ""))
    return header.split(";")[0].strip().lower()
