"""docs/kinds.md is generated from the registries of kinds (`manage.py kinds_docs`): this
fails when a registry changed and the page was not regenerated."""

from __future__ import annotations

from memory_admin.management.commands.kinds_docs import DOC, render_kinds_doc
from streams.core.flag_kinds import FLAG_KINDS


def test_the_kinds_page_is_what_the_registries_say():
    assert DOC.read_text(encoding="utf-8") == render_kinds_doc(), (
        "docs/kinds.md is stale: run `python manage.py kinds_docs`"
    )


def test_a_changed_registry_makes_the_page_stale(monkeypatch):
    from dataclasses import replace

    from memory_admin.management.commands import kinds_docs

    changed = (replace(FLAG_KINDS[0], label="e-mail address"), *FLAG_KINDS[1:])
    monkeypatch.setattr(kinds_docs, "FLAG_KINDS", changed)
    assert DOC.read_text(encoding="utf-8") != render_kinds_doc()
