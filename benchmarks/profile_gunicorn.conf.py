"""The production gunicorn.conf.py plus the timing hooks of benchmarks/profile_hooks.py."""

from pathlib import Path

exec(
    compile(
        (Path(__file__).resolve().parent.parent / "gunicorn.conf.py").read_text(),
        "gunicorn.conf.py",
        "exec",
    )
)  # noqa: S102

from benchmarks.profile_hooks import post_worker_init  # noqa: E402,F401
