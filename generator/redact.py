"""Credentials never leave gpudash: the user-info of a URL (`user:password@`) is replaced by `***@`.

`url()` redacts one URL; `text()` redacts every URL inside a message, a log line or a traceback.
Everything gpudash prints that can hold a URL passes through one of them.
"""

from __future__ import annotations

import re

MASK = "***"
# scheme://user-info@ ; the user-info runs to the last "@" of the URL, so a password holding "@",
# ":" or an unescaped "/" is redacted whole (a URL with "@" only in its query loses a little more).
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^\s'\"<>]*@)")


def url(value: str | None) -> str | None:
    """The URL with any user-info replaced by ``***@``; None stays None."""
    if value is None:
        return None
    return text(value)


def text(value: str) -> str:
    """Every URL in `value` with its user-info replaced by ``***@``."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", value)


def strip(value: str) -> tuple[str, tuple[str, str] | None]:
    """Split a URL into one without user-info, and the (user, password) it held, percent-decoded."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(value)
    if parts.username is None and parts.password is None:
        return value, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit(parts._replace(netloc=netloc)), (unquote(parts.username or ""), unquote(parts.password or ""))
