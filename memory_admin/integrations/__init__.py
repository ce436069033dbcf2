"""What the app calls outside itself: the LLM and embeddings providers, the chat
upstream and its limits, webhook delivery."""
