"""Whether an address is one a webhook may reach: public, judged through any IPv4 address
an IPv6 form carries inside it.

`ipaddress`'s `is_global` judges an IPv6 address by its own prefix, so the forms that
embed an IPv4 address (IPv4-mapped `::ffff:127.0.0.1`, IPv4-compatible `::127.0.0.1`,
NAT64 `64:ff9b::7f00:1`, 6to4 `2002:7f00:1::`, Teredo) pass for public while the
network stack, a NAT64 gateway or a 6to4 relay delivers them to the IPv4 address inside.
Here the embedded IPv4 address is what is judged; the local-use NAT64 prefix
(`64:ff9b:1::/48`, RFC 8215) is refused whole: what it reaches is the operator's own."""

from __future__ import annotations

import ipaddress

IPv4 = ipaddress.IPv4Address
IPv6 = ipaddress.IPv6Address

NAT64 = ipaddress.ip_network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
COMPATIBLE = ipaddress.ip_network("::/96")


def embedded_ipv4(address: IPv6) -> list[IPv4]:
    """The IPv4 addresses an IPv6 address carries (none for a plain IPv6 address)."""
    found: list[IPv4] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address in COMPATIBLE or address in NAT64:
        found.append(IPv4(int(address) & 0xFFFF_FFFF))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found += list(address.teredo)
    return found


def address_is_public(address: IPv4 | IPv6) -> bool:
    """True for a global unicast address whose embedded IPv4 addresses are global too."""
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, IPv6):
        if address in NAT64_LOCAL:
            return False
        return all(inner.is_global and not inner.is_multicast for inner in embedded_ipv4(address))
    return True
