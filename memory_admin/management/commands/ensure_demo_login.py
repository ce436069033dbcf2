"""Create (once) the demo logins for the embedded setup, and print them."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from memory_admin.runtime.private_files import close_to_others, read_or_create_secret

DEMO_USERS = (("admin", "admin"), ("operator", "operator"), ("viewer", "viewer"))


class Command(BaseCommand):
    help = "Create demo users admin/operator/viewer with one generated password, and print it."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/", help="where the app serves")

    def handle(self, *args: Any, **options: Any) -> None:
        password_file = settings.MEMORY_DATA_DIR / "demo-password"
        close_to_others(password_file)
        password = read_or_create_secret(password_file, lambda: secrets.token_urlsafe(9))
        user_model = get_user_model()
        for username, role in DEMO_USERS:
            user, created = user_model.objects.get_or_create(username=username)
            if created:
                user.set_password(password)
                user.is_staff = role == "admin"
                user.save()
            user.groups.add(Group.objects.get_or_create(name=role)[0])
        who = "admin, operator or viewer"
        self.stdout.write(
            self.style.SUCCESS(f"Log in at {options['url']} as {who} with password: {password}")
        )
