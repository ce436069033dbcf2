"""Context: the memory an agent sees on every message.

- `assemble`: `context_assemble`, the hot path; `tokens`: the sections' token budgets.
- `log`: what each call gave; `replay`: the context as it was at a past time;
  `retrieval_health`: retrieval per agent and day, from the log.
- `chat`: the domain half of the OpenAI-compatible chat proxy.
"""
