"""What every page's layout needs: navigation for the user's role and the active LLM provider."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse

from memory_admin.ui.roles import Role, request_role

OFFLINE_PROVIDER = "offline"


@dataclass(frozen=True)
class NavItem:
    label: str
    url_name: str
    minimum: Role
    section: tuple[str, ...] = ()  # other views under this item (it shows as active there)


# Only pages that exist are listed; Search and Audit join as they land.
NAV_ITEMS: tuple[NavItem, ...] = (
    NavItem("Dashboard", "ui:dashboard", Role.VIEWER),
    NavItem(
        "Scopes",
        "ui:scopes",
        Role.VIEWER,
        ("ui:scope_", "ui:consolidation", "ui:observation", "ui:consolidate"),
    ),
    NavItem("Prompts", "ui:prompts", Role.VIEWER, ("ui:prompt_",)),
    NavItem("Search", "ui:search", Role.VIEWER),
    NavItem("Chat", "ui:playground", Role.OPERATOR, ("ui:playground_",)),  # the playground
    NavItem("Review", "ui:review", Role.VIEWER),
    NavItem("Jobs", "ui:jobs", Role.VIEWER, ("ui:job_",)),
    NavItem("Users", "ui:user_audit", Role.VIEWER, ("ui:user_",)),
    NavItem("Audit", "ui:audit_log", Role.VIEWER),
    NavItem("Usage", "ui:usage", Role.VIEWER),
    # People and their API keys share one item (tabs on both pages), to keep the bar short.
    NavItem("People", "ui:people", Role.ADMIN, ("ui:person_", "ui:api_key")),
)


def navigation(request: HttpRequest) -> dict[str, Any]:
    """Context for `base.html`: the role, the links that role may open, the LLM provider.

    The offline provider is a rule-based demo, so the layout flags it on every page
    rather than let anyone mistake its output for a real model's.
    """
    role = request_role(request)
    current = getattr(getattr(request, "resolver_match", None), "view_name", None)
    nav_items = [
        {
            "label": item.label,
            "href": reverse(item.url_name),
            "active": item.url_name == current
            or any((current or "").startswith(prefix) for prefix in item.section),
        }
        for item in NAV_ITEMS
        if role is not None and role >= item.minimum
    ]
    provider = settings.MEMORY_LLM_PROVIDER
    return {
        "user_role": role.label if role else None,
        "nav_items": nav_items,
        "llm_provider": provider,
        "llm_is_offline": provider == OFFLINE_PROVIDER,
    }
