"""How gpudash recognises what it owns and what a person changed since, with no state on disk.

The evidence lives with each object:
  * Grafana dashboards carry the tag `gpudash-managed`; every push is saved with the
    version message `gpudash sha256:<hash> ...`, the hash of what was pushed. When the
    live content no longer hashes to the message of its latest version, someone edited it.
  * CloudWatch dashboards carry `gpudash sha256:<hash>` in their header text, the hash of
    the body without that line; an edit in the console breaks the match.
  * CloudWatch alarms carry the tag ManagedBy=gpudash.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

GRAFANA_OWNER_TAG = "gpudash-managed"
_STAMP = re.compile(r"\n*`?gpudash sha256:([0-9a-f]{16})`?\s*$")
_MESSAGE = re.compile(r"^gpudash sha256:([0-9a-f]{16})\b")
GRAFANA_SERVER_FIELDS = ("id", "version")


def content_hash(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# --- Grafana ------------------------------------------------------------------------------

def grafana_content(dashboard: dict[str, Any]) -> dict[str, Any]:
    """The dashboard without the fields the server fills in."""
    return {k: v for k, v in dashboard.items() if k not in GRAFANA_SERVER_FIELDS}


def grafana_owned(dashboard: dict[str, Any]) -> bool:
    return GRAFANA_OWNER_TAG in (dashboard.get("tags") or [])


def grafana_message(dashboard: dict[str, Any], note: str) -> str:
    return f"gpudash sha256:{content_hash(grafana_content(dashboard))} {note}".strip()


def grafana_pushed_hash(message: str | None) -> str | None:
    match = _MESSAGE.match(message or "")
    return match.group(1) if match else None


# --- CloudWatch dashboards ----------------------------------------------------------------

def stamp_cloudwatch_body(body: dict[str, Any]) -> dict[str, Any]:
    """The body with its own hash appended to the header text widget (the first widget)."""
    digest = content_hash(body)
    stamped = json.loads(json.dumps(body))
    header = stamped["widgets"][0]["properties"]
    header["markdown"] = header["markdown"] + f"\n\n`gpudash sha256:{digest}`"
    return stamped


def read_cloudwatch_stamp(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """(stamped hash, hash of the body without the stamp); (None, None) when not gpudash's."""
    try:
        header = body["widgets"][0]["properties"]["markdown"]
    except (KeyError, IndexError, TypeError):
        return None, None
    match = _STAMP.search(header)
    if not match:
        return None, None
    unstamped = json.loads(json.dumps(body))
    unstamped["widgets"][0]["properties"]["markdown"] = header[: match.start()]
    return match.group(1), content_hash(unstamped)
