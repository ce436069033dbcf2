"""The demo world (data) and its seeding through the app's services (seed)."""
