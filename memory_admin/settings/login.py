"""Sign-in throttling (django-axes): too many failed sign-ins lock the name out for a while.

Failures are counted per user name and client address together, in the database (the
default SQLite or DATABASE_URL), so the count holds across gunicorn workers without a
shared cache, and a stranger's wrong passwords lock the name out for the stranger's
address only. Behind a proxy the client's address is the last X-Forwarded-For entry
that is not a trusted proxy (`MEMORY_TRUSTED_PROXIES`, addresses or networks, default
the loopback addresses, where the shipped nginx runs); from any other peer the header is
ignored. A good sign-in resets the count; an admin lifts a lockout on the People page
(audited), `manage.py axes_reset` every lockout at once (`axes_reset_username NAME` one).
"""

from __future__ import annotations

from datetime import timedelta

from memory_admin.settings.env import env_int, env_str

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out sign-in before the password is checked.
    "memory_admin.web.login_throttle.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
# Failed sign-ins that lock the name out (from the same address).
AXES_FAILURE_LIMIT = env_int("MEMORY_LOGIN_FAILURE_LIMIT", 5)
# How long the lockout lasts; failures older than this no longer count.
AXES_COOLOFF_TIME = timedelta(minutes=env_int("MEMORY_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "memory_admin.web.login_throttle.lockout_response"  # 429, Retry-After
AXES_VERBOSE = False
AXES_CLIENT_IP_CALLABLE = "memory_admin.web.login_throttle.client_ip"
MEMORY_TRUSTED_PROXIES = [
    part.strip()
    for part in env_str("MEMORY_TRUSTED_PROXIES", "127.0.0.1,::1").split(",")
    if part.strip()
]
# Sign-ins only: the API authenticates with keys, never through `authenticate()`.
AXES_ONLY_ADMIN_SITE = False
