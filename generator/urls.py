"""Addresses the user gives (GRAFANA_URL, --prometheus-url, --exporter-url, --endpoint-url): one check
for all, so each malformed one is the same usage error saying what to write instead."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from . import redact
from .errors import GpudashError


def safe_url(url: str) -> str:
    """The URL for messages: user-info masked, no query or fragment. A password holding `#` or `?` as typed (not
    percent-encoded) is masked whole, not cut there with what came before it shown."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return redact.text(_unqueried(url))
    cut = _USERINFO_CUT.match(rest)
    userinfo = rest[:cut.end()] if cut else ""  # (kept whole, to be masked: its `#` or `?` starts no query)
    return redact.text(scheme + sep + userinfo + _unqueried(rest[len(userinfo):]))


def _unqueried(text: str) -> str:
    return text.split("#")[0].split("?")[0]


# `user:pa#ss@host`: a `#` or `?` before any `/`, then an `@` (a URL's parser reads the address as ending there)
_USERINFO_CUT = re.compile(r"[^/?#]*[?#][^/]*@")


# The first path segment of a page of Grafana's or Prometheus' web UI, which a link copied from the browser holds
# after the base address (Grafana's /d/<uid>/<slug>?orgId=1 or /explore?left=..., Prometheus' /graph?g0.expr=...)
_UI_PAGES = frozenset({
    "d", "d-solo", "dashboard", "dashboards", "explore", "alerting", "a", "goto", "playlists", "connections",
    "datasources", "plugins", "admin", "org", "profile", "public-dashboards", "login",  # Grafana
    "graph", "query", "alerts", "rules", "targets", "service-discovery", "status", "tsdb-status", "flags", "config",
    "classic", "agent",  # Prometheus
})


def _before_page(path: str) -> str:
    """The base address's path of a link to a UI page: the path up to the page's first segment (a sub-path a proxy
    serves the product below, e.g. /grafana, is kept)."""
    segments = path.split("/")
    for index, segment in enumerate(segments):
        if segment in _UI_PAGES:
            segments = segments[:index]
            break
    return "/".join(segments).rstrip("/")


def _written(name: str, url: str) -> str:
    """How the user writes `url` where `name` comes from: a flag or an environment variable."""
    return f"{name} {url}" if name.startswith("-") else f"{name}={url}"


def check_url(url: str, name: str, example: str) -> str:
    """`url` as a base URL (no trailing slash), or a usage error naming `name` (the variable or flag it
    came from) and saying what to write; `example` is a plausible address for the hint."""
    text = url.strip()
    hint = f"give the address with its scheme, e.g. {_written(name, example)}"
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise GpudashError(f"cannot be read as a URL ({exc})", where=name, hint=hint) from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        if "://" not in text:
            shown = safe_url("http://" + text)[len("http://"):]
            fixed = safe_url("https://" + text.split("@")[-1])
            raise GpudashError(f"{shown!r} has no scheme", where=name,
                               hint=f"add http:// or https:// in front: {_written(name, fixed)}")
        raise GpudashError(f"must start with http:// or https:// (it starts with {parts.scheme}://)",
                           where=name, hint=hint)
    if _USERINFO_CUT.match(text.split("://", 1)[-1]):
        raise GpudashError(f"{safe_url(text)!r}: its user name or password holds '#' or '?', where a URL's address "
                           "ends", where=name, hint="write them percent-encoded in the user name and password: # as "
                                                    "%23, ? as %3F")
    try:
        parts.port
    except ValueError:
        raise GpudashError(f"{safe_url(text)!r} has a port that is not a number from 0 to 65535",
                           where=name, hint=hint) from None
    if not parts.hostname or any(c.isspace() for c in text):
        raise GpudashError(f"{safe_url(text)!r} has no valid host name", where=name, hint=hint)
    if parts.query or parts.fragment or "?" in text or "#" in text:
        # an address copied from the browser (Grafana's `/d/<uid>/<slug>?orgId=1`): the API paths added after it
        # would land in its query string or fragment
        path = _before_page(parts.path)
        raise GpudashError(f"{safe_url(text)!r} has a query string or fragment (?... or #...): it is the address "
                           f"requests are sent below, which takes neither", where=name,
                           hint=f"give the address alone (with its sub-path, if any): "
                                f"{_written(name, safe_url(f'{parts.scheme}://{parts.netloc}{path}'))}")
    return text.rstrip("/")
