"""Web tools (SPEC §12): web_fetch (guarded, bounded GET; HTML → markdown) and web_search.

Also here: a fetched body as text; one guarded HTTP GET: checked addresses, redirects by hand,
size and time limits; where web_fetch may connect (public addresses only, unless the mapping
allows a host).
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urljoin, urlsplit

import httpx
from pydantic import Field

from executor.tools.base import Arguments, ModelTool, SearchError, ToolContext, ToolResult
from executor.tools.reading import looks_binary
from multiverse.documents import html_to_markdown

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_METADATA = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")


class AddressRefused(Exception):
    """A host the guard will not connect to; the message says why."""


@dataclass(frozen=True)
class HostRule:
    """One allowed host: a name or address, on one port or (port None) on any."""

    host: str
    port: int | None = None

    def matches(self, host: str, port: int) -> bool:
        """Whether a URL's host and port are this rule's."""
        return normal_host(host) == self.host and self.port in (None, port)


@dataclass(frozen=True)
class Target:
    """A checked destination: the URL's host and port, and the address to connect to."""

    host: str
    port: int
    address: IPAddress


def normal_host(host: str) -> str:
    """A host as rules compare it: lower case, no brackets, no trailing dot."""
    return host.strip().strip("[]").rstrip(".").lower()


def parse_rule(entry: str) -> HostRule:
    """An allow_hosts entry (`name`, `name:port`, `[v6]:port`) as a rule; ValueError if bad."""
    text = entry.strip()
    if not text or "/" in text or "@" in text:
        raise ValueError(f"{entry!r} is not a host or host:port")
    parts = urlsplit(f"//{text}")
    port = parts.port  # raises ValueError for a port out of range or not a number
    if not parts.hostname:
        raise ValueError(f"{entry!r} names no host")
    return HostRule(normal_host(parts.hostname), port)


def parse_rules(entries: Iterable[str]) -> tuple[HostRule, ...]:
    """Every allow_hosts entry as a rule; ValueError names the first malformed one."""
    return tuple(parse_rule(entry) for entry in entries)


def _embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found = [address.ipv4_mapped, address.sixtofour]
    if address in _NAT64:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [inner for inner in found if inner is not None]


def address_refusal(address: IPAddress) -> str | None:
    """Why connecting to `address` is refused, or None for a public address (pure)."""
    for inner in _embedded_ipv4(address):
        reason = address_refusal(inner)
        if reason is not None:
            return f"{reason} (inside {address})"
    checks = (
        (address.is_unspecified, "an unspecified address"),
        (address.is_loopback, "a loopback address"),
        (address in _METADATA, "a cloud metadata address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (isinstance(address, ipaddress.IPv4Address) and address in _SHARED, "a shared address"),
        (address.is_reserved, "a reserved address"),
        (address.is_private, "a private address"),
        (not address.is_global, "not a public address"),
    )
    for hit, reason in checks:
        if hit:
            return f"{address} is {reason}"
    return None


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to, in the resolver's order (IP literals as they are)."""
    try:
        infos = socket.getaddrinfo(normal_host(host), port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise AddressRefused(f"cannot resolve {host!r}: {error}") from None
    found: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        # An IPv6 sockaddr may carry a scope ("fe80::1%eth0"): the address is before the %.
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise AddressRefused(f"{host!r} resolves to no address")
    return found


def check_target(host: str, port: int, rules: Iterable[HostRule]) -> Target:
    """The address to connect to for `host:port`; AddressRefused if any address is forbidden."""
    addresses = resolve(host, port)
    if not any(rule.matches(host, port) for rule in rules):
        # Every address is checked, not only the first: a mixed answer is refused whole.
        for address in addresses:
            reason = address_refusal(address)
            if reason is not None:
                shown = normal_host(host)
                where = reason if shown == str(address) else f"{shown} resolves to {reason}"
                raise AddressRefused(
                    f"refused: {where}; allow it in runtime-mapping.yaml "
                    "(tool_mapping.web_fetch.options.allow_hosts) if it is meant"
                )
    return Target(normal_host(host), port, addresses[0])


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


HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript")


def decoded(fetched: Fetched) -> str:
    """The body decoded with the response's charset (UTF-8 when unknown or unusable)."""
    try:
        return bytes(fetched.body).decode(fetched.encoding, errors="replace")
    except LookupError:
        return bytes(fetched.body).decode("utf-8", errors="replace")


def is_textual(fetched: Fetched) -> bool:
    """Whether the content type (or, without one, the bytes) say the body is text."""
    kind = fetched.content_type
    if kind:
        return kind.startswith(TEXT_TYPES + HTML_TYPES)
    return not looks_binary(bytes(fetched.body))


def to_text(fetched: Fetched) -> str | None:
    """The body as text (markdown of the main content for HTML), or None if it is binary."""
    if not is_textual(fetched):
        return None
    text = decoded(fetched)
    if fetched.content_type in HTML_TYPES:
        return html_to_markdown(text, fetched.url)
    return text


class WebFetchArgs(Arguments):
    """Arguments of web_fetch."""

    url: str = Field(description="An http:// or https:// URL.")


class WebFetch(ModelTool[WebFetchArgs]):
    """Fetches a web page with size and time limits; HTML comes back as markdown."""

    name: ClassVar[str] = "web_fetch"
    description: ClassVar[str] = (
        "Fetch an http(s) URL with a time limit and a size cap. HTML pages come back as "
        "markdown (its main content), other text as is; binary content is refused, and so "
        "are loopback, private and link-local addresses."
    )
    arguments_model: ClassVar[type[Arguments]] = WebFetchArgs

    def execute(self, context: ToolContext, args: WebFetchArgs) -> ToolResult:
        """Fetch the page."""
        refusal = check_url(args.url)
        if refusal is not None:
            return ToolResult.failure(refusal)
        limits = context.limits
        try:
            rules = parse_rules(context.web_allow_hosts)
        except ValueError as error:
            return ToolResult.failure(f"web_fetch options.allow_hosts: {error}")
        try:
            fetched = fetch(
                args.url.strip(), limits.web_timeout_seconds, limits.web_max_bytes, rules
            )
        except FetchError as error:
            return ToolResult.failure(str(error))
        data = {"url": fetched.url, "status": fetched.status, "content_type": fetched.content_type}
        if fetched.status >= 400:
            return ToolResult.failure(f"{fetched.url} answered HTTP {fetched.status}", **data)
        text = to_text(fetched)
        if text is None:
            return ToolResult.failure(f"{fetched.url} is binary ({fetched.content_type})", **data)
        if not text.strip():
            return ToolResult.failure(f"{fetched.url} has no readable main content", **data)
        truncated = fetched.truncated or len(text) > limits.web_max_output_chars
        text = text[: limits.web_max_output_chars]
        if truncated:
            text += "\n\n[truncated at the size cap]"
        return ToolResult.success(f"Source: {fetched.url}\n\n{text}", truncated=truncated, **data)


class WebSearchArgs(Arguments):
    """Arguments of web_search."""

    query: str = Field(min_length=1, description="What to search the web for.")
    limit: int = Field(default=5, ge=1, description="How many results at most.")


class WebSearch(ModelTool[WebSearchArgs]):
    """Searches the web through the configured provider."""

    name: ClassVar[str] = "web_search"
    description: ClassVar[str] = (
        "Search the web; answers a numbered list of results (title, URL, snippet). "
        "Use web_fetch to read a result."
    )
    arguments_model: ClassVar[type[Arguments]] = WebSearchArgs

    def execute(self, context: ToolContext, args: WebSearchArgs) -> ToolResult:
        """Ask the provider."""
        provider = context.web_search_provider
        if provider is None:
            return ToolResult.failure("no web_search provider is configured")
        limit = min(args.limit, context.limits.web_search_max_hits)
        try:
            hits = provider.search(args.query, limit)[:limit]
        except SearchError as error:
            return ToolResult.failure(f"web search failed: {error}")
        if not hits:
            return ToolResult.success(f"no results for {args.query!r}", hits=[])
        lines = [
            f"{number}. [{hit.title}]({hit.url})\n   {hit.snippet}".rstrip()
            for number, hit in enumerate(hits, start=1)
        ]
        return ToolResult.success("\n".join(lines), hits=[hit.model_dump() for hit in hits])
