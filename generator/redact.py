"""Credentials never leave gpudash: the user-info of a URL (`user:password@`) is replaced by `***@`,
and every secret gpudash holds (tokens, passwords, AWS keys, as sent: raw or as a basic-auth
header) is replaced by `***` wherever it appears, so a server that echoes them cannot print them.

`url()` redacts one URL; `text()` redacts every URL and every known secret inside a message, a log
line or a traceback. Everything gpudash prints that can hold one passes through one of them;
whatever reads a secret hands it to `secret()` (or `basic_auth()`) first.
"""

from __future__ import annotations

import re

MASK = "***"
# scheme://user-info@ ; the user-info runs to the last "@" of the URL, so a password holding "@",
# ":" or an unescaped "/" is redacted whole (a URL with "@" only in its query loses a little more).
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^\s'\"<>]*@)")


# A value this long is masked wherever it appears. A shorter one (a short password) is masked where it
# stands alone (not inside a longer run of letters and digits): masking "ab1" inside every word holding
# it would garble messages, while the password itself, quoted or between spaces, is still hidden.
_MIN_SECRET = 6
_secrets: set[str] = set()


def secret(value: str | None) -> None:
    """Mask `value` in everything printed from now on."""
    if value and value.strip():
        _secrets.add(value.strip())


def secrets() -> frozenset[str]:
    """The values masked now (a child process sends the ones it learnt to the process that prints)."""
    return frozenset(_secrets)


def basic_auth(user: str | None, password: str | None) -> None:
    """Mask a password and the basic-auth header it travels in."""
    if password:
        import base64

        secret(password)
        secret(base64.b64encode(f"{user or ''}:{password}".encode()).decode())


def environment(env) -> None:
    """From now on, exactly the secrets standard variables hold (Grafana, AWS, URLs with user-info)."""
    _secrets.clear()
    for name in ("GRAFANA_TOKEN", "GRAFANA_PASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        secret(env.get(name))
    basic_auth(env.get("GRAFANA_USER"), env.get("GRAFANA_PASSWORD"))
    # the proxy variables requests and botocore read (urllib's getproxies: any `<scheme>_proxy`, either case), whose
    # user-info they send as a Proxy-Authorization header; a value without its scheme is read as http://
    # and every AWS_ENDPOINT_URL_<SERVICE> beside AWS_ENDPOINT_URL (botocore's own endpoint per service)
    proxies = [value for name, value in env.items() if name.lower().endswith("_proxy") and name.lower() != "no_proxy"]
    endpoints = [value for name, value in env.items() if name.upper().startswith("AWS_ENDPOINT_URL")]
    for value in [env.get(name) for name in ("GRAFANA_URL", "PROMETHEUS_URL")] + endpoints + proxies:
        if value:
            try:
                strip(value if "://" in value else f"http://{value}")
            except ValueError:
                pass


def url(value: str | None) -> str | None:
    """The URL with any user-info replaced by ``***@``; None stays None."""
    if value is None:
        return None
    return text(value)


def text(value: str) -> str:
    """Every URL in `value` with its user-info replaced by ``***@``, and every known secret by ``***``."""
    value = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", value)
    for known in sorted(_secrets, key=len, reverse=True):
        if known in value:
            if len(known) >= _MIN_SECRET:
                value = value.replace(known, MASK)
            else:
                value = re.sub(rf"(?<![A-Za-z0-9]){re.escape(known)}(?![A-Za-z0-9])", MASK, value)
    return value


def strip(value: str) -> tuple[str, tuple[str, str] | None]:
    """Split a URL into one without user-info, and the (user, password) it held, percent-decoded."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(value)
    if parts.username is None and parts.password is None:
        return value, None
    basic_auth(unquote(parts.username or ""), unquote(parts.password or ""))
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit(parts._replace(netloc=netloc)), (unquote(parts.username or ""), unquote(parts.password or ""))
