"""`create_agent AGENT_ID`: add an agent before it has spoken (audited as `cli`).

Agents also appear on their first conversation; this is for making a key or opening
its pages first. `create_api_key --agent` refuses an agent nobody created (a typo
would make a key for an empty agent) unless it is given `--create-agent`.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_admin.stores import get_store
from streams.actions import Actor
from streams.actions.agents import do_agent_create
from streams.core.exceptions import Conflict, InvalidInput


class Command(BaseCommand):
    help = "Create an agent (an id of 1 to 128 characters); an existing one is an error."
    requires_system_checks: list[str] = []  # a quick command: the URLconf is not loaded

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent_id", help="The agent's id, as the API's URLs carry it.")

    def handle(self, *args: Any, agent_id: str, **options: Any) -> None:
        try:
            agent = do_agent_create(store=get_store(), actor=Actor.cli(), agent_id=agent_id)
        except (InvalidInput, Conflict) as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"Created agent {agent.id!r}.")
