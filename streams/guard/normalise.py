"""The form of a text the detectors read: NFKC, without zero-width or format characters.

A fullwidth address (`ｇｅｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ`), one with a zero-width space inside
(`gene@exam\u200bple.com`) or a key split by soft hyphens reads to a person (and to a
model) as the plain form, so the detectors must read that form too. The text stored is
not changed here: `Normalised.original_span` maps a span found on the normalised form back
onto the text as written, so that flags point at, and redaction replaces, what the writer
sent. Case is folded where a checksum needs it (IBANs), by the detector that checks it.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

# Invisible characters a writer can slip inside a word: zero-width space, joiners,
# word joiner, BOM, soft hyphen, Mongolian vowel separator, and every other format
# character (category Cf: bidi controls, invisible operators), except the tag characters,
# which are read as the ASCII they spell.
_INVISIBLE = frozenset({"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e"})


@dataclass(frozen=True)
class Normalised:
    """`text` as the detectors read it, and where each of its characters came from."""

    text: str
    starts: tuple[int, ...] | None  # per character of `text`: its origin's start; None: same
    ends: tuple[int, ...] | None

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that `text[start:end]` was made from."""
        if self.starts is None or self.ends is None or end <= start:
            return start, end
        return self.starts[start], self.ends[end - 1]


def _invisible(ch: str) -> bool:
    return ch in _INVISIBLE or (unicodedata.category(ch) == "Cf" and _tag(ch) is None)


def _tag(ch: str) -> str | None:
    """The ASCII letter a Unicode tag character spells (U+E0020-U+E007E: invisible text
    that a model still reads, "ASCII smuggling"), else None."""
    code = ord(ch)
    return chr(code - 0xE0000) if 0xE0020 <= code <= 0xE007E else None


def normalise(text: str) -> Normalised:
    """NFKC per character cluster (a base and its combining marks), invisibles dropped."""
    if text.isascii():
        return Normalised(text, None, None)  # most texts: nothing to map
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i, n = 0, len(text)
    while i < n:
        if _invisible(text[i]):
            i += 1
            continue
        j = i + 1
        while j < n and (unicodedata.combining(text[j]) or _invisible(text[j])):
            j += 1
        cluster = "".join(c for c in text[i:j] if not _invisible(c))
        tag = _tag(cluster)
        for ch in tag or unicodedata.normalize("NFKC", cluster):
            out.append(ch)
            starts.append(i)
            ends.append(j)
        i = j
    folded = "".join(out)
    if folded == text:
        return Normalised(text, None, None)
    return Normalised(folded, tuple(starts), tuple(ends))


__all__ = ["Normalised", "normalise"]
