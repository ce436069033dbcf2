"""Text as the context XML holds it: escaped, without the characters XML 1.0 refuses.

Shared by the context's assembly (which writes it) and the context log's scrub (which
looks for the same escaped text in what was logged), so the two can never disagree.
"""

from __future__ import annotations

import re
from xml.sax.saxutils import escape, quoteattr

INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def xml_text(value: str | None) -> str:
    """A text as an element of the context XML holds it."""
    return escape(INVALID_XML.sub("", (value or "").strip()))


def xml_attr(value: str) -> str:
    """A value as an attribute of the context XML holds it (quotes included)."""
    return quoteattr(INVALID_XML.sub("", value))
