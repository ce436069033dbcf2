""" "Why did the agent say that?": an agent chats through the endpoint (the real `openai`
client, the fake OpenAI server upstream); an operator finds the user's calls in the search
inspector, opens the session, reads what was injected, and pages back without a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streams.store import MemoryStore
from tests.browser.test_journeys import _sign_in
from tests.chat_support import AGENT, MEMORY, chat_clients, chat_key, upstream
from tests.eventually import eventually
from tests.factories import ObservationFactory, ScopeFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]
__all__ = ["chat_clients", "chat_key", "upstream"]  # fixtures, imported for this module


def test_operator_follows_a_chat_call_from_the_inspector_to_its_session(
    live_server,
    page,
    store: MemoryStore,
    make_user,
    chat_clients: Any,
    upstream: FakeOpenAI,
    artifacts_dir: Path,
    settings,
    monkeypatch,
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    monkeypatch.setattr("memory_admin.ui.sessions.PAGE_SIZE", 1)
    scope = ScopeFactory.create(store=store, agent_id=AGENT, user_id="u-gene", display_name="Gene")
    ObservationFactory.create(store=store, scope=scope, content="Gene maintains the Rust parser.")
    for n in range(10):
        ObservationFactory.create(store=store, scope=scope, content=f"Gene fed the cat {n}.")

    client = chat_clients()
    upstream.reply("Good morning, Gene.")
    client.chat.completions.create(
        model="memory-gpt",
        messages=[{"role": "user", "content": "good morning"}],
        metadata=MEMORY,
    )
    stream = client.chat.completions.create(
        model="memory-gpt",
        messages=[{"role": "user", "content": "what did I tell you about the Rust parser?"}],
        metadata=MEMORY,
        stream=True,
    )
    answer = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert answer
    calls: Any = eventually(
        lambda: store.chat_calls.for_session(
            agent_id=AGENT, session_id="s-1", before=None, limit=5
        ),
        until=lambda found: len(found) == 2,
    )
    recall, greeting = calls

    make_user("viewer", username="vera")
    _sign_in(page, live_server, "vera")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/search/?agent={AGENT}&user=u-gene&message=Rust+parser")
    panel = page.locator("#user-chat-calls")
    panel.wait_for()
    assert panel.locator("tr[data-call-id]").count() == 2
    assert "fired: 1 retrieved" in panel.inner_text()
    page.screenshot(path=str(artifacts_dir / "chat_inspector.png"), full_page=True)

    panel.locator(f'tr[data-call-id="{recall["_id"]}"] a').click()
    page.wait_for_url(f"{live_server.url}/agents/{AGENT}/sessions/s-1/")
    row = page.locator(f'tr[data-call-id="{recall["_id"]}"]')
    assert row.locator("[data-memory]").inner_text() == "injected"
    assert row.locator("[data-context-tokens]").inner_text() == str(recall["context_tokens"])
    assert "recall phrase" in row.locator("[data-retrieval-reason]").inner_text()
    assert "Gene maintains the Rust parser." in row.inner_text()
    page.locator("summary", has_text="Context injected").click()
    xml = page.locator("pre.context-xml").first
    xml.wait_for()
    assert "<RetrievedObservations>" in xml.inner_text()
    page.screenshot(path=str(artifacts_dir / "chat_session.png"), full_page=True)

    page.evaluate("window.__notReloaded = true")
    page.click("a[rel=next]")
    page.locator(f'tr[data-call-id="{greeting["_id"]}"]').wait_for()
    assert page.evaluate("window.__notReloaded === true")  # htmx swapped the list only
    assert page.locator(f'tr[data-call-id="{recall["_id"]}"]').count() == 0
    assert "cursor=" in page.url  # the page's URL follows, so it can be shared
