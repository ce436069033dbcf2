"""`create_api_key --name NAME [--agent AGENT_ID ...] [--create-agent] [--permission P ...]`:
the raw key, alone on the last line.

Without `--agent` the key is an admin key: every agent, every permission. With
`--agent`, it has read, write and forget unless `--permission` names its
permissions (repeatable: read, write, forget, review). An `--agent` the store does
not know is refused (a typo would make a key for an empty agent) unless
`--create-agent` asks to create it (or `create_agent` made it first).

Scripts take the key with `tail -n 1`, so nothing may follow it; it is shown
once and stored only as a hash.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_admin.accounts.actions import api_key_create
from memory_admin.models import PERMISSIONS, ApiKey
from streams.actions import Actor
from streams.core.exceptions import Conflict, InvalidInput

MAX_AGENT_ID_CHARS = 128


class Command(BaseCommand):
    help = "Create an API key for agents; prints the key once, alone on the last line."
    requires_system_checks: list[str] = []  # a quick command: the URLconf is not loaded

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="A unique name for the key.")
        parser.add_argument(
            "--agent",
            action="append",
            default=[],
            dest="agents",
            metavar="AGENT_ID",
            help="Limit the key to this agent (repeat for several); none means every agent.",
        )
        parser.add_argument(
            "--create-agent",
            action="store_true",
            help="Create each --agent the store does not know yet (otherwise an error).",
        )
        parser.add_argument(
            "--permission",
            action="append",
            default=None,
            dest="permissions",
            choices=PERMISSIONS,
            help="What an agent-bound key may do (repeat for several); default: read, write "
            "and forget. `review` only when named. A key without --agent has every permission.",
        )

    def handle(
        self,
        *args: Any,
        name: str,
        agents: list[str],
        permissions: list[str] | None = None,
        create_agent: bool = False,
        **options: Any,
    ) -> None:
        name = name.strip()
        if not name or len(name) > (ApiKey._meta.get_field("name").max_length or 0):
            raise CommandError("the name must be 1 to 100 characters")
        for agent_id in agents:
            if not 1 <= len(agent_id) <= MAX_AGENT_ID_CHARS:
                raise CommandError(f"agent ids are 1 to {MAX_AGENT_ID_CHARS} characters")
        try:
            key, raw = api_key_create(
                actor=Actor.cli(),
                name=name,
                agent_ids=agents,
                permissions=permissions,
                create_agents=create_agent,
            )
        except (InvalidInput, Conflict) as exc:
            raise CommandError(exc.message) from exc
        scope = ", ".join(key.agent_ids) if key.agent_ids else "every agent (admin key)"
        granted = ", ".join(key.granted)
        self.stdout.write(
            f"Created API key {key.name!r} for {scope}, may {granted}. It is shown only once:"
        )
        self.stdout.write(raw)
