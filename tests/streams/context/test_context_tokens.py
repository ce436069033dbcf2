"""Tokens per section of the context XML, for the search inspector."""

from __future__ import annotations

from streams.context.tokens import context_sections, estimate_tokens

XML = (
    "<MemoryContext>"
    '<CollectiveMemory>All users like short answers.<Shard name="bugs">Safari crashes.</Shard>'
    "</CollectiveMemory>"
    '<UserMemory user="Gene">' + "Gene likes tea. " * 20 + "</UserMemory>"
    "</MemoryContext>"
)


def test_each_section_and_nested_shard_gets_its_tokens_and_share():
    rows = context_sections(XML)
    assert [(r.name, r.label, r.depth) for r in rows] == [
        ("CollectiveMemory", "", 0),
        ("Shard", "bugs", 1),
        ("UserMemory", "Gene", 0),
    ]
    user = rows[2]
    assert user.tokens == estimate_tokens(
        '<UserMemory user="Gene">' + "Gene likes tea. " * 20 + "</UserMemory>"
    )
    assert user.share > 70 and rows[0].share + user.share <= 100


def test_text_that_is_not_xml_is_one_row():
    [row] = context_sections("not <xml")
    assert (row.name, row.share) == ("context", 100.0)
