"""Shrunk counterexamples the every-path machine found at budgets larger than CI's, kept
as plain sequences of its rules so that they stay fixed whatever the seed draws next
(docs/every-path.md). Each runs the rules in order, then every invariant."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from memory_admin.models import ApiKey
from tests.api.conftest import bearer_client
from tests.every_path.invariants import INVARIANTS
from tests.every_path.world import Http, Receiver, copying_model
from tests.test_every_path import EveryPath
from tests.ui.people import create_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def machine(db, fake_openai, run_tasks, settings, client, django_user_model) -> Iterator[EveryPath]:
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = True
    settings.MEMORY_WEBHOOK_TIMEOUT_SECONDS = 2
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    fake_openai.set_responder(copying_model)
    client.force_login(create_user(django_user_model, username="regression-admin", role="admin"))
    receiver = Receiver().start()
    EveryPath.http = Http(
        api=bearer_client(ApiKey.generate(name="every-path", agent_ids=[])[1]),
        ui=client,
        tasks=run_tasks,
    )
    EveryPath.receiver = receiver
    try:
        yield EveryPath()
    finally:
        receiver.stop()


def _run(machine: EveryPath, steps: list[Callable[[EveryPath], None]]) -> None:
    machine.setup()
    for step in steps:
        step(machine)
        for name in INVARIANTS:
            machine.check(name)


def test_a_held_edit_of_a_deleted_observation_shows_no_removed_text(machine: EveryPath):
    """Found at 40 x 40: an edit of a shared observation is held (a copy naming the
    original), a bulk delete removes the original; the UI scope page and the Users page
    still printed the original's words beside the held edit."""
    _run(
        machine,
        [
            lambda m: m.edit(kind="phone", pick=19),
            lambda m: m.import_(claimed="pending", kind="plain", pick=0),
            lambda m: m.bulk(action="delete", pick=51),
        ],
    )


def test_a_held_edit_goes_with_the_observation_a_single_delete_removes(machine: EveryPath):
    """The same through `DELETE /observations/{id}`: the held edit leaves with it."""
    _run(
        machine,
        [
            lambda m: m.edit(kind="phone", pick=19),
            lambda m: m.delete(pick=51),
        ],
    )
    status, queue = machine.http.read(f"/agents/{machine.agent}/review", {"limit": 200})
    assert status == 200, queue
    assert not [o for o in queue["items"] if (o.get("review") or {}).get("edit_of")]
