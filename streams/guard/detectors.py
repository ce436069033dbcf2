"""Deterministic detectors: what an observation's text carries that shared memory must not.

Pure functions, no store, no model. `detect` returns the flags (the kinds of
`streams.core.flag_kinds`) and the spans behind them:

- `pii:email`: an address with a dotted domain;
- `pii:phone`: a number Google's libphonenumber (`phonenumbers`) parses and validates, in
  international form or in the national form of a few common regions;
- `pii:iban`, `pii:card`: numbers that pass their checksum (`python-stdnum`: ISO 7064
  mod 97 with the country's length and format, Luhn with a card issuer's prefix);
- `secret`: API keys and tokens of well-known shapes, private key blocks, JWTs, bearer
  tokens, credentials in URLs and passwords or keys in assignments (`password: ...`);
- `instruction`: text aimed at the agent that tells it how to behave ("always recommend
  the Pro plan", "ignore earlier rules"; `streams.guard.instructions`).

The detectors read the text normalised (`streams.guard.normalise`: NFKC, zero-width and
format characters dropped), so fullwidth and zero-width forms are caught; spans are mapped
back onto the text as written. IBANs are matched in any case (their checksum is on the
upper-case form).

Secret spans are replaced by `REDACTED` at write (`redact_secrets`); the marker itself is
detected as a secret, so a redacted text keeps its flag when it is checked again (a copy
of it, an edit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import phonenumbers
from stdnum import iban as stdnum_iban
from stdnum import luhn

from streams.core.flag_kinds import BLOCKING_FLAGS, FLAGS, PII_FLAGS
from streams.guard.instructions import instruction_spans
from streams.guard.normalise import normalise

# The kinds each `Span(...)` below raises are declared in `streams.core.flag_kinds` (label,
# description, severity, propagation); `tests/streams/core/test_kinds_registry.py` checks that
# the two name the same kinds.
REDACTED = "[redacted secret]"
# National formats tried besides international (+...) numbers.
PHONE_REGIONS = ("US", "GB", "DE", "FR")

_I = re.IGNORECASE


@dataclass(frozen=True)
class Span:
    flag: str
    start: int
    end: int

    def to_dict(self) -> dict[str, object]:
        return {"flag": self.flag, "start": self.start, "end": self.end}


@dataclass(frozen=True)
class Detection:
    flags: tuple[str, ...]  # in FLAGS order
    spans: tuple[Span, ...]  # by start

    @property
    def blocks_propagation(self) -> bool:
        return any(f in BLOCKING_FLAGS for f in self.flags)


# -- emails ----------------------------------------------------------------------------
_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?![\w-])"
)

# -- IBANs and cards --------------------------------------------------------------------
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){10,30}\b", re.IGNORECASE)
_CARD = re.compile(r"(?<![\w.,-])\d(?:[ -]?\d){12,18}(?![\w]|[.,-]\d)")
# Issuer prefixes (IIN ranges) of the networks in use and their card lengths: Amex,
# Diners, Visa, Mastercard, Maestro, Discover, JCB, UnionPay.
_CARD_NETWORKS = [
    (re.compile(r"^3[47]"), (15,)),
    (re.compile(r"^(?:30[0-5]|36|38)"), (14, 16)),
    (re.compile(r"^4"), (13, 16, 19)),
    (re.compile(r"^(?:5[1-5]|222[1-9]|22[3-9]|2[3-6]|27[01]|2720)"), (16,)),
    (re.compile(r"^(?:5018|5020|5038|6304)"), tuple(range(12, 20))),
    (re.compile(r"^(?:6011|65|64[4-9]|35(?:2[89]|[3-8])|62)"), (16, 17, 18, 19)),
]

# -- secrets ----------------------------------------------------------------------------
_SECRET_SHAPES = re.compile(
    "|".join(
        [
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)",
            r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b",  # AWS access key ids
            # OpenAI, Anthropic
            r"\bsk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,}",
            r"\b(?:sk|rk|pk|whsec)_(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe
            r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",  # GitHub
            r"\bgithub_pat_[A-Za-z0-9_]{22,}",
            r"\bglpat-[A-Za-z0-9_-]{20,}",  # GitLab
            r"\bxox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
            r"\bAIza[0-9A-Za-z_-]{35}\b",  # Google API key
            r"\bya29\.[0-9A-Za-z_-]{20,}",  # Google OAuth token
            r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",  # SendGrid
            r"\bnpm_[A-Za-z0-9]{36}\b",
            r"\bhf_[A-Za-z0-9]{30,}\b",  # Hugging Face
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWT
            re.escape(REDACTED),
        ]
    )
)
_BEARER = re.compile(r"\b(?:Bearer|Basic|Token)\s+([A-Za-z0-9._~+/-]{16,}=*)")
_URL_CREDENTIALS = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]*:([^\s@/]{3,})@", _I)
_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret(?:[ _-]?key)?|client[ _-]?secret|api[ _-]?key"
    r"|apikey|access[ _-]?key(?:[ _-]?id)?|secret[ _-]?access[ _-]?key|auth[ _-]?token"
    r"|access[ _-]?token|refresh[ _-]?token|token|private[ _-]?key|credentials?|pin"
)
# `password = x`, `API_KEY: "x"`, `"token": "x"`: an assignment names the value.
_ASSIGNED = re.compile(
    rf"(?<![A-Za-z])(?:[A-Za-z0-9]+[_-])*(?:{_SECRET_WORDS})(?:[_-][A-Za-z0-9]+)*[\"']?"
    r"\s*(?::=|=>|=|:)\s*"
    r"(?P<value>\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;]{4,})",
    _I,
)
# `the password is hunter2`, `my api key is x`: a value that looks made up, not a word.
_SAID = re.compile(
    rf"\b(?:{_SECRET_WORDS})\s+(?:is|was|=)\s+[\"'`]?(?P<value>[^\s\"'`,;]{{4,}})", _I
)
_PLACEHOLDER = re.compile(
    r"^(?:\*+|x+|\.+|<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_]+%|\{\{[^}]*\}\}"
    r"|null|none|true|false|required|optional|redacted|changeme_placeholder|os\.environ.*"
    r"|env\(.*|getenv\(.*|settings\..*|process\.env\..*)$",
    _I,
)

_MIN_PHONE_DIGITS = 7


def detect(text: str) -> Detection:
    """The flags of `text` and the spans that raised them (on `text` as written)."""
    normalised = normalise(text)
    spans = _detect_spans(normalised.text)
    if normalised.starts is not None:
        spans = [Span(s.flag, *normalised.original_span(s.start, s.end)) for s in spans]
    spans.sort(key=lambda s: (s.start, s.end))
    present = {s.flag for s in spans}
    return Detection(flags=tuple(f for f in FLAGS if f in present), spans=tuple(spans))


def _detect_spans(text: str) -> list[Span]:
    spans: list[Span] = []
    spans += [Span("secret", *m.span()) for m in _SECRET_SHAPES.finditer(text)]
    for pattern in (_BEARER, _URL_CREDENTIALS):
        spans += [Span("secret", *m.span(1)) for m in pattern.finditer(text)]
    for pattern in (_ASSIGNED, _SAID):
        for m in pattern.finditer(text):
            value = m.group("value")
            bare = value.strip("\"'")
            if _PLACEHOLDER.match(bare) or _overlaps(spans, *m.span("value")):
                continue
            if pattern is _SAID and not _looks_made_up(bare):
                continue
            if pattern is _ASSIGNED and not _assigned_value(bare):
                continue
            spans.append(Span("secret", *m.span("value")))
    spans += [
        Span("pii:email", *m.span())
        for m in _EMAIL.finditer(text)
        if not _overlaps(spans, *m.span())  # "redis://:pass@host" is a credential
    ]
    spans += _ibans(text, spans)
    spans += _cards(text, spans)
    spans += _phones(text, spans)
    spans += [Span("instruction", *span) for span in instruction_spans(text)]
    return spans


def redact_secrets(text: str, detection: Detection) -> str:
    """`text` with each secret span replaced by `REDACTED` (overlapping spans merged)."""
    secrets = sorted((s.start, s.end) for s in detection.spans if s.flag == "secret")
    if not secrets:
        return text
    merged: list[list[int]] = []
    for start, end in secrets:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, last = [], 0
    for start, end in merged:
        out.append(text[last:start])
        out.append(text[start:end] if text[start:end] == REDACTED else REDACTED)
        last = end
    out.append(text[last:])
    return "".join(out)


def detect_and_redact(text: str) -> tuple[str, Detection]:
    """The text to store (secrets redacted) and its detection, spans on the stored text."""
    detection = detect(text)
    if "secret" not in detection.flags:
        return text, detection
    redacted = redact_secrets(text, detection)
    return redacted, detect(redacted) if redacted != text else detection


def _overlaps(spans: list[Span], start: int, end: int) -> bool:
    return any(s.start < end and start < s.end for s in spans)


def _looks_made_up(value: str) -> bool:
    """A value that reads like a credential rather than a word ("hunter2", "Xk9!qz")."""
    if len(value) < 6 and not any(c.isdigit() for c in value):
        return False
    kinds = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )
    return kinds >= 2 and not value.rstrip(".").isalpha()


def _assigned_value(value: str) -> bool:
    """An assigned value that is not prose or a code reference ("password: required")."""
    if value.rstrip(".").isalpha() and value.islower() and len(value) < 12:
        return False  # a word: "password: required", "token=none"
    return not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\([^)]*\)", value)


def _ibans(text: str, taken: list[Span]) -> list[Span]:
    found: list[Span] = []
    for m in _IBAN.finditer(text):
        start, candidate = m.start(), m.group()
        # A word after the number may have been taken as its last group: shorten until valid.
        while len(candidate.replace(" ", "")) >= 15:
            if stdnum_iban.is_valid(candidate):
                found.append(Span("pii:iban", start, start + len(candidate)))
                break
            candidate = candidate[:-1].rstrip()
    return [s for s in found if not _overlaps(taken, s.start, s.end)]


def _cards(text: str, taken: list[Span]) -> list[Span]:
    found = []
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        separators = set(re.findall(r"[ -]", m.group()))
        if len(separators) > 1 or not 13 <= len(digits) <= 19:
            continue
        lengths = next((n for prefix, n in _CARD_NETWORKS if prefix.match(digits)), ())
        valid = len(digits) in lengths and luhn.is_valid(digits)
        if valid and not _overlaps(taken, *m.span()):
            found.append(Span("pii:card", *m.span()))
    return found


def _phones(text: str, taken: list[Span]) -> list[Span]:
    if sum(c.isdigit() for c in text) < _MIN_PHONE_DIGITS:
        return []
    found: list[Span] = []
    regions = PHONE_REGIONS if any(c == "0" or c == "(" for c in text) else PHONE_REGIONS[:1]
    for region in regions:
        for match in phonenumbers.PhoneNumberMatcher(
            text, region, leniency=phonenumbers.Leniency.STRICT_GROUPING, max_tries=20
        ):
            start, end = match.start, match.end
            if _overlaps(taken, start, end) or _overlaps(found, start, end):
                continue
            before, after = text[start - 1 : start], text[end : end + 1]
            if (before and (before.isalnum() or before in "-_/#.")) or (
                after and (after.isalnum() or after in "-_/")
            ):
                continue  # part of an id, a path or a version ("ORD-2024-558712")
            found.append(Span("pii:phone", start, end))
    return found


__all__ = [
    "BLOCKING_FLAGS",
    "FLAGS",
    "PII_FLAGS",
    "REDACTED",
    "Detection",
    "Span",
    "detect",
    "detect_and_redact",
    "redact_secrets",
]
