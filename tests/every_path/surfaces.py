"""Read every surface of one agent after a step: API answers (scopes, consolidations and
their history, observation lists, search, context, corrections), exports, UI pages
(the prompt pages' corrections too), webhook bodies."""

from __future__ import annotations

import json
import re
from typing import Any

from django.urls import reverse

from tests.every_path.ledger import SHARED, Snapshot
from tests.every_path.world import GROUP_ID, GROUP_NAME, USERS, Http, Receiver, walk_pages

_PRIVATE_SECTIONS = re.compile(
    r"<UserMemory\b.*?</UserMemory>|<RetrievedObservations>.*?</RetrievedObservations>", re.S
)
RECALL = "what did I tell you to remember?"


def scope_kind(scope: dict[str, Any]) -> str:
    """individual, group, collective or shard (a named collective scope)."""
    if scope["scope_type"] == "collective" and scope.get("name"):
        return "shard"
    return scope["scope_type"]


def memory_tool_answer(agent_id: str, user_id: str, name: str) -> str:
    """What the chat proxy's `search_memory` tool gives the model for this user (the
    model's call answered in process, as the proxy answers it)."""
    from memory_admin.stores import get_store
    from streams.context.chat import ChatMemory
    from streams.context.chat_tool import TOOL_NAME, answer_tool_call

    memory = ChatMemory(
        user_id=user_id, session_id="every-path", user_name=name, groups=((GROUP_ID, GROUP_NAME),)
    )
    arguments = json.dumps({"query": "remember", "limit": 10})
    call = {"id": "call-every-path", "function": {"name": TOOL_NAME, "arguments": arguments}}
    message, _ = answer_tool_call(
        store=get_store(), agent_id=agent_id, memory=memory, call=call, round_number=1
    )
    return message["content"]


def deliver_webhooks(receiver: Receiver, *, step: float) -> None:
    """Send the deliveries due now; the receiver files what arrives under `step`."""
    from memory_admin.integrations.webhooks import deliver_due
    from memory_admin.stores import get_store

    receiver.step = step
    for _ in range(3):  # a delivery can make another due (a retry); bounded
        if not deliver_due(get_store()).get("delivered"):
            break


def collect(*, http: Http, agent_id: str, step: int, receiver: Receiver) -> Snapshot:
    """One snapshot; webhooks due are delivered first, so their bodies are in it."""
    snap = Snapshot(step=step)
    deliver_webhooks(receiver, step=step)
    snap.webhooks = list(receiver.bodies)
    scopes = list(walk_pages(http, f"/agents/{agent_id}/scopes", {}))
    snap.add("GET scopes", scopes)
    for scope in scopes:
        kind = scope_kind(scope)
        shared = kind in SHARED
        sid = scope["id"]
        label = f"{kind} scope"
        snap.add(
            f"{label}: consolidation and pins",
            [scope.get("consolidation"), scope["pins"]],
            shared=shared,
        )
        snap.pins[sid] = list(scope["pins"])
        history = list(walk_pages(http, f"/scopes/{sid}/consolidations", {}))
        snap.add(f"{label}: GET consolidations (history)", history)
        observations = list(
            walk_pages(
                http, f"/scopes/{sid}/observations", {"status": "all", "include_superseded": "true"}
            )
        )
        snap.observations += observations
        snap.add(f"{label}: GET observations?status=all&include_superseded", observations)
        status, export = http.read(f"/scopes/{sid}/export", {"format": "json"})
        snap.add(f"{label}: scope export", export)
        status, page = http.page(reverse("ui:scope_detail", args=[sid]))
        snap.add(f"{label}: UI scope page", page)
    groups = [{"id": GROUP_ID, "name": GROUP_NAME}]
    for user_id, name in USERS.items():
        body = {"user_id": user_id, "user_name": name, "groups": groups, "message": RECALL}
        status, answer = http.post_read(f"/agents/{agent_id}/context", body)
        if status == 200:
            snap.add(f"context for {user_id}", answer)
            shared_xml = _PRIVATE_SECTIONS.sub("", answer["context"])
            snap.add(f"context for {user_id}: shared sections", shared_xml, shared=True)
            shared_hits = [
                r["observation"]["content"]
                for r in answer["retrieval"]["results"]
                if r["observation"]["scope_id"]
                in {s["id"] for s in scopes if scope_kind(s) in SHARED}
            ]
            snap.add(f"context for {user_id}: shared retrieved", shared_hits, shared=True)
        else:
            snap.add(f"context for {user_id} ({status})", answer)
        status, hits = http.read(
            f"/agents/{agent_id}/search", {"q": "remember", "user_id": user_id, "limit": 50}
        )
        snap.add(f"search for {user_id}", hits)
        snap.add(f"chat memory tool for {user_id}", memory_tool_answer(agent_id, user_id, name))
        status, export = http.read(f"/agents/{agent_id}/users/{user_id}/export", {"format": "json"})
        snap.add(f"export of {user_id}", export)
        status, page = http.page(reverse("ui:user_audit"), {"agent": agent_id, "user": user_id})
        snap.add(f"UI user page of {user_id}", page)
    # Corrections hold memory text: the API list of each prompt kind and the prompt page.
    for kind in ("extraction", "propagation"):
        corrections = list(walk_pages(http, f"/agents/{agent_id}/corrections", {"kind": kind}))
        snap.add(f"GET corrections ({kind})", corrections)
        status, page = http.page(reverse("ui:prompt_edit", args=[agent_id, kind]))
        snap.add(f"UI {kind} prompt page (corrections)", page)
    status, hits = http.read(f"/agents/{agent_id}/search", {"q": "remember", "limit": 50})
    snap.add("search of shared scopes", hits, shared=True)
    status, page = http.page(reverse("ui:review"), {"agent": agent_id})
    snap.add("UI review page", page)
    status, page = http.page(
        reverse("ui:search"), {"agent": agent_id, "user": "u1", "message": RECALL}
    )
    snap.add("UI search page", page)
    return snap
