"""The child process the in-process pool hands jobs to (`python -m memory_admin.job_runner`).

A formation of large messages is CPU work (the offline extractor, building the
prompt); in a thread of the web process it competes with requests for the GIL. In
this child, started by the web process at a lower OS priority, it only gets the CPU
the requests leave. Protocol on stdin/stdout, one line each: "<task name> <job id>"
in, "done" out. Settings come from the environment, as the web process's do.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_admin.settings")
    # Follow-up jobs (a consolidation a formation made due) run in this process's own
    # pool threads, already at its low priority, not in yet another child.
    os.environ["MEMORY_INPROCESS_ISOLATION"] = "thread"
    import django

    django.setup()
    import memory_admin.tasks  # noqa: F401 (registers the tasks)
    from memory_admin.celery import app

    for line in sys.stdin:
        name, _, job_id = line.strip().partition(" ")
        if not job_id:
            continue
        try:
            app.tasks[name].apply(args=[job_id])
        except Exception as exc:  # recorded on the job; the runner keeps serving
            print(f"job {job_id} failed: {exc}", file=sys.stderr, flush=True)
        try:
            sys.stdout.write("done\n")
            sys.stdout.flush()
        except BrokenPipeError:  # the web process is gone: so is the reason to run
            return


if __name__ == "__main__":
    main()
