from __future__ import annotations

from ninja import NinjaAPI

api = NinjaAPI(title="memory-admin", version="1")
