"""Context: the hot path an agent calls, its log and replay, chat with memory."""
