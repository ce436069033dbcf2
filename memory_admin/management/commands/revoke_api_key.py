"""`revoke_api_key NAME`: the key stops authenticating at once; the row stays for the record."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_admin.accounts.actions import api_key_revoke
from memory_admin.models import ApiKey
from streams.actions import Actor


class Command(BaseCommand):
    help = "Revoke an API key by name (it answers 401 from then on)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The key's name, as given to create_api_key.")

    def handle(self, *args: Any, name: str, **options: Any) -> None:
        key = ApiKey.objects.filter(name=name).first()
        if key is None:
            raise CommandError(f"no API key named {name!r}")
        if not key.is_active:
            self.stdout.write(f"API key {name!r} was already revoked on {key.revoked_at:%Y-%m-%d}")
            return
        api_key_revoke(actor=Actor.cli(), key=key)
        self.stdout.write(f"Revoked API key {name!r}")
