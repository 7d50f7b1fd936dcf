"""Where web_fetch may connect (SPEC §12): public addresses only, unless the mapping allows a host.

A URL's host is resolved here and every address it resolves to is checked; the fetch then
connects to the checked address itself, so a DNS answer that changes between the check and the
connection (rebinding) cannot move it. Loopback, private (RFC 1918, ULA), link-local (cloud
metadata included), shared, unspecified, multicast and reserved addresses are refused, also
when they hide inside an IPv6 form (IPv4-mapped, 6to4, NAT64). A host the mapping lists in
`web_fetch` `options.allow_hosts` (`name` or `name:port`) is exempt from the address check.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

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
