"""The operator UI's pages; every view checks its role itself (see `roles.py`)."""

from __future__ import annotations

from django.urls import path

from memory_admin.ui import dashboard

app_name = "ui"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
]
