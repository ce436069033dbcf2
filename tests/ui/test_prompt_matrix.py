"""Prompts reach the model: kind × level × scope type against the recording fake OpenAI server.

For every cell a text is saved at one level, the real call runs (formation, consolidation
run, propagation run) through the real `openai` client, and the test asserts that the
saved text is in the recorded request exactly when the resolver says it is in effect, and
that the scope page's "Prompts in effect" panel says the same source and version.
"""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from memory_admin.jobs.tasks import formation_settings
from streams.actions.jobs import do_propagation_run
from streams.core.exceptions import InvalidInput
from streams.jobs import job_create
from streams.memory.consolidation import consolidation_commit
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.formation import (
    IncomingMessage,
    formation_request,
    formation_run,
    messages_ingest,
)
from streams.memory.scopes import ScopeKey, scope_create, scope_get, scope_get_or_create
from streams.prompts import DEFAULT_TEMPLATES, prompt_save, resolve_for_scope
from tests.factories import ObservationFactory
from tests.task_mode import run_job

pytestmark = pytest.mark.django_db

AGENT = "a1"
GROUPS = [{"id": "g1", "name": "Eden Team"}]
SCOPE_TYPES = ("individual", "group", "collective", "shard")
TEMPLATES = {
    "extraction": "MARK-{level}-extraction. Groups:\n{{groups}}\nCollective:\n{{collective}}\n"
    "Shards:\n{{shards}}\nConversation:\n{{conversation}}",
    "consolidation": "MARK-{level}-consolidation {{scope}}: fold {{observations}} into "
    "{{consolidation}} in {{max_words}} words.",
    "propagation": "MARK-{level}-propagation: share {{observations}} with {{targets}}? JSON "
    '{{{{"observations": []}}}}',
}
GUIDANCE = "MARK-guidance-{scope_type}: only the release dates of the product."
CODE_DEFAULT_MARK = {kind: text.splitlines()[0][:60] for kind, text in DEFAULT_TEMPLATES.items()}


def world(store):
    """User u1 (Gene) in group g1, the collective scope, one shard: every scope type exists."""
    individual, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u1"), defaults={"groups": GROUPS}
    )
    group, _ = scope_get_or_create(
        store=store, key=ScopeKey.group(AGENT, "g1"), display_name="Eden Team"
    )
    collective, _ = scope_get_or_create(store=store, key=ScopeKey.collective(AGENT))
    shard = scope_create(
        store=store,
        key=ScopeKey.collective(AGENT, "releases"),
        extraction_prompt="Release plans.",
    )
    return {"individual": individual, "group": group, "collective": collective, "shard": shard}


def cells():
    """(kind, level, scope type) where a save at that level takes part in the call."""
    for scope_type in SCOPE_TYPES:
        for level in ("code", "agent"):
            for kind in ("extraction", "consolidation"):
                yield kind, level, scope_type
        yield "extraction", "guidance" if scope_type != "individual" else "scope", scope_type
        yield "consolidation", "scope", scope_type
        if scope_type in ("individual", "group"):
            yield from (("propagation", level, scope_type) for level in ("code", "agent", "scope"))


def save(store, kind: str, level: str, scope) -> str | None:
    """Save this level's text (nothing for the code default) and return what to look for."""
    if level == "code":
        return CODE_DEFAULT_MARK[kind]
    if level == "guidance":
        text = GUIDANCE.format(scope_type=scope.scope_type if not scope.is_shard else "shard")
    else:
        text = TEMPLATES[kind].format(level=level)
    entry = prompt_save(
        store=store,
        agent_id=AGENT,
        kind=kind,
        text=text,
        author="op",
        scope_id=None if level == "agent" else scope.id,
    )
    return re.match(r"MARK-[\w-]+", entry.text).group(0)


def run_call(store, fake, kind: str, scope) -> str:
    """Run the real call involving `scope` and return the prompt the model received."""
    fake.reset()
    if kind == "extraction":
        messages_ingest(
            store=store,
            agent_id=AGENT,
            session_id="s1",
            user_id="u1",
            user_name="Gene",
            groups=GROUPS,
            messages=[IncomingMessage(id="m1", role="user", content="Eden ships June 3.")],
            settings=formation_settings(),
        )
        job = formation_request(store=store, agent_id=AGENT, session_id="s1", trigger="manual")
        run_job(
            store=store,
            job_id=job.id,
            work=lambda run: formation_run(store=store, run=run, settings=formation_settings()),
        )
    elif kind == "consolidation":
        # A memory stating the observation (the checks refuse one that leaves it out).
        fake.set_responder(lambda r: "Eden ships June 3." if r.task == kind else "{}")
        ObservationFactory.create(store=store, scope=scope, content="Eden ships June 3.")
        fresh = scope_get(store=store, scope_id=scope.id)
        job = consolidation_request(store=store, scope=fresh, trigger="manual", actor=None)
        run_job(
            store=store, job_id=job.id, work=lambda run: consolidation_run(store=store, run=run)
        )
    else:
        observation = ObservationFactory.create(
            store=store, scope=scope, content="Eden ships June 3."
        )
        fresh = scope_get(store=store, scope_id=scope.id)
        entry = consolidation_commit(
            store=store,
            scope=fresh,
            expected_version=fresh.consolidation_version,
            text="Eden ships June 3.",
            absorbed_ids=[observation.id],
            trigger="manual",
            actor=None,
        )
        job = job_create(
            store=store,
            kind="propagation",
            agent_id=AGENT,
            scope_id=scope.id,
            trigger="test",
            payload={"version": entry.version},
        )
        run_job(store=store, job_id=job.id, work=lambda r: do_propagation_run(store=store, run=r))
    [request] = [r for r in fake.chat_requests if r.task == kind]
    return request.body["messages"][-1]["content"]


def page_rows(client, scope) -> list[dict[str, str]]:
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    rows = re.findall(r'<tr class="prompt-part" ([^>]*)>', page)
    return [dict(re.findall(r'data-([a-z-]+)="([^"]*)"', html.unescape(row))) for row in rows]


@pytest.mark.parametrize("kind,level,scope_type", list(cells()))
def test_the_saved_text_reaches_the_model_exactly_when_the_resolver_says(
    kind, level, scope_type, store, fake_openai, client_as
):
    scopes = world(store)
    scope = scopes[scope_type]
    mark = save(store, kind, level, scope)
    scope = scope_get(store=store, scope_id=scope.id)
    resolved = resolve_for_scope(store=store, scope=scope)[kind]
    assert resolved is not None
    part = resolved.guidance[0] if level == "guidance" else resolved.template
    expected_source = {"code": "default", "agent": "agent", "scope": "scope", "guidance": "scope"}
    assert part.source == expected_source[level] and part.in_effect

    prompt = run_call(store, fake_openai, kind, scope)
    assert (mark in prompt) == part.in_effect
    assert mark in part.text

    rows = page_rows(client_as("viewer"), scope)
    role = "guidance" if level == "guidance" else "template"
    [row] = [r for r in rows if r["kind"] == kind and r["role"] == role]
    assert row["source"] == part.source
    assert row["version"] == (str(part.version) if part.version else "")
    assert row["in-effect"] == "yes"


@pytest.mark.parametrize("scope_type", ["group", "collective", "shard"])
def test_guidance_a_template_has_no_section_for_is_not_sent_and_the_page_says_so(
    scope_type, store, fake_openai, client_as
):
    scope = world(store)[scope_type]
    mark = save(store, "extraction", "guidance", scope)
    prompt_save(
        store=store,
        agent_id=AGENT,
        kind="extraction",
        text="MARK-bare: extract from {conversation}",
        author="op",
    )
    scope = scope_get(store=store, scope_id=scope.id)
    [part] = resolve_for_scope(store=store, scope=scope)["extraction"].guidance
    assert not part.in_effect and "no {" in part.note
    assert mark not in run_call(store, fake_openai, "extraction", scope)
    [row] = [
        r
        for r in page_rows(client_as("viewer"), scope)
        if r["kind"] == "extraction" and r["role"] == "guidance"
    ]
    assert row["in-effect"] == "no"


def test_a_scope_override_shadows_the_agent_default_in_the_request_and_on_the_page(
    store, fake_openai, client_as
):
    scopes = world(store)
    client = client_as("viewer")
    for kind in ("extraction", "consolidation", "propagation"):
        agent_mark = save(store, kind, "agent", None)
        scope_mark = save(store, kind, "scope", scopes["individual"])
        scope = scope_get(store=store, scope_id=scopes["individual"].id)
        part = resolve_for_scope(store=store, scope=scope)[kind].template
        assert part.source == "scope" and part.version == 1
        prompt = run_call(store, fake_openai, kind, scope)
        assert scope_mark in prompt and agent_mark not in prompt
        [row] = [
            r for r in page_rows(client, scope) if r["kind"] == kind and r["role"] == "template"
        ]
        assert (row["source"], row["version"]) == ("scope", "1")


@pytest.mark.parametrize("scope_type", ["collective", "shard"])
def test_the_collective_memory_has_no_propagation_prompt(scope_type, store, client_as):
    scope = world(store)[scope_type]
    with pytest.raises(InvalidInput, match="does not propagate"):
        save(store, "propagation", "scope", scope)
    assert resolve_for_scope(store=store, scope=scope)["propagation"] is None
    [row] = [r for r in page_rows(client_as("viewer"), scope) if r["kind"] == "propagation"]
    assert row["role"] == "none"
