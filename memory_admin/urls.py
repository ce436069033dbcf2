from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path
from django.views.decorators.http import require_GET

from memory_admin.accounts.password import PasswordChangeView
from memory_admin.api.v1 import api as api_v1


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """`/favicon.ico`, which clients ask for whatever the page links: the vendored icon."""
    return redirect(static("favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon),
    path("api/v1/", api_v1.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", PasswordChangeView.as_view(), name="password_change"),
    path("", include("memory_admin.ui.urls")),
]
