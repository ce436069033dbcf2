"""Changing one's own password, and the one-time password that must be changed.

An account made by someone else (`create_user`, the People page) starts with a
password that person knows: it is flagged (`PasswordChangeRequired`), and until
its owner chooses their own, every page of the admin redirects to the change
page. Django's `PasswordChangeView` does the work (old password, validators,
keeping the session signed in); this module adds the flag, the audit entry and
the app's look.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse, reverse_lazy

from memory_admin.accounts.actions import user_password_changed
from memory_admin.models import PasswordChangeRequired
from streams.actions import Actor


def must_change_password(user: Any) -> bool:
    return bool(
        user.is_authenticated and PasswordChangeRequired.objects.filter(user_id=user.pk).exists()
    )


class PasswordChangeView(auth_views.PasswordChangeView):
    template_name = "registration/password_change_form.html"
    success_url = reverse_lazy("ui:dashboard")

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["required"] = must_change_password(self.request.user)
        return context

    def form_valid(self, form: PasswordChangeForm) -> HttpResponse:
        response = super().form_valid(form)
        user_password_changed(actor=Actor.ui(self.request.user.get_username()), user=form.user)
        messages.success(self.request, "Your password was changed.")
        return response


class PasswordChangeRequiredMiddleware:
    """A flagged person sees only the password change page (and can sign out) until
    they choose their own password. The API authenticates with keys: not concerned."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        user = getattr(request, "user", None)
        if user is not None and not self._exempt(request) and must_change_password(user):
            target = reverse("password_change")
            if request.headers.get("HX-Request") == "true":
                response = HttpResponse(status=204)
                response["HX-Redirect"] = target
                return response
            return redirect(target)
        return self.get_response(request)

    @staticmethod
    def _exempt(request: HttpRequest) -> bool:
        path = request.path_info
        return (
            path.startswith(("/api/", "/static/"))
            or path == reverse("password_change")
            or path == reverse("logout")
        )
