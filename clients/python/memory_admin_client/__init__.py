"""memory-admin's Python client: `MemoryClient` (sync) and `AsyncMemoryClient` (async).

from memory_admin_client import MemoryClient
with MemoryClient("http://127.0.0.1:8000", api_key="mk_...") as memory:
    hits = memory.search(agent_id="a1", q="rust", user_id="u1")
"""

from memory_admin_client._calls import NO_RETRY, Call, RetryPolicy
from memory_admin_client._version import API_VERSION, __version__
from memory_admin_client.aio import AsyncMemoryClient
from memory_admin_client.client import MemoryClient
from memory_admin_client.errors import (
    APIError,
    BadRequest,
    Conflict,
    MemoryClientError,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    TransportError,
    Unauthorized,
    Unavailable,
    ValidationFailed,
)
from memory_admin_client.operations import new_client_id

__all__ = [
    "API_VERSION",
    "NO_RETRY",
    "APIError",
    "AsyncMemoryClient",
    "BadRequest",
    "Call",
    "Conflict",
    "MemoryClient",
    "MemoryClientError",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "RateLimited",
    "RetryPolicy",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "ValidationFailed",
    "__version__",
    "new_client_id",
]
