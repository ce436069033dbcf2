"""The flag kinds the deterministic detectors raise, declared once.

Each kind says what the review queue calls it (`label`), what it is and how it is found
(`description`: the API schema and docs/kinds.md), what the screen does with it
(`severity`) and whether a copy carrying it may be propagated. The detectors
(`streams.guard.detectors`) raise them; the screen, propagation, the UI, the API schema,
the docs table (`manage.py kinds_docs`) and the detector benchmarks read this table, so a
new kind is a detector and a row here (`tests/streams/core/test_kinds_registry.py` checks both
ways).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# "redact": replaced by the redaction marker at write, in every scope, never refused;
# "hold": a pin or hand edit of a shared scope carrying it is refused (422 `flagged`)
# unless a person confirms it (`streams.guard.screening.REFUSED_FLAGS`).
Severity = Literal["redact", "hold"]


@dataclass(frozen=True)
class FlagKind:
    name: str
    label: str
    description: str
    severity: Severity
    blocks_propagation: bool  # a propagated copy carrying it is never stored


FLAG_KINDS: tuple[FlagKind, ...] = (
    FlagKind(
        name="pii:email",
        label="email",
        description="an email address with a dotted domain (a hand-written pattern)",
        severity="hold",
        blocks_propagation=True,
    ),
    FlagKind(
        name="pii:phone",
        label="phone number",
        description="a phone number Google's libphonenumber (`phonenumbers`) parses and "
        "validates: international, or national in US, GB, DE and FR formats, strictly grouped",
        severity="hold",
        blocks_propagation=True,
    ),
    FlagKind(
        name="pii:iban",
        label="IBAN",
        description="an IBAN passing ISO 7064 mod 97 with its country's length and format "
        "(`python-stdnum`)",
        severity="hold",
        blocks_propagation=True,
    ),
    FlagKind(
        name="pii:card",
        label="card number",
        description="a card number passing Luhn (`python-stdnum`) with an issuer prefix of "
        "that network's card length",
        severity="hold",
        blocks_propagation=True,
    ),
    FlagKind(
        name="secret",
        label="secret (redacted)",
        description="a key or token of a known shape, a private key block, a JWT, a bearer "
        "token, credentials in a URL, or a value assigned to a password or key; redacted at "
        "write",
        severity="redact",
        blocks_propagation=True,
    ),
    FlagKind(
        name="instruction",
        label="instruction to the agent",
        description="text telling the agent how to behave (overrides, role changes, orders "
        "about its answers; `streams.guard.instructions`); a user's own preference never fires",
        severity="hold",
        blocks_propagation=False,
    ),
)

FLAG_KIND_BY_NAME: dict[str, FlagKind] = {k.name: k for k in FLAG_KINDS}
FLAGS: tuple[str, ...] = tuple(k.name for k in FLAG_KINDS)  # the order flags are listed in
PII_FLAGS: frozenset[str] = frozenset(k.name for k in FLAG_KINDS if k.name.startswith("pii:"))
BLOCKING_FLAGS: frozenset[str] = frozenset(k.name for k in FLAG_KINDS if k.blocks_propagation)
HELD_FLAGS: frozenset[str] = frozenset(k.name for k in FLAG_KINDS if k.severity == "hold")


def flag_label(name: str) -> str:
    """The UI's word for a flag; a name the registry does not know (an old document's) is
    shown as it is, never as "None"."""
    kind = FLAG_KIND_BY_NAME.get(name)
    return kind.label if kind is not None else name


def flags_described() -> str:
    """The kinds in one line, for a schema description: `name (label)`, in order."""
    return ", ".join(f"{k.name} ({k.label})" for k in FLAG_KINDS)


__all__ = [
    "BLOCKING_FLAGS",
    "FLAGS",
    "FLAG_KINDS",
    "FLAG_KIND_BY_NAME",
    "HELD_FLAGS",
    "PII_FLAGS",
    "FlagKind",
    "Severity",
    "flag_label",
    "flags_described",
]
