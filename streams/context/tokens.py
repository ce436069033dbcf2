"""How much of the memory context each XML section takes, in (estimated) tokens.

The context is sent with every message, so operators keep it small; they need to see
which section grows (Letta shows the same breakdown). Tokens are estimated at about
four characters per token, the rule the offline provider uses; a real tokenizer
would differ by a few percent, which does not change which section is largest.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

CHARS_PER_TOKEN = 4
LABEL_ATTRIBUTES = ("name", "group", "user", "id")


@dataclass(frozen=True)
class ContextSection:
    name: str  # the element: "UserMemory", "Shard", ...
    label: str  # its name/group/user attribute, if any
    depth: int  # 0 for a section of the context, 1 for one nested in it
    tokens: int
    share: float  # of the whole context, 0..100


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def context_sections(xml: str) -> list[ContextSection]:
    """One row per section of the context (and per section nested one level inside)."""
    total = max(estimate_tokens(xml), 1)
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return [ContextSection("context", "", 0, estimate_tokens(xml), 100.0)]
    rows: list[ContextSection] = []
    for child in root:
        rows.append(_row(child, 0, total))
        # A marked observation (`<Observation flag="instruction">`) is a line, not a section.
        rows.extend(_row(g, 1, total) for g in child if g.tag != "Observation")
    return rows


def _row(element: ET.Element, depth: int, total: int) -> ContextSection:
    tokens = estimate_tokens(ET.tostring(element, encoding="unicode"))
    label = next((element.get(a, "") for a in LABEL_ATTRIBUTES if element.get(a)), "")
    return ContextSection(element.tag, label, depth, tokens, round(100 * tokens / total, 1))
