"""Small readers for environment settings, so each settings module stays declarative."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from dotenv import load_dotenv

from memory_admin.runtime.private_files import close_to_others, read_or_create_secret


def load_dotenv_file(path: Path) -> None:
    """Read `.env` if present; real environment variables win over it."""
    if path.is_file():
        load_dotenv(path, override=False)


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, "").strip() or default


def env_optional(name: str) -> str | None:
    return os.environ.get(name, "").strip() or None


def env_bool(name: str, *, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    return raw in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    return float(raw) if raw else default


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name, "").strip()
    return [item.strip() for item in raw.split(",") if item.strip()] if raw else default


def dev_secret_key(data_dir: Path) -> str:
    """A development key generated once per data directory, so sessions survive restarts.

    Created 0600 from the start (`memory_admin.runtime.private_files`).
    """
    path = data_dir / "dev-secret-key"
    close_to_others(path)
    return read_or_create_secret(path, lambda: secrets.token_urlsafe(50))
