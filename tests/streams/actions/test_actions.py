"""The actions' shared parts: how an actor is named, and handing jobs to the runner."""

from __future__ import annotations

import pytest

from streams.actions import Actor, schedule
from streams.core.documents import Job


def test_an_actor_is_named_as_the_log_names_it():
    assert [str(Actor.api("ci-key")), str(Actor.ui("olivia")), str(Actor.cli())] == [
        "api:ci-key",
        "ui:olivia",
        "cli",
    ]


def test_scheduled_jobs_go_to_the_registered_dispatcher(monkeypatch):
    handed: list[list[Job]] = []
    monkeypatch.setattr("streams.actions.base._dispatcher", handed.append)
    job = Job(kind="consolidation", agent_id="a1")
    schedule([])
    schedule([job])
    assert handed == [[job]]  # nothing is dispatched for an action that started no job


def test_django_registers_its_task_queue_as_the_dispatcher(monkeypatch):
    """Through a wrapper that imports the task queue on the first job (start-up cost)."""
    from memory_admin import apps
    from streams.actions import base

    assert base._dispatcher is apps.dispatch_jobs
    handed: list[list[Job]] = []
    monkeypatch.setattr("memory_admin.jobs.tasks.enqueue_all", handed.append)
    job = Job(kind="consolidation", agent_id="a1")
    base._dispatcher([job])
    assert handed == [[job]]


def test_an_actor_reads_back_from_its_stored_name():
    for actor in (Actor.api("support"), Actor.ui("olivia"), Actor.cli()):
        assert Actor.parse(str(actor)) == actor
    assert str(Actor.parse("api")) == "api"  # a chat job queued before keys were named
    with pytest.raises(ValueError):
        Actor.parse("bench")
