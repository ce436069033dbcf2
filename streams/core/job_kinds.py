"""The kinds of job, declared once.

`JobKind` is the type (a `Literal`, so mypy checks every `Job(kind=...)`); `JOB_KINDS`
says what each kind does, for the API schema and docs/kinds.md (`manage.py kinds_docs`).
A new kind is a name in both and its runner (`memory_admin.jobs.tasks.TASKS_BY_KIND`);
`tests/streams/core/test_kinds_registry.py` checks the three agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

JobKind = Literal[
    "formation",
    "consolidation",
    "propagation",
    "forget_user",
    "rebuild",
    "chat_ingest",
    "bulk",
    "bulk_undo",
    "source_change",
    "chat_catch_up",
    "prompt_experiment",
]


@dataclass(frozen=True)
class JobKindInfo:
    name: JobKind
    label: str
    description: str


JOB_KINDS: tuple[JobKindInfo, ...] = (
    JobKindInfo(
        "formation",
        "formation",
        "a session's unformed messages become observations (the extraction call)",
    ),
    JobKindInfo(
        "consolidation",
        "consolidation",
        "a scope's pending observations are folded into a new consolidation version",
    ),
    JobKindInfo(
        "propagation",
        "propagation",
        "an individual scope's new observations are offered to its groups and the "
        "collective memory (copies carrying personal data or secrets are never stored)",
    ),
    JobKindInfo(
        "forget_user",
        "forget a person",
        "a person's messages, observations and copies are removed everywhere and the "
        "consolidations that held them rebuilt; its receipt keeps ids and counts only",
    ),
    JobKindInfo(
        "rebuild",
        "rebuild",
        "a scope's consolidation is rebuilt from the observations it still holds",
    ),
    JobKindInfo(
        "chat_ingest",
        "chat turn",
        "a turn the chat proxy relayed is buffered as session messages; formation follows",
    ),
    JobKindInfo(
        "bulk",
        "bulk action",
        "a bulk action by filter (delete, move, mark private), batch by batch, resumed "
        "at its progress when retried",
    ),
    JobKindInfo(
        "bulk_undo",
        "bulk undo",
        "a bulk action taken back within MEMORY_BULK_UNDO_SECONDS: deleted observations "
        "restored through the screen (never a forgotten user's), moved ones moved back, "
        "private ones public again (back to pending where they had been consolidated); "
        "one rebuild per scope touched",
    ),
    JobKindInfo(
        "source_change",
        "source change",
        "what follows an edit, delete, merge or marking private: copies out, the context "
        "log scrubbed, then the rebuilds",
    ),
    JobKindInfo(
        "chat_catch_up",
        "chat catch-up",
        "a chat call filed after the answer: removals made meanwhile are scrubbed from "
        "it; carries ids and digests only",
    ),
    JobKindInfo(
        "prompt_experiment",
        "prompt experiment",
        "a draft prompt and the prompt in effect run on a scope's recent sessions or "
        "pending sets within a token budget; writes the experiment only, never memory",
    ),
)

JOB_KIND_BY_NAME: dict[str, JobKindInfo] = {k.name: k for k in JOB_KINDS}
JOB_KIND_NAMES: tuple[JobKind, ...] = get_args(JobKind)


def job_kinds_described() -> str:
    """The kinds in one line, for a schema description."""
    return "; ".join(f"{k.name}: {k.description}" for k in JOB_KINDS)


__all__ = [
    "JOB_KINDS",
    "JOB_KIND_BY_NAME",
    "JOB_KIND_NAMES",
    "JobKind",
    "JobKindInfo",
    "job_kinds_described",
]
