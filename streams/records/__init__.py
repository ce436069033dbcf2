"""What happened: the audit log, LLM usage, daily activity, counters, webhooks."""
