"""`mcp --transport stdio|http`: serve memory over the Model Context Protocol.

The server is a client of this API (MEMORY_API_URL, default http://127.0.0.1:8000):
over stdio with MEMORY_API_KEY, over HTTP with each caller's own Bearer key. See
docs/client-and-mcp.md for the configuration an assistant or IDE needs.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Serve the Model Context Protocol (tools and the user-memory resource) over the API."
    # stdout is the protocol's stream over stdio: nothing else may be written to it.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
        parser.add_argument("--host", default="127.0.0.1", help="HTTP only (default loopback).")
        parser.add_argument("--port", type=int, default=8765, help="HTTP only; path /mcp.")

    def handle(self, *args: Any, transport: str, host: str, port: int, **options: Any) -> None:
        try:
            from memory_admin import mcp_server
        except ImportError as error:  # the `mcp` extra or clients/python is missing
            raise CommandError(
                f"the MCP server needs `pip install -e '.[mcp]' -e clients/python` ({error})"
            ) from error
        if transport == "stdio":
            if not os.environ.get("MEMORY_API_KEY"):
                raise CommandError("set MEMORY_API_KEY: the API key whose permissions apply")
            mcp_server.build_server().run("stdio")
            return
        import uvicorn

        self.stderr.write(f"MCP over streamable HTTP at http://{host}:{port}/mcp")
        uvicorn.run(mcp_server.http_app(host=host, port=port), host=host, port=port)
