"""Request and response schemas of `/api/v1`, one `XIn` and one `XOut` per object.

Inputs forbid unknown fields, so a misspelt field is a 422 that names it rather
than a silently ignored setting. Outputs mirror the "Objects" of
`shared/spec/api.md` exactly, read from the domain's documents by attribute.

One module per resource (`scopes`, `observations`, `sessions`, ...), the shared pieces in
`common`; every name is re-exported here, so `from memory_admin.api.v1.schemas import X`
works whichever module holds `X`.
"""

from __future__ import annotations

from memory_admin.api.v1.schemas.common import (
    MAX_GROUPS,
    MAX_MESSAGES,
    MAX_VERSION,
    NOT_BLANK,
    DisplayName,
    ErrorBody,
    ErrorOut,
    ExternalId,
    InSchema,
    IsoTime,
    PageQuery,
    Prompt,
    Time,
    error_responses,
    iso_utc,
)
from memory_admin.api.v1.schemas.consolidations import (
    ConsolidateOut,
    ConsolidationEstimateOut,
    ConsolidationPageOut,
    ConsolidationVersionOut,
    CoverageOut,
    FidelityOut,
    QuestionsIn,
    QuestionsOut,
)
from memory_admin.api.v1.schemas.health import (
    HealthOut,
)
from memory_admin.api.v1.schemas.jobs import (
    JobOut,
)
from memory_admin.api.v1.schemas.observations import (
    EarlierTextOut,
    ObservationBatchIn,
    ObservationBatchItemIn,
    ObservationBatchItemOut,
    ObservationBatchOut,
    ObservationContent,
    ObservationFeedbackIn,
    ObservationHistoryOut,
    ObservationIn,
    ObservationListQuery,
    ObservationOut,
    ObservationPageOut,
    ObservationPatchIn,
    ObservationWriteIn,
    ReviewOut,
    SupersedeIn,
    SupersessionChainOut,
)
from memory_admin.api.v1.schemas.review import (
    DecidedOut,
    DecidedPageOut,
    ReviewBulkIn,
    ReviewBulkOut,
    ReviewDecisionIn,
    ReviewNote,
    ReviewQueueQuery,
)
from memory_admin.api.v1.schemas.scopes import (
    CollectiveShardIn,
    GroupScopeIn,
    ScopeCreateIn,
    ScopeListQuery,
    ScopeOut,
    ScopePageOut,
    ScopePatchIn,
    ScopePinsIn,
)
from memory_admin.api.v1.schemas.sessions import (
    ForgetRequestOut,
    GroupIn,
    IngestIn,
    IngestOut,
    JobIdOut,
    MessageIn,
    RefusedOut,
)

__all__ = [
    "CollectiveShardIn",
    "ConsolidateOut",
    "ConsolidationEstimateOut",
    "ConsolidationPageOut",
    "ConsolidationVersionOut",
    "DisplayName",
    "EarlierTextOut",
    "SupersedeIn",
    "SupersessionChainOut",
    "ErrorBody",
    "ErrorOut",
    "ExternalId",
    "FidelityOut",
    "CoverageOut",
    "QuestionsIn",
    "QuestionsOut",
    "GroupIn",
    "GroupScopeIn",
    "HealthOut",
    "InSchema",
    "IngestIn",
    "IngestOut",
    "ForgetRequestOut",
    "IsoTime",
    "JobIdOut",
    "JobOut",
    "MAX_GROUPS",
    "MAX_MESSAGES",
    "MAX_VERSION",
    "MessageIn",
    "NOT_BLANK",
    "ObservationBatchIn",
    "ObservationBatchItemIn",
    "ObservationBatchItemOut",
    "ObservationBatchOut",
    "ObservationContent",
    "ObservationFeedbackIn",
    "ObservationHistoryOut",
    "ObservationIn",
    "ObservationListQuery",
    "ObservationOut",
    "ObservationPageOut",
    "ObservationPatchIn",
    "ObservationWriteIn",
    "PageQuery",
    "Prompt",
    "RefusedOut",
    "ReviewBulkIn",
    "ReviewBulkOut",
    "DecidedOut",
    "DecidedPageOut",
    "ReviewDecisionIn",
    "ReviewNote",
    "ReviewOut",
    "ReviewQueueQuery",
    "ScopeCreateIn",
    "ScopeListQuery",
    "ScopeOut",
    "ScopePageOut",
    "ScopePatchIn",
    "ScopePinsIn",
    "Time",
    "error_responses",
    "iso_utc",
]
