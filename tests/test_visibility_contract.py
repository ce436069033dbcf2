"""No page prints an observation's text around the visibility rule (issue 37).

A template that prints `<observation>.content` directly must be one of the surfaces that
only ever get observations the rule lets through (listed with why); every other page
renders `o|shown` (`memory_admin/templatetags/visibility.py`). A planted template proves
the check finds a new one."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
RAW_CONTENT = re.compile(r"\{\{\s*[\w.]*\b(o|observation|obs|hit\.observation)\.content\b")
# Each prints live or held (review) observations only; a removed one never reaches it.
ALLOWED = {
    "ui/_pending.html": "the scope's pending list: live observations",
    "ui/_review_list.html": "the review queue: held observations, shown to staff to decide",
    "ui/_search_result.html": "search hits: live observations",
    "ui/observation_bulk.html": "the bulk preview: observations not deleted (the filter)",
    "ui/observation_delete.html": "the delete confirmation of a live observation",
    "ui/observation_history.html": "earlier texts of a live one: purged on delete",
}
MUST_USE_THE_RULE = (
    "ui/_user_observation_row.html",
    "ui/_user_related.html",
    "ui/_observation_row.html",
    "ui/_chat_calls.html",
)


def raw_printers(root: Path) -> set[str]:
    return {
        str(path.relative_to(root))
        for path in root.rglob("*.html")
        if RAW_CONTENT.search(path.read_text())
    }


def test_only_listed_templates_print_an_observations_text_directly() -> None:
    assert raw_printers(TEMPLATES) - set(ALLOWED) == set()


def test_the_pages_that_show_removed_observations_render_them_through_the_rule() -> None:
    for name in MUST_USE_THE_RULE:
        text = (TEMPLATES / name).read_text()
        assert "|shown" in text or "item.observation" in text and "s.removed" in text, name
        assert not RAW_CONTENT.search(text), name


def test_a_planted_template_that_prints_the_text_is_found(tmp_path: Path) -> None:
    (tmp_path / "ui").mkdir()
    (tmp_path / "ui" / "_new_list.html").write_text("<td>{{ row.o.content }}</td>")
    (tmp_path / "ui" / "_fine.html").write_text("<td>{{ s.text }}</td>")
    assert raw_printers(tmp_path) == {"ui/_new_list.html"}
