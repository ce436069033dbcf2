"""Django settings, every value from the environment (a `.env` file is read if present).

Nothing set means the embedded defaults of `runtime.md`: the local MongoDB-wire
store, SQLite, in-process tasks and the offline LLM provider. Each integration
has its own module beside this one.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url

from memory_admin.runtime.private_files import private_dir, private_sqlite_file
from memory_admin.settings.env import env_bool, env_list, env_str, load_dotenv_file

BASE_DIR = Path(__file__).resolve().parent.parent.parent
load_dotenv_file(BASE_DIR / ".env")

MEMORY_DATA_DIR = Path(env_str("MEMORY_DATA_DIR", str(BASE_DIR / "var"))).resolve()
# Created if missing (a fresh MEMORY_DATA_DIR would fail `migrate` with "unable to open
# database file"), and 0700: it holds the store, the SQLite database and secrets.
private_dir(MEMORY_DATA_DIR)

DEBUG = env_bool("DJANGO_DEBUG", default=True)
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off")
    from memory_admin.settings.env import dev_secret_key

    SECRET_KEY = dev_secret_key(MEMORY_DATA_DIR)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "ninja",
    "axes",  # login throttling: memory_admin/settings/login.py
    "memory_admin.apps.MemoryAdminConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before anything reads the body: large bodies wait for a host-wide slot.
    "memory_admin.web.large_requests.LargeRequestGateMiddleware",
    "memory_admin.web.security.ContentSecurityPolicyMiddleware",
    # Static files under gunicorn (hashed and compressed when DEBUG is off).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memory_admin.api.middleware.ApiErrorEnvelopeMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "memory_admin.api.middleware.ApiExemptLoginRequiredMiddleware",
    # A one-time password set by an admin must be changed before anything else.
    "memory_admin.accounts.password.PasswordChangeRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "memory_admin.web.middleware.StoreUnavailableMiddleware",
    # Last, as django-axes asks: answers a locked-out sign-in with its lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memory_admin.urls"
WSGI_APPLICATION = "memory_admin.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memory_admin.ui.context.navigation",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{MEMORY_DATA_DIR / 'db.sqlite3'}"),
        conn_max_age=60,
    )
}
# SQLite creates its file 0644 (and its journals like it): created 0600 before it opens it.
private_sqlite_file(DATABASES["default"])
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "ui:dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(MEMORY_DATA_DIR / "staticfiles")))
# Off DEBUG: `manage.py collectstatic` writes hashed, compressed copies that whitenoise
# serves with far-future caching; the manifest maps each name to its hashed file.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Request bodies: the API answers 413 past this, in its own envelope.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1_048_576
API_MAX_BODY_BYTES = 1_048_576

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.server": {"level": "WARNING"}},
}

from memory_admin.settings.cache import *  # noqa: E402,F403
from memory_admin.settings.celery import *  # noqa: E402,F403
from memory_admin.settings.chat import *  # noqa: E402,F403
from memory_admin.settings.llm import *  # noqa: E402,F403
from memory_admin.settings.login import *  # noqa: E402,F403
from memory_admin.settings.memory import *  # noqa: E402,F403
from memory_admin.settings.mongo import *  # noqa: E402,F403
from memory_admin.settings.production import *  # noqa: E402,F403
