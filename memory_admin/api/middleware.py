"""Placeholder: replaced by the API frame."""

from __future__ import annotations


class ApiErrorEnvelopeMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)
