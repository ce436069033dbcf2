"""Signing in and out, and who may open what: login page, roles, 403, error pages."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.template.loader import render_to_string
from django.urls import reverse

from memory_admin.ui.roles import Role, user_role
from tests.ui.people import PASSWORD

pytestmark = pytest.mark.django_db


def test_anonymous_is_redirected_to_login(client):
    response = client.get(reverse("ui:dashboard"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    assert "next=/" in response["Location"]


def test_anonymous_htmx_request_is_redirected_too(client):
    response = client.get(reverse("ui:dashboard"), HTTP_HX_REQUEST="true")
    assert response.status_code == 302


def test_login_page_renders_a_form_with_csrf(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Sign in" in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'name="username"' in html and 'name="password"' in html
    assert "<html" in html


def test_login_with_the_right_password_lands_on_the_dashboard(client, make_user):
    make_user("viewer", username="vera")
    response = client.post(reverse("login"), {"username": "vera", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == reverse("ui:dashboard")


def test_login_with_a_wrong_password_shows_the_error_on_the_page(client, make_user):
    make_user("viewer", username="vera")
    response = client.post(reverse("login"), {"username": "vera", "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_user_in_no_group_gets_the_403_page(client_as):
    response = client_as(None).get(reverse("ui:dashboard"))
    assert response.status_code == 403
    html = response.content.decode()
    assert "have access to this page" in html
    assert "needs the viewer role" in html
    assert "no role yet" in html


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
def test_each_role_sees_the_dashboard_and_its_role(client_as, role):
    response = client_as(role).get(reverse("ui:dashboard"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Dashboard</h1>" in html
    assert f'<span class="role role-{role}">{role}</span>' in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html


def test_logout_is_a_post_that_ends_the_session(client_as):
    client = client_as("viewer")
    page = client.get(reverse("ui:dashboard")).content.decode()
    assert f'action="{reverse("logout")}"' in page
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("login")
    assert client.get(reverse("ui:dashboard")).status_code == 302


def test_logout_by_get_is_refused(client_as):
    client = client_as("viewer")
    assert client.get(reverse("logout")).status_code == 405
    assert client.get(reverse("ui:dashboard")).status_code == 200


def test_role_is_the_highest_group_and_superusers_are_admins(make_user, django_user_model):
    assert user_role(AnonymousUser()) is None
    assert user_role(make_user(None)) is None
    assert user_role(make_user("viewer")) is Role.VIEWER
    both = make_user("viewer", username="both")
    both.groups.add(*make_user("admin").groups.all())
    assert user_role(both) is Role.ADMIN
    root = django_user_model.objects.create_superuser(username="root", password=PASSWORD)
    assert user_role(root) is Role.ADMIN


def test_inactive_users_have_no_role(make_user):
    user = make_user("admin")
    user.is_active = False
    assert user_role(user) is None


def test_unknown_url_gets_the_readable_404_page(client_as):
    response = client_as("viewer").get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "Page not found" in html and "/no/such/page/" in html


def test_500_page_renders_without_any_context():
    html = render_to_string("500.html")
    assert "Something went wrong" in html
    assert "Traceback" not in html
