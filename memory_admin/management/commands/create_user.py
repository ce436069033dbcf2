"""`create_user NAME --role operator [--email E] [--password-stdin]`: a staff account for scripts.

Without `--password-stdin` a one-time password is generated and printed alone on the
last line (take it with `tail -n 1`), as `create_api_key` does with keys.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_admin.accounts.actions import ROLE_NAMES, user_create
from streams.actions import Actor
from streams.core.exceptions import Conflict, InvalidInput


class Command(BaseCommand):
    help = "Create a person who can sign in to the admin, in one role (viewer/operator/admin)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLE_NAMES)
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="Read the password from standard input instead of generating one.",
        )

    def handle(
        self, *args: Any, username: str, role: str, email: str, password_stdin: bool, **opts: Any
    ) -> None:
        password = sys.stdin.readline().rstrip("\n") if password_stdin else None
        if password_stdin and not password:
            raise CommandError("no password on standard input")
        try:
            user, secret = user_create(
                actor=Actor.cli(), username=username, role=role, email=email, password=password
            )
        except (InvalidInput, Conflict) as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"Created {user.username!r} as {role}.")
        if not password_stdin:
            self.stdout.write("One-time password (shown only once):")
            self.stdout.write(secret)
