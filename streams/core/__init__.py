"""The shared kernel: documents, the exception family, ids, cursor pages."""
