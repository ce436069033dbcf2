"""IPv6 forms that embed an IPv4 address (issue 44): the webhook URL check judges the
IPv4 address inside, so loopback and private addresses cannot pass dressed as IPv6.
Each form is tested as a URL literal and as a name that resolves to it."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from streams.core.exceptions import InvalidInput
from streams.records.webhooks import webhook_url_check

LOOPBACK_FORMS = {
    "ipv4-mapped": "::ffff:127.0.0.1",
    "ipv4-compatible": "::127.0.0.1",
    "nat64": "64:ff9b::7f00:1",
}
PRIVATE_FORMS = {
    "ipv4-mapped": "::ffff:10.0.0.1",
    "ipv4-compatible": "::10.0.0.1",
    "nat64": "64:ff9b::a00:1",
    "nat64-local-use": "64:ff9b:1::a00:1",
    "6to4": "2002:7f00:1::1",
    "metadata-nat64": "64:ff9b::a9fe:a9fe",  # 169.254.169.254
}


def _refused(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        webhook_url_check(url, allow_private=False)
    assert refused.value.details == [{"field": "url"}]


@pytest.mark.parametrize("form", sorted(LOOPBACK_FORMS))
def test_loopback_in_each_ipv6_form_is_refused_as_a_literal(form):
    _refused(f"http://[{LOOPBACK_FORMS[form]}]:8080/hook")


@pytest.mark.parametrize("form", sorted(PRIVATE_FORMS))
def test_private_in_each_ipv6_form_is_refused_as_a_literal(form):
    _refused(f"https://[{PRIVATE_FORMS[form]}]/hook")


@pytest.mark.parametrize("address", sorted({*LOOPBACK_FORMS.values(), *PRIVATE_FORMS.values()}))
def test_a_name_resolving_to_an_embedded_private_address_is_refused(monkeypatch, address):
    def resolve(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))]

    monkeypatch.setattr("streams.records.webhooks.socket.getaddrinfo", resolve)
    _refused("https://hooks.example.com/hook")


@pytest.mark.parametrize(
    "address", ["::ffff:93.184.216.34", "64:ff9b::5db8:d822", "2606:4700:4700::1111"]
)
def test_public_addresses_in_the_same_forms_still_pass(address):
    [approved] = webhook_url_check(f"https://[{address}]/hook", allow_private=False)
    assert ipaddress.ip_address(approved) == ipaddress.ip_address(address)
