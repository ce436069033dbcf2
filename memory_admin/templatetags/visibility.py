"""`shown`: an observation as a page may show it, through the one visibility rule
(`streams.core.visibility`): its words, or "removed" with why, who and when."""

from __future__ import annotations

from django import template

from streams.core.documents import Observation
from streams.core.visibility import Shown, shown

register = template.Library()


@register.filter(name="shown")
def shown_filter(observation: Observation) -> Shown:
    return shown(observation)
