"""The LLM port: what the domain asks of a language model, and the providers that answer."""
