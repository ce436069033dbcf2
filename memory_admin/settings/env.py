"""Small readers for environment settings, so each settings module stays declarative."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from dotenv import load_dotenv


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
    """A development key generated once per data directory, so sessions survive restarts."""
    path = data_dir / "dev-secret-key"
    if path.is_file():
        return path.read_text().strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key)
    path.chmod(0o600)
    return key
