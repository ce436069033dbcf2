"""The production set-up: DEBUG off under gunicorn, static files, CSP, HSTS, check --deploy."""

from __future__ import annotations

import gzip
import os
import re
import secrets
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from memory_admin.runtime.embedded_store import _free_port
from tests.http_client import HttpClient

ROOT = Path(__file__).resolve().parent.parent

PRODUCTION_ENV = {
    "DJANGO_DEBUG": "false",
    "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    "DJANGO_SECURE_PROXY_SSL_HEADER": "true",
    "DJANGO_SECURE_SSL_REDIRECT": "true",
    "DJANGO_SECURE_HSTS_SECONDS": "31536000",
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "DJANGO_SECURE_HSTS_PRELOAD": "true",
}


def production_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
    env.update(PRODUCTION_ENV)
    env.update(
        DJANGO_SECRET_KEY=secrets.token_urlsafe(60),
        MEMORY_DATA_DIR=str(data_dir),
        MONGODB_URI=os.environ["MEMORY_TEST_MONGODB_URI"],  # the suite's store
        MONGODB_DB=f"prod_{uuid.uuid4().hex[:12]}",
    )
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture(scope="module")
def production(embedded_mongo, tmp_path_factory):
    """gunicorn with DEBUG off and the production settings, after collectstatic."""
    data_dir = tmp_path_factory.mktemp("production")
    env = production_env(data_dir)
    for args in (("migrate", "--noinput", "-v0"), ("collectstatic", "--noinput", "-v0")):
        done = manage(env, *args)
        assert done.returncode == 0, done.stderr
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "memory_admin.wsgi:application"],
        cwd=ROOT,
        env={**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "2"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # As behind the TLS proxy: it says the request came over https.
    client = HttpClient(f"http://127.0.0.1:{port}", headers={"X-Forwarded-Proto": "https"})
    try:
        HttpClient(client.base).wait_until_up("/api/v1/health", within=60)
        yield client, env
    finally:
        server.terminate()
        server.wait(30)


def test_a_page_gets_its_css_and_htmx_from_the_production_server(production):
    client, _ = production
    page = client.get("/login/")
    assert page.status_code == 200, page.text[:500]
    css = re.search(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', page.text)
    htmx = re.search(r'src="(/static/vendor/htmx-2\.0\.11\.min\.[0-9a-f]{12}\.js)"', page.text)
    assert css and htmx, page.text[:1500]  # hashed names: cached forever, safely
    for path, kind in ((css.group(1), "text/css"), (htmx.group(1), "javascript")):
        plain = client.get(path)
        assert plain.status_code == 200 and kind in plain.headers["Content-Type"]
        assert "max-age=315360000" in plain.headers.get("Cache-Control", "")
        zipped = HttpClient(client.base, {**client.headers, "Accept-Encoding": "gzip"}).get(path)
        assert zipped.headers.get("Content-Encoding") == "gzip"
        assert gzip.decompress(zipped.content) == plain.content
    assert b"htmx" in client.get(htmx.group(1)).content


def test_pages_carry_a_csp_that_allows_only_the_apps_own_code(production):
    client, _ = production
    page = client.get("/login/")
    policy = page.headers["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert "unsafe" not in policy
    assert "max-age=31536000" in page.headers["Strict-Transport-Security"]
    assert page.headers["X-Content-Type-Options"] == "nosniff"


def test_templates_hold_no_inline_code_the_csp_would_block():
    inline = re.compile(r"<script(?![^>]*\bsrc=)|<style|\son[a-z]+\s*=|\sstyle\s*=", re.I)
    offenders = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in (ROOT / "templates").rglob("*.html")
        for match in inline.finditer(path.read_text())
    ]
    assert offenders == []


def test_plain_http_is_redirected_to_https_but_health_is_not(production):
    client, _ = production
    plain = HttpClient(client.base)
    assert plain.get("/api/v1/health").status_code == 200
    request = urllib.request.Request(client.base + "/login/")
    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as redirect:
        opener.open(request, timeout=10)
    assert redirect.value.code == 301
    assert redirect.value.headers["Location"].startswith("https://")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/agents/a1/scopes?q=" + urllib.parse.quote("日本語の検索" * 33),  # 198 chars
        "/api/v1/agents/"
        + urllib.parse.quote("é" * 128)
        + "/scopes?user_id="
        + urllib.parse.quote("ü" * 128)
        + "&group_id="
        + urllib.parse.quote("ß" * 128),
        "/api/v1/agents/a1/search?q=" + urllib.parse.quote("😀" * 1000),  # 12,000 bytes
        "/api/v1/scopes/" + "x" * 20_000 + "/observations",
    ],
)
def test_long_urls_get_the_envelope_not_gunicorns_414(production, path):
    client, _ = production
    response = client.get(path)
    assert response.status_code != 414
    assert response.headers["Content-Type"].startswith("application/json"), response.text[:300]
    assert set(response.json()) == {"error"}


def test_check_deploy_is_clean_with_the_production_settings(production):
    _, env = production
    done = manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout
