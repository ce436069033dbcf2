"""The domain's documents and their converters to and from MongoDB.

Outside `streams` every id is a 24-hex string; the converters here are the only
place where ObjectIds and strings meet.

One module per document (`scope.py`, `observation.py`, ...), what they share in
`_base.py`; this package re-exports every public name, so imports stay
`from streams.core.documents import Scope`.
"""

from __future__ import annotations

from streams.core.documents._base import (
    EPOCH,
    MAX_CONTENT_CHARS,
    REVIEW_MODES,
    SCOPE_TYPES,
    JobStatus,
    ObservationStatus,
    ReviewMode,
    ReviewStatus,
    ScopeType,
    utcnow,
)
from streams.core.documents.agent import Agent
from streams.core.documents.buffered_message import BufferedMessage
from streams.core.documents.consolidation_version import ConsolidationVersion
from streams.core.documents.job import Job
from streams.core.documents.observation import (
    ORIGINS,
    Observation,
    ObservationOrigin,
    observation_origin,
)
from streams.core.documents.prompt_version import PROMPT_KINDS, PromptKind, PromptVersion
from streams.core.documents.scope import Scope
from streams.core.job_kinds import JobKind

__all__ = [
    "Agent",
    "BufferedMessage",
    "ConsolidationVersion",
    "EPOCH",
    "Job",
    "JobKind",
    "JobStatus",
    "MAX_CONTENT_CHARS",
    "ORIGINS",
    "ObservationOrigin",
    "Observation",
    "ObservationStatus",
    "PROMPT_KINDS",
    "PromptKind",
    "PromptVersion",
    "REVIEW_MODES",
    "ReviewMode",
    "ReviewStatus",
    "SCOPE_TYPES",
    "Scope",
    "ScopeType",
    "observation_origin",
    "utcnow",
]
