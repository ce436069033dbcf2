"""Production serving: HTTPS behind a TLS proxy, HSTS, and the Content-Security-Policy.

Everything is off by default (the embedded defaults run on plain http://localhost);
README "Production" lists the values for a deployment behind a TLS-terminating proxy.
"""

from __future__ import annotations

from memory_admin.settings.env import env_bool, env_int, env_str

# The proxy terminates TLS and says so with X-Forwarded-Proto: set only behind one
# that overwrites the header, or a client could claim https itself.
if env_bool("DJANGO_SECURE_PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", default=False)
# Load balancers probe health over plain http inside the network.
SECURE_REDIRECT_EXEMPT = [r"^api/v1/health$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", default=False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Only the app's own scripts and styles (htmx is vendored under static/): no inline
# code, no eval, no other origin. `memory_admin.web.security.ContentSecurityPolicyMiddleware`.
CONTENT_SECURITY_POLICY = env_str(
    "DJANGO_CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'self'; object-src 'none'",
)
