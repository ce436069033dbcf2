"""Drafts: a draft prompt tried beside the prompt in effect (`streams.prompts` holds both).

- `dry_run`: one input, both prompts, side by side, built by the real calls' code.
- `prompt_checks`: saved extraction test cases, run on a draft.
"""
