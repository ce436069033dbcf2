"""The child process the in-process pool hands jobs to (`python -m memory_admin.jobs.runner N`).

A formation of large messages is CPU work (the offline extractor, building the
prompt); in a thread of the web process it competes with requests for the GIL. In
this child, started by the web process at OS niceness N, it only gets the CPU the
requests leave.

Protocol, one JSON line each way. In (stdin): {"task", "job_id", "settings"} (or a
warm-up, {"warm": true, "settings"}: open the store before the first job); out
(the original stdout, kept for the protocol alone): {"done": job_id}. `settings` are the
web process's store, LLM and MEMORY_* settings at the moment it queued the job (its
resolved store URI included), applied before the job runs: the child then acts on
exactly the parent's world, whatever its own environment says (a test's database, the
embedded store the web process supervises). Anything the job or a library prints goes
to stderr, so it can neither be mistaken for an answer nor fill the protocol pipe.

Follow-up jobs (a consolidation the formation made due) run here, synchronously, before
the answer: when the parent hears "done", every write of the job is over.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import IO, Any

# Never taken from the parent: the child runs its follow-ups itself, inline.
CHILD_OWN = {"MEMORY_INPROCESS_WORKERS": 0, "MEMORY_INPROCESS_ISOLATION": "thread"}
WARM = "warm"  # a warm-up request ({"warm": true, "settings"}) is answered {"done": "warm"}


def main() -> None:
    niceness = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    with contextlib.suppress(OSError):
        os.nice(niceness)  # before Django is imported: start-up is background work too
    answers = _protocol_out()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_admin.settings")
    import django

    django.setup()
    from django.conf import settings

    import memory_admin.jobs.tasks  # noqa: F401 (registers the tasks)
    from memory_admin.celery import app

    for line in sys.stdin:
        try:
            request: dict[str, Any] = json.loads(line)
            if request.get("warm") is True:
                task, job_id = None, WARM
            else:
                task, job_id = app.tasks[request["task"]], str(request["job_id"])
        except (ValueError, KeyError, TypeError, AttributeError):
            print(f"job runner: unreadable request {line[:200]!r}", file=sys.stderr, flush=True)
            continue
        for name, value in {**request.get("settings", {}), **CHILD_OWN}.items():
            setattr(settings, name, value)
        try:
            if task is None:
                _warm_up()
            else:
                task.apply(args=[job_id])
        except Exception as exc:  # recorded on the job; the runner keeps serving
            print(f"job {job_id} failed: {exc}", file=sys.stderr, flush=True)
        try:
            answers.write(json.dumps({"done": job_id}) + "\n")
            answers.flush()
        except BrokenPipeError:  # the web process is gone: so is the reason to run
            return


def _warm_up() -> None:
    """Before the first job: connect to the store and check its indexes (what a first job
    would otherwise wait for)."""
    from memory_admin.stores import get_store

    get_store().ping()


def _protocol_out() -> IO[str]:
    """The original stdout for answers only; fd 1 (and `sys.stdout`) now go to stderr."""
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answers


if __name__ == "__main__":
    main()
