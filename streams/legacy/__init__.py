"""Legacy: migration from the earlier collections."""
