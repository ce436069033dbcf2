"""The process around the app: the embedded store and its supervision, private files,
the gunicorn worker, connection close, the startup heap, store compaction."""
