"""Running jobs: the Celery tasks, the in-process pool and its child runner, the periodic sweeps."""
