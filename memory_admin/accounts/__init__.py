"""Staff accounts and API keys: Django-side actions (their tables live in SQL, not the store)."""
