"""Drafts: a draft prompt tried beside the prompt in effect (dry runs, checks)."""
