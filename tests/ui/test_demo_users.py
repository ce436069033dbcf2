"""On a fresh install the demo's users have groups, sessions whose messages their
observations cite, and the Users page says what each search row is for."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

pytestmark = pytest.mark.django_db

AGENT = "support-assistant"


def test_a_demo_user_shows_groups_sessions_and_labelled_searches(client_as, store):
    call_command("seed_demo")
    client = client_as("operator")
    query = {"agent": AGENT, "user": "user-gene"}
    page = client.get(reverse("ui:user_audit"), query).content.decode()

    # Two search rows, each labelled with what it does.
    assert '<label for="id_find" class="filter-label">Find a user by name' in page
    assert '<label for="id_open_agent" class="filter-label">Or open a user by agent' in page

    # The user's groups, on the page and in the export.
    assert "groups: Eden Team" in page
    export = json.loads(client.get(reverse("ui:user_export"), query).content)
    own = export["scopes"][0]
    assert own["scope_type"] == "individual"
    assert own["settings"]["groups"] == [{"id": "eden-team", "name": "Eden Team"}]

    # What they said in the Eden Team's group sessions shows as theirs too.
    assert "Nothing from this user in group or collective memories." not in page
    assert "The Eden Team" in page

    # Session ids are links to the session page, which shows the messages cited.
    links = re.findall(r'href="(/agents/support-assistant/sessions/[^"]+/)"', page)
    assert links, "no session link on the Users page"
    session = client.get(links[0])
    html = session.content.decode()
    assert session.status_code == 200 and 'id="session-messages"' in html
    assert 'class="messages"' not in html  # not mistaken for the page's flash messages
    assert html.count("data-message-id=") >= 2
    session_id = links[0].rstrip("/").rsplit("/", 1)[-1]
    cited = [o for o in own["observations"] if o["source_session_id"] == session_id]
    assert cited and all(f'data-message-id="{m}"' in html for m in cited[0]["source_message_ids"])


def test_the_session_page_takes_any_session_id(client_as, store):
    """A session id is the caller's text: a slash or a space still makes a working link."""
    client = client_as("viewer")
    url = reverse("ui:session_detail", args=["a1", "team/room 7"])
    response = client.get(url)
    assert response.status_code == 200
    assert "team/room 7" in response.content.decode()
