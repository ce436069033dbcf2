"""The client's version and the API version it speaks (versioned together)."""

__version__ = "1.0.0"
API_VERSION = "v1"
