"""`origin_label`: how an observation got into its scope, in words, for the pages that
show its provenance (extraction and propagation show their session or source instead)."""

from __future__ import annotations

from django import template

from streams.core.documents import Observation, observation_origin

register = template.Library()

LABELS = {
    "api": "added through the API",
    "operator": "added by hand",
    "import": "imported",
    "move": "moved from another scope",
    "migration": "migrated from the legacy table",
    "edit": "an edit waiting for review",
}


@register.filter(name="origin")
def origin_filter(observation: Observation) -> str:
    return observation_origin(observation)


@register.filter(name="origin_label")
def origin_label(observation: Observation) -> str:
    """The words for its origin with who added it; "" for extraction and propagation."""
    label = LABELS.get(observation_origin(observation), "")
    if label and observation.added_by and not observation.added_by.startswith("model:"):
        label += f" by {observation.added_by}"
    return label
