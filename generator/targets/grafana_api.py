"""A small Grafana HTTP API client (requests + urllib3 Retry).

5xx, 429 and connection failures are retried with backoff (Retry-After honoured);
401/403/404/412/422 become one precise message with what to do. The token is sent
as a bearer header and never appears in a message.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import RemoteError

RETRY_STATUSES = (429, 500, 502, 503, 504)
# What each refusal means for a user: (message, what to do).
_STATUS_MESSAGES = {
    400: ("Grafana rejected the request (400): {message}", "run `gpudash lint`; check the folder uid and dashboard uid"),
    401: ("Grafana rejected the credentials (401)", "set GRAFANA_TOKEN to a valid service-account token (glsa_...)"),
    403: ("the service account may not do this (403): {message}",
          "give the service account the Editor role (Admin to create folders)"),
    404: ("not found (404): {message}", "check GRAFANA_URL (include any sub-path) and the folder uid"),
    422: ("Grafana could not process the dashboard (422): {message}", "run `gpudash lint` and fix what it reports"),
}
_PRECONDITION_HINTS = {
    "version-mismatch": "someone saved the dashboard meanwhile: run `gpudash plan` and push again",
    "name-exists": "another dashboard in the folder has this title: rename one of them",
    "plugin-dashboard": "the dashboard belongs to a plugin: give yours another uid",
}


def _safe_url(url: str) -> str:
    """The URL without any user:password part."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class GrafanaClient:
    def __init__(self, url: str, token: str | None = None, basic: tuple[str, str] | None = None,
                 verify: bool = True, timeout: float = 10.0, retries: int = 4, backoff: float = 0.5):
        import requests
        from requests.adapters import HTTPAdapter
        from urllib3.util.retry import Retry

        self.base = url.rstrip("/")
        self.display = _safe_url(self.base)
        self.timeout = timeout
        self.session = requests.Session()
        self.session.verify = verify
        self.session.headers.update({"Accept": "application/json", "User-Agent": "gpudash"})
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        elif basic:
            self.session.auth = basic
        retry = Retry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=backoff,
                      status_forcelist=RETRY_STATUSES, allowed_methods=None, raise_on_status=False,
                      respect_retry_after_header=True)
        adapter = HTTPAdapter(max_retries=retry)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.calls: dict[str, int] = {}

    def _request(self, method: str, path: str, *, what: str, allow: tuple[int, ...] = (), **kwargs) -> Any:
        import requests

        self.calls[method] = self.calls.get(method, 0) + 1
        try:
            response = self.session.request(method, self.base + path, timeout=self.timeout, **kwargs)
        except requests.exceptions.SSLError:
            raise RemoteError(f"TLS verification failed for {self.display}", where=what,
                              hint="give the CA bundle in REQUESTS_CA_BUNDLE, or --insecure if you accept the risk"
                              ) from None
        except requests.exceptions.RequestException as exc:
            reason = type(exc).__name__
            raise RemoteError(f"cannot reach Grafana at {self.display} ({reason}, after retries)", where=what,
                              hint="check GRAFANA_URL and that Grafana is up; run again, publishing converges"
                              ) from None
        if response.status_code in allow:
            return None
        if response.status_code >= 400:
            raise self._error(response, what)
        return response.json() if response.content else {}

    def _error(self, response, what: str) -> RemoteError:
        try:
            body = response.json()
        except ValueError:
            body = {}
        message = body.get("message", "") if isinstance(body, dict) else ""
        status = response.status_code
        if status == 412:
            kind = body.get("status", "") if isinstance(body, dict) else ""
            return RemoteError(f"Grafana refused the save (412 {kind}): {message}", where=what,
                               hint=_PRECONDITION_HINTS.get(kind, "run `gpudash plan` to see the live state"))
        if status in _STATUS_MESSAGES:
            text, hint = _STATUS_MESSAGES[status]
            return RemoteError(text.format(message=message), where=what, hint=hint)
        return RemoteError(f"Grafana answered {status} after retries: {message}", where=what,
                           hint="check Grafana's health and run again; publishing converges")

    # --- endpoints ---------------------------------------------------------------------------

    def folder(self, uid: str) -> dict[str, Any] | None:
        return self._request("GET", f"/api/folders/{uid}", what=f"folder {uid}", allow=(404,))

    def create_folder(self, uid: str, title: str) -> dict[str, Any]:
        return self._request("POST", "/api/folders", what=f"folder {uid}", json={"uid": uid, "title": title})

    def search_tag(self, tag: str) -> list[dict[str, Any]]:
        return self._request("GET", "/api/search", what=f"search tag {tag}",
                             params={"type": "dash-db", "tag": tag, "limit": 5000}) or []

    def dashboard(self, uid: str) -> dict[str, Any] | None:
        return self._request("GET", f"/api/dashboards/uid/{uid}", what=f"dashboard {uid}", allow=(404,))

    def latest_version(self, uid: str) -> dict[str, Any] | None:
        versions = self._request("GET", f"/api/dashboards/uid/{uid}/versions", what=f"dashboard {uid}",
                                 params={"limit": 1}, allow=(404,))
        if isinstance(versions, dict):  # newer Grafana wraps the list
            versions = versions.get("versions", [])
        return versions[0] if versions else None

    def save(self, dashboard: dict[str, Any], folder_uid: str, message: str, overwrite: bool) -> dict[str, Any]:
        body = {"dashboard": dashboard, "folderUid": folder_uid, "message": message, "overwrite": overwrite}
        return self._request("POST", "/api/dashboards/db", what=f"dashboard {dashboard.get('uid')}", json=body)

    def delete(self, uid: str) -> None:
        self._request("DELETE", f"/api/dashboards/uid/{uid}", what=f"dashboard {uid}")
