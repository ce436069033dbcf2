"""The templates this issue added carry no inline script, handler or style attribute, so a
Content-Security-Policy allowing only 'self' scripts and styles does not break them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
ADDED = [
    "base.html",
    "ui/_scope_head.html",
    "ui/_scope_usage.html",
    "ui/_top_scopes.html",
    "ui/_usage_numbers.html",
    "ui/_people_tabs.html",
    "ui/job_detail.html",
    "ui/people.html",
    "ui/person_deactivate.html",
    "ui/api_keys.html",
    "ui/api_key_revoke.html",
    "ui/agents.html",
    "ui/usage.html",
    "ui/user_audit.html",
    "ui/_search_result.html",
]
INLINE = re.compile(r"""style=|<script>|<script(?![^>]*\bsrc=)[^>]*>|\son[a-z]+=""", re.I)


@pytest.mark.parametrize("name", ADDED)
def test_no_inline_script_or_style(name: str) -> None:
    text = (TEMPLATES / name).read_text()
    assert not INLINE.search(text), INLINE.search(text)
