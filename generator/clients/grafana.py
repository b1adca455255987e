"""A small Grafana HTTP API client (requests), under the command's deadline.

5xx, 429 and connection failures (reset, timed out, a truncated answer) are retried with
exponential backoff (a refused connection once, a host name that does not resolve not at all: http.RETRIES_AFTER); Retry-After is honoured up to the deadline's cap. Waits go through the
deadline's clock, and every call ends when the deadline does. 401/403/404/412/422 become one
precise message with what to do. An answer that is not what the API returns (not JSON, an HTML
page, the wrong shape) is a remote failure, never read as "nothing there". The token is sent as
a bearer header and never appears in a message; ~/.netrc is never read (it would replace the token).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Iterator, NamedTuple

from .. import redact, urls
from ..errors import GpudashError, RemoteError, may_have_happened
from ..urls import safe_url
from .answer import NOT_JSON, json_value
from .deadline import Deadline, DeadlineExceeded
from .http import (NO_SUCH_HOST, PAST_LIMIT, RETRIES_AFTER, connect_failure, credentials, joined_within_limit,
                   no_netrc_on_redirect)

RETRY_STATUSES = (429, 500, 502, 503, 504)
SEARCH_PAGE = 5000  # the most hits Grafana gives one search page
PUBLIC_DASHBOARD_NOT_FOUND = "publicdashboards.notFound"  # Grafana's messageId: the dashboard has no public dashboard
ANNOTATIONS_READ = 100  # a dashboard's annotations counted before a delete (one more is read: "100+" means more)
TEAMS_PAGE = 1000  # teams asked for per page of the team search (Grafana's default page)
# The members of Grafana's preferences answer (dtos.Prefs; Grafana 10 and later leave out each one not set, so `{}` is
# "nothing set"): a 200 holding none of them, or Grafana's error document (its `message`: a proxy or a failing plugin
# answering 200), is not that answer, never "no home dashboard"
PREFERENCE_MEMBERS = frozenset({"theme", "timezone", "weekStart", "homeDashboardId", "homeDashboardUID", "language",
                                "locale", "regionalFormat", "queryHistory", "navbar", "cookiePreferences"})
PLAYLISTS_READ = 1000  # playlists listed in one answer (Grafana's list has no pages: a full one may hold more)
# pages of Grafana 12's list of a dashboard's versions ({"continueToken", "versions"}) followed at most for one read:
# each holds at least a version but for an odd one, and a read asks 50 at most (grafana_sync.HISTORY)
VERSION_PAGES = 60
# From Grafana 11, GET /api/playlists lists through Grafana's resource API (pkg/api/playlist.go, playlistK8sHandler),
# which asks no limit, ignores the caller's, and drops the list's continue token: Grafana 11's SQL store then answers
# its default page of 100 (pkg/registry/apps/playlist legacy_storage.go); 50 is the page unified storage was seen to
# answer (its source not read). An answer of exactly one such page may hold only some of the playlists.
PLAYLIST_PAGES = (50, 100)
# What each refusal means for a user: (message, what to do).
_STATUS_MESSAGES = {
    400: ("Grafana rejected the request (400): {message}", "run `gpudash lint`; check the folder uid and dashboard uid"),
    401: ("Grafana rejected the credentials (401)", None),  # the fix names where they came from: credentials_fix
    403: ("the service account may not do this (403): {message}",
          "give the service account the Editor role (Admin to create folders)"),
    404: ("not found (404): {message}", "check GRAFANA_URL (include any sub-path) and the folder uid"),
    422: ("Grafana could not process the dashboard (422): {message}", "run `gpudash lint` and fix what it reports"),
}
_K8S_SAVE_MISMATCH = re.compile(r"dashboard already exists\. use overwrite flag to update\.?", re.IGNORECASE)
_PRECONDITION_HINTS = {
    "version-mismatch": "someone saved the dashboard meanwhile: run `gpudash plan` and push again",
    "name-exists": "another dashboard in the folder has this title: rename one of them",
    "plugin-dashboard": "the dashboard belongs to a plugin: give yours another uid",
}
# Grafana's own "not found" (404) for each thing read, by its message (case and a final period aside): its JSON error
# body (the API spec's ErrorResponseBody) has a message and nothing else required, which a gateway's 404 for a path it
# has no route for has too (Kong: {"message": "no Route matched with those values"}). Only Grafana's own message for
# that endpoint shows that Grafana has no such thing; any other 404 says nothing of what Grafana holds.


class Absent(NamedTuple):
    """Grafana's own "not found" messages for one read: `pattern` (a regular expression, matched whole) and `text`,
    what it matches as people read it in a message."""
    pattern: str
    text: str


def _absent(*said: str) -> Absent:
    """The messages `said`, word for word."""
    return Absent("|".join(map(re.escape, said)), " or ".join(said))


DASHBOARD_ABSENT = "dashboard not found"  # pkg/api/dashboard.go (dashboards.ErrDashboardNotFound)
FOLDER_ABSENT = "folder not found"  # dashboards.ErrFolderNotFound
PLAYLIST_ABSENT = "playlist not found"
VERSIONS_ABSENT = Absent(rf"{re.escape(DASHBOARD_ABSENT)}|no versions found for dashboard ?id \d+",  # GetDashboardVersions
                         f"{DASHBOARD_ABSENT} or no versions found for dashboard id N")
PUBLIC_DASHBOARD_ABSENT = _absent("public dashboard not found", DASHBOARD_ABSENT)  # the caller reads its messageId too
NO_ROUTE = _absent("not found")  # Grafana's 404 for an API path it has no route for (an endpoint its release lacks)
SAVED_ABSENT = _absent(DASHBOARD_ABSENT)  # a save by an id Grafana has no dashboard with
_URL_HINT = "set GRAFANA_URL to Grafana's address with its scheme, e.g. https://grafana.example.com"


def stored_absent(legacy: str, resource: str, uid: str) -> Absent:
    """Grafana's "not found" for the thing `uid` (of the Kubernetes-style `resource`): its legacy API's message
    `legacy`, or the not-found of its Kubernetes-style resource API, the apiserver's NotFound naming the resource and
    the very uid asked (`<resource>.grafana.app "<uid>" not found`). Grafana 11 and later serve /api/playlists
    through it; /api/folders where the kubernetesFolders feature is on (pkg/api/folder.go, folderK8sHandler.writeError),
    and dashboards where Grafana 12 stores them so."""
    return _absent(legacy, f'{resource}.grafana.app "{uid}" not found')


# Who deleted a dashboard `GrafanaClient.delete` found gone: gpudash (Grafana answered its delete), someone else (no
# request of gpudash's reached Grafana), or either (one reached Grafana and its answer was lost)
DELETED, GONE, MAYBE_DELETED = "deleted", "gone", "maybe deleted"
ODDLY_ANSWERED = "maybe deleted, answered oddly"  # found gone after an answer that was not Grafana's


class PreconditionFailed(RemoteError):
    """Grafana answered 412; `kind` is version-mismatch, name-exists or plugin-dashboard."""

    def __init__(self, what: str, *, kind: str, where: str | None = None, hint: str | None = None):
        super().__init__(what, where=where, hint=hint)
        self.kind = kind


class DashboardGone(RemoteError):
    """Grafana has no dashboard with the id a save carried (404), or a read right before the save found none: deleted
    since it was read (perhaps created anew under its uid)."""

    def __init__(self, dashboard_id: Any, uid: Any, how: str):
        super().__init__(f"Grafana has no dashboard with the id {dashboard_id} read before ({how}): deleted since, or "
                         "deleted and created anew under its uid by someone; not saved", where=f"dashboard {uid}",
                         hint="run `gpudash plan` and review it, then push again")


class InvalidAnswer(RemoteError):
    """Grafana (or something in front of it) answered, but not with what the API returns."""


class Unreachable(RemoteError):
    """No answer after retries: refused, reset, timed out or cut short."""


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def check_url(url: str) -> str:
    """GRAFANA_URL as a base URL, or a usage error saying what to write instead."""
    return urls.check_url(url, "GRAFANA_URL", "https://grafana.example.com")


def _reached(exc: Exception) -> bool:
    """Whether a request that failed may have reached Grafana: anything but a failure to connect (refused,
    no such host, the connect timing out), which sends nothing."""
    import requests
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return False
    reason = getattr(exc.args[0], "reason", None) if isinstance(exc, requests.exceptions.ConnectionError) \
        and exc.args else None
    return not isinstance(reason, (NewConnectionError, ConnectTimeoutError))


def lost(exc: RemoteError) -> bool:
    """Whether this failure of a write came after an attempt of it reached Grafana and lost its answer."""
    return bool(getattr(exc, "answer_lost", False)) and not isinstance(exc, DeadlineExceeded)


def _environment_read_once(session):
    """`session.merge_environment_settings`, read once for each scheme and host. requests reads the proxy
    variables (and NO_PROXY against the host) and the CA bundle variables at every request: a fifth of a call's CPU
    against a local Grafana. What it reads depends on the URL's scheme and host alone, and the environment does not
    change during a command; a request given its own proxies, stream, verify or cert is merged as requests does."""
    from urllib.parse import urlsplit

    merge, kept = session.merge_environment_settings, {}

    def merged(url, proxies, stream, verify, cert):
        if proxies or stream is not None or verify not in (None, False) or cert is not None:
            return merge(url, proxies, stream, verify, cert)
        where = (*urlsplit(url)[:2], verify)
        if where not in kept:
            kept[where] = merge(url, proxies, stream, verify, cert)
        settings = kept[where]
        return {**settings, "proxies": dict(settings["proxies"])}

    return merged


def _body(response) -> str:
    """What an answer's body is, for a message: its content type and length (`text/html, 312 bytes`)."""
    kind = response.headers.get("Content-Type", "no content type").split(";")[0]
    return f"{kind}, {len(response.content)} bytes"


def _unasked_hit(hits: list[dict[str, Any]], tag: str | None) -> str | None:
    """What a page of a search for dashboards (by `tag`, when given) lists that was not asked for, or None."""
    for hit in hits:
        kind, tags = hit.get("type"), hit.get("tags")
        if kind is not None and kind != "dash-db":
            return f"a hit of type {kind!r}, not a dashboard ({hit['uid']})"
        if tag is not None and tags is not None and not (isinstance(tags, list) and any(
                isinstance(t, str) and t.casefold() == tag.casefold() for t in tags)):
            return f"a dashboard without the tag {tag} it was asked by ({hit['uid']})"
    return None


def _first_save(version: dict[str, Any]) -> bool:
    """Whether Grafana's list of versions gives `version` with its own message, not the one saved: a dashboard's first
    save (parentVersion 0), listed as "Initial save"."""
    parent = version.get("parentVersion")
    return (parent == 0 and type(parent) is int) or version.get("message") == "Initial save"


def credentials_fix(token_file: str | None, basic: bool) -> tuple[str, str]:
    """(where the credentials came from, what to do when Grafana refuses them): the token file given, else
    GRAFANA_USER and GRAFANA_PASSWORD where they were sent, else GRAFANA_TOKEN."""
    if token_file:
        return token_file, f"write a valid service-account token (glsa_...) into {token_file} (--token-file)"
    if basic:
        return "GRAFANA_USER / GRAFANA_PASSWORD", \
            "check GRAFANA_USER and GRAFANA_PASSWORD, or set GRAFANA_TOKEN to a service-account token (glsa_...)"
    return "GRAFANA_TOKEN", "set GRAFANA_TOKEN to a valid service-account token (glsa_...)"


class GrafanaClient:
    def __init__(self, url: str, token: str | None = None, basic: tuple[str, str] | None = None,
                 verify: bool = True, timeout: float = 10.0, retries: int = 4, backoff: float = 0.5,
                 deadline: Deadline | None = None, token_file: str | None = None):
        import requests
        from requests.adapters import HTTPAdapter

        self.base = check_url(url)
        self.display = safe_url(self.base)
        self.timeout = timeout
        self.retries, self.backoff = retries, backoff
        self.deadline = deadline or Deadline(command="publishing")
        self.session = requests.Session()
        self.session.merge_environment_settings = _environment_read_once(self.session)
        self.session.verify = verify
        # requests takes REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE over a session's verify=False: given with each request,
        # False is kept (the variables are read only where a request's verify is True or unset)
        self.unverified = {} if verify else {"verify": False}
        if not verify:
            import urllib3

            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # said once, by the command
        self.session.headers.update({"Accept": "application/json", "User-Agent": "gpudash"})
        self.credentials_from, self.credentials_fix = credentials_fix(token_file, basic is not None and not token)
        for credential in (token, *(basic or ())):
            if credential and (not credential.isprintable() or not _latin1(credential)):
                raise GpudashError("the Grafana credentials cannot be sent in an HTTP header: they hold a line break, "
                                   "another control character, or a character outside Latin-1",
                                   where=self.credentials_from,
                                   hint="copy the token again: a service-account token is one line of ASCII")
        self.session.auth = credentials(token, basic)
        self.session.rebuild_auth = no_netrc_on_redirect(self.session)
        adapter = HTTPAdapter(max_retries=0)  # retries are ours: paced by the deadline's clock
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.calls: dict[str, int] = {}
        self.sent: dict[str, int] = {}  # requests that were sent, by method (a call the deadline stopped first is
        # not, nor one that failed to connect)
        self.notes: list[str] = []  # things the user should know that are not failures
        self._permissions: tuple[dict[str, list[str]] | None] | None = None  # (the answer,) once read

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # --- one call, retried ---------------------------------------------------------------------

    def _sending(self, method: str) -> None:
        """Counts a request that may be on its way to Grafana: the deadline let its call start."""
        self.sent[method] = self.sent.get(method, 0) + 1

    def _send(self, method: str, path: str, kwargs: dict[str, Any]):
        """The answer, its whole body read here, under the deadline; a body past BODY_LIMIT (a proxy or server
        answering without end) is not read on: a broken answer (PAST_LIMIT), as one cut short is."""
        import requests

        response = self.session.request(method, self.base + path, timeout=self.deadline.timeout(self.timeout),
                                        stream=True, **self.unverified, **kwargs)
        with response:
            response._content = joined_within_limit(response.iter_content(1 << 16),
                                                    lambda: requests.exceptions.ChunkedEncodingError(PAST_LIMIT))
        return response

    @contextlib.contextmanager
    def _reported_if_sent(self, method: str, sent: str, unshown: str = "no answer showed it") -> Iterator[None]:
        """A stop (a signal, the deadline) inside the block after a `method` request of it was sent says the
        write may have happened; one before any was sent is "not attempted", as it says."""
        before = self.sent.get(method, 0)
        try:
            yield
        except DeadlineExceeded as exc:
            if self.sent.get(method, 0) == before:
                raise
            raise exc.after_sending(sent, unshown) from None

    def _request(self, method: str, path: str, *, what: str, allow: tuple[int, ...] = (), absent: Absent | None = None,
                 before_retry=None, reached: list[bool] | None = None, refusals: list[Any] | None = None,
                 **kwargs) -> Any:
        """One call, retried. A failure after an attempt that reached Grafana and lost its answer carries
        `answer_lost`: a write may have happened though the call failed (every later attempt unanswered, or
        refused because the first one landed), which only a read-back can settle. Any 5xx is such an attempt: a
        502, 503 or 504 is a gateway's answer, given when Grafana's was lost or late, and a 500 is Grafana's own
        failure of a request it received, which may have made the write first; neither says whether it did.
        `before_retry`, called after each wait and before the attempt it precedes, looks again: it raises to stop
        the call, or returns False when nothing is left to do (the call then answers None). `reached`, when
        given, is filled with one entry per failed attempt: whether it may have reached Grafana. `refusals`, when
        given, gets the body of an answer of an allowed status (its JSON, or None when it is not JSON). A 404 allowed
        is read as "none" only when its message is Grafana's own for the endpoint (`absent`)."""
        assert 404 not in allow or absent, "an allowed 404 names Grafana's own message for it"
        reached = [] if reached is None else reached
        try:
            return self._attempts(method, path, what, allow, kwargs, reached, before_retry, refusals, absent)
        except RemoteError as exc:
            if any(reached):
                exc.answer_lost = True
            raise

    def _attempts(self, method: str, path: str, what: str, allow: tuple[int, ...], kwargs: dict[str, Any],
                  reached: list[bool], before_retry=None, refusals: list[Any] | None = None,
                  absent: Absent | None = None) -> Any:
        import requests

        attempt, refused = 0, 0  # refused: connect failures in a row (after a later answer, a 503 of a Grafana starting
        # up, the call retries up to its usual limit, counted from its first attempt)
        while True:
            stop_now = False
            self.calls[method] = self.calls.get(method, 0) + 1
            try:
                response = self.deadline.run(lambda: self._send(method, path, kwargs), what,
                                             on_start=lambda: self._sending(method))
            except requests.exceptions.SSLError:
                raise RemoteError(f"TLS verification failed for {self.display}", where=what,
                                  hint="give the CA bundle in REQUESTS_CA_BUNDLE, or --insecure if you accept the risk"
                                  ) from None
            except requests.exceptions.InvalidProxyURL:  # (an InvalidURL: the proxy's, not GRAFANA_URL)
                raise GpudashError("the proxy the environment names for Grafana is not a usable URL",
                                   where="HTTP_PROXY / HTTPS_PROXY / ALL_PROXY (or their lower-case forms)",
                                   hint="give the proxy's address with its scheme, e.g. http://proxy.example:3128, or "
                                        "unset the variable") from None
            except (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                    requests.exceptions.MissingSchema) as exc:
                raise GpudashError(f"not a usable URL ({type(exc).__name__})", where="GRAFANA_URL",
                                   hint=_URL_HINT) from None
            except requests.exceptions.RequestException as exc:
                reached.append(_reached(exc))
                if not reached[-1]:  # it failed to connect: nothing was sent after all
                    self.sent[method] -= 1
                why = connect_failure(exc)
                refused = refused + 1 if why else 0
                stop_now = bool(why) and refused > RETRIES_AFTER[why]
                shown = why or (PAST_LIMIT if exc.args == (PAST_LIMIT,) else type(exc).__name__)
                failure: RemoteError = Unreachable(
                    f"cannot reach Grafana at {self.display} ({shown}, after {attempt + 1} "
                    f"attempt{'s' if attempt else ''})", where=what,
                    hint="check the host name in GRAFANA_URL" if why == NO_SUCH_HOST else
                    "check GRAFANA_URL and that Grafana is up; run again, publishing converges")
                wait = None
            except OSError as exc:  # not a request failure: requests could not use its CA bundle path
                raise GpudashError(f"the TLS CA bundle cannot be used ({exc})", where="REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE",
                                   hint="point it at a readable PEM file, or unset it") from None
            else:
                if response.status_code not in RETRY_STATUSES:
                    if response.status_code >= 500:  # another 5xx (501; a CDN's 520 or 524: the origin took the
                        reached.append(True)  # request and its answer was late): not retried, but it may have landed
                    return self._answer(response, method, path, what, allow, refusals, absent)
                reached.append(response.status_code >= 500)  # reached Grafana (not a 429): it may have landed
                refused = 0
                failure = self._error(response, what)
                wait = self.deadline.retry_after(response.headers.get("Retry-After"), what)
            attempt += 1
            if attempt > self.retries or stop_now:
                raise failure
            wait = wait if wait is not None else self.backoff * 2 ** (attempt - 1)
            self.deadline.pause(wait, what, failure=failure)
            if before_retry is not None and not before_retry():
                return None

    def _answer(self, response, method: str, path: str, what: str, allow: tuple[int, ...],
                refusals: list[Any] | None = None, absent: Absent | None = None) -> Any:
        # requests follows a redirect of a write (http to https, a sub-path) by a 301, 302 or 303 as a GET: that
        # GET's answer is not the write's (a 307 or 308 resends the write itself)
        hops = [*response.history, response]
        for before, after in zip(hops, hops[1:]):
            # requests leaves the credentials behind on a redirect to another scheme, host or port: what answers
            # there answers an anonymous visitor (a sign-in page, another Grafana's public view), not this account
            if self.session.should_strip_auth(before.url, after.url):
                raise InvalidAnswer(f"Grafana answered {method} {path.split('?')[0]} with a redirect "
                                    f"({before.status_code} to {safe_url(after.url)}), another host (or scheme or "
                                    "port): the credentials are not sent there, so its answer is not Grafana's for "
                                    "them", where=what,
                                    hint="set GRAFANA_URL to the address Grafana redirects to (its scheme, host and "
                                         "sub-path)")
        redirected = response.history[0] if response.history else response
        if response.request.method != method or 300 <= response.status_code < 400:
            to = safe_url(redirected.headers.get("Location") or "nowhere")
            raise InvalidAnswer(f"Grafana answered {method} {path.split('?')[0]} with a redirect "
                                f"({redirected.status_code} to {to}), which sends a {method} on as a GET: the write "
                                "was not made there", where=what,
                                hint="set GRAFANA_URL to the address Grafana redirects to (its scheme, host and "
                                     "sub-path)")
        if response.status_code in allow:
            # Grafana's refusal (a 404 "not found", a 409) is a JSON object with its message: a proxy's or load
            # balancer's page of that status says nothing of what Grafana holds, and is never read as "not there"
            said = json_value(response.json)
            if not (isinstance(said, dict) and isinstance(said.get("message"), str)):
                raise InvalidAnswer(f"Grafana answered {method} {path.split('?')[0]} with {response.status_code} but "
                                    f"not as Grafana refuses (a JSON object with its message): {_body(response)}",
                                    where=what,
                                    hint="GRAFANA_URL must reach Grafana's API itself (include any sub-path); a "
                                         "proxy or load balancer answered instead")
            message = said["message"].strip().rstrip(".")
            if response.status_code == 404 and not (absent and re.fullmatch(absent.pattern, message, re.IGNORECASE)):
                raise InvalidAnswer(f"not found (404) at {method} {path.split('?')[0]}, saying "
                                    f"{redact.text(message)[:80]!r}, not Grafana's own \"not found\" for it "
                                    f"({absent.text if absent else 'none'!r}): a gateway or proxy in front of Grafana "
                                    "(a route that does not pass this path on) may have answered, and nothing shows "
                                    "that Grafana has none", where=what,
                                    hint="GRAFANA_URL must reach Grafana's API itself (include any sub-path); check "
                                         "the gateway's routes for /api/")
            if refusals is not None:
                refusals.append(said)
            return None
        if response.status_code >= 400:
            raise self._error(response, what)
        found = json_value(response.json)
        said = f"not JSON ({_body(response)})" if found is NOT_JSON else "JSON null"
        # None is what an allowed refusal (a 404: "not found") answers: a body that reads as none is no such answer
        if found is None or found is NOT_JSON:
            raise InvalidAnswer(f"Grafana answered {method} {path.split('?')[0]} with {response.status_code} but "
                                f"{said}", where=what,
                                hint="GRAFANA_URL must reach Grafana's API itself (include any sub-path); a proxy, "
                                     "login page or load balancer answered instead") from None
        return found

    def _error(self, response, what: str) -> RemoteError:
        body = json_value(response.json)
        if not isinstance(body, dict):
            body = {}
        message = str(body.get("message", ""))
        status = response.status_code
        if status == 409 and _K8S_SAVE_MISMATCH.fullmatch(message.strip()):
            # Grafana saving through its Kubernetes-style dashboard API (saveDashboardViaK8s) refuses a save whose
            # version is not the stored one so, where the legacy API answers 412 version-mismatch
            status, body = 412, {"status": "version-mismatch"}
        if status == 412:
            kind = str(body.get("status", ""))
            return PreconditionFailed(f"Grafana refused the save (412 {kind}): {message}", kind=kind, where=what,
                                      hint=_PRECONDITION_HINTS.get(kind, "run `gpudash plan` to see the live state"))
        if status in _STATUS_MESSAGES:
            text, hint = _STATUS_MESSAGES[status]
            return RemoteError(text.format(message=message), where=what, hint=hint or self.credentials_fix)
        return RemoteError(f"Grafana answered {status} after retries: {message}", where=what,
                           hint="check Grafana's health and run again; publishing converges")

    @staticmethod
    def _shape(value: Any, ok: bool, what: str, expected: str) -> Any:
        if not ok:
            got = f"an object with keys {', '.join(sorted(map(str, value))[:8]) or '(none)'}" \
                if isinstance(value, dict) else type(value).__name__
            raise InvalidAnswer(f"Grafana's answer is not a valid API answer: expected {expected}, got {got}",
                                where=what,
                                hint="GRAFANA_URL must reach Grafana's API itself (include any sub-path)")
        return value

    @staticmethod
    def _read_back(exc: RemoteError, sent: str, done) -> None:
        """After a write whose answer was lost (`exc`): returns when `done()` shows it happened; raises `exc`
        as it was when `done()` shows it did not, and as "may have happened" when the read fails."""
        try:
            happened = done()
        except DeadlineExceeded:
            raise
        except RemoteError as check:
            raise may_have_happened(exc, sent, f"its answer was lost and the read-back failed ({check.what})") \
                from None
        if not happened:
            raise exc

    # --- endpoints ---------------------------------------------------------------------------

    def folder(self, uid: str) -> dict[str, Any] | None:
        what = f"folder {uid}"
        found = self._request("GET", f"/api/folders/{uid}", what=what, allow=(404,),
                              absent=stored_absent(FOLDER_ABSENT, "folders.folder", uid))
        return found if found is None else self._shape(found, isinstance(found, dict) and found.get("uid") == uid,
                                                       what, f"the folder {uid}")

    def create_folder(self, uid: str, title: str) -> bool:
        """Create the folder; a folder already there with this uid (our lost answer, or someone else's) is fine: False
        when no create of ours can have made it (Grafana answered 409 and no earlier attempt reached it). Stopped (a
        signal, the deadline) once the create was sent, it may have made the folder, and says so: the next
        run finds the folder by its uid and puts the dashboards in it, as it would have."""
        what = f"folder {uid}"
        reached: list[bool] = []
        with self._reported_if_sent("POST", "the folder's create was sent to Grafana"):
            try:
                created = self._request("POST", "/api/folders", what=what, allow=(409,),
                                        json={"uid": uid, "title": title}, reached=reached)
            except RemoteError as exc:
                if not lost(exc):
                    raise
                self._read_back(exc, "the folder's create was sent to Grafana",
                                lambda: self.folder(uid) is not None)
                return True
            if created is None:
                if self.folder(uid) is None:
                    raise RemoteError("Grafana refused the folder (409) but has no folder with this uid", where=what,
                                      hint="a folder with the same title may exist elsewhere: rename one of them")
                return any(reached)
        self._shape(created, isinstance(created, dict) and created.get("uid") == uid, what,
                    f"the created folder, with uid {uid}")
        return True

    def search_tag(self, tag: str) -> list[dict[str, Any]]:
        """Every dashboard with the tag. Grafana answers a page at a time (at most SEARCH_PAGE hits, fewer
        when a proxy or release caps it), so pages are read until one is empty; a page that repeats
        one already read (a server that ignores `page`), lists a dashboard twice, or lists what was not asked for
        (a hit of another type than dash-db, or whose tags lack the tag: a server or proxy that drops a filter) is
        not a valid answer. (The tag is compared without case: a database whose collation ignores case matches so.)"""
        return self._search(f"search tag {tag}", {"tag": tag}, lambda hits: _unasked_hit(hits, tag))

    def search_folder(self, folder: dict[str, Any]) -> list[dict[str, Any]]:
        """Every dashboard in the folder `folder` (as `folder()` reads it: its uid, and its id where Grafana gives
        one), every page as `search_tag` reads them; a hit in another folder is not what was asked for (one that
        names no folder is a candidate, which the caller reads by uid). Asked by `folderUIDs` alone: Grafana answers
        400 ("search supports UIDs or IDs, not both") to a search naming both. A Grafana from before `folderUIDs`
        ignores it and answers dashboards of other folders: asked again by the folder's id (`folderIds`)."""
        uid = folder["uid"]
        elsewhere: list[str] = []

        def unasked(hits: list[dict[str, Any]]) -> str | None:
            elsewhere[:] = [hit["uid"] for hit in hits if hit.get("folderUid") not in (uid, None)][:1]
            if elsewhere:
                return f"a dashboard in another folder than it was asked for ({elsewhere[0]})"
            return _unasked_hit(hits, None)

        folder_id = folder.get("id")
        try:
            return self._search(f"search folder {uid}", {"folderUIDs": uid}, unasked)
        except InvalidAnswer:
            if not elsewhere or not isinstance(folder_id, int) or isinstance(folder_id, bool):
                raise
        return self._search(f"search folder {uid}", {"folderIds": folder_id}, unasked)

    def _search(self, what: str, asked: dict[str, Any], unasked) -> list[dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        page = 1
        while True:
            hits = self._request("GET", "/api/search", what=what,
                                 params={"type": "dash-db", **asked, "limit": SEARCH_PAGE, "page": page})
            ok = isinstance(hits, list) and all(isinstance(h, dict) and isinstance(h.get("uid"), str) for h in hits)
            self._shape(hits, ok, what, "a list of dashboards")
            if not hits:
                return list(found.values())
            said = unasked(hits)
            repeated = [h["uid"] for h in hits if h["uid"] in found]
            if repeated:
                said = f"dashboards of an earlier page ({repeated[0]}): the search cannot be read to its end"
            elif said is None and len({h["uid"] for h in hits}) < len(hits):
                said = "a dashboard twice"
            if said is not None:
                raise InvalidAnswer(f"Grafana's search answered page {page} with {said}", where=what,
                                    hint="GRAFANA_URL must reach Grafana's API itself; a proxy may drop the `page`, "
                                         "`type`, `tag` or folder parameter")
            found.update((h["uid"], h) for h in hits)
            page += 1

    def dashboard(self, uid: str) -> dict[str, Any] | None:
        what = f"dashboard {uid}"
        found = self._request("GET", f"/api/dashboards/uid/{uid}", what=what, allow=(404,),
                              absent=stored_absent(DASHBOARD_ABSENT, "dashboards.dashboard", uid))
        if found is None:
            return None
        ok = isinstance(found, dict) and isinstance(found.get("dashboard"), dict) and \
            isinstance(found.get("meta", {}), dict)
        self._shape(found, ok, what, "a dashboard with its meta")
        named = found["dashboard"].get("uid")
        if named != uid:  # another dashboard's answer (a cache or proxy mixing answers): nothing about this one
            raise InvalidAnswer(f"Grafana's answer is not a valid API answer: asked for dashboard {uid}, it gives "
                                f"{'a dashboard without a uid' if named is None else f'dashboard {named!r}'}",
                                where=what, hint="GRAFANA_URL must reach Grafana's API itself; a cache or proxy in "
                                                 "front of it may mix answers")
        return found

    def versions(self, uid: str, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` versions, newest first ([] when the dashboard is gone), each with the message it was
        saved with. Grafana's list does not give that of a dashboard's first save: it answers "Initial save" for a
        version of parentVersion 0 (GetDashboardVersions, every release), which is what a create by gpudash is (it
        carries no version): that version's message is read alone (GetDashboardVersion gives it as saved), or a
        dashboard gpudash created and never saved again would read as saved by no gpudash run.
        Grafana 12 answers in pages, {"continueToken", "versions"}: a page that holds fewer than asked and a token is
        followed with it (VERSION_PAGES at most), or the last versions searched for gpudash's save would stop short. A
        token that is not a text or comes back as asked, a continued page in another form, a 404 after the first page,
        or pages whose versions repeat or are out of order, is not a valid answer (InvalidAnswer): never the versions
        read so far taken for the list."""
        what = f"dashboard {uid} versions"
        listed: list[dict[str, Any]] = []
        token = None  # the continue token of the page to read (None: the first page)
        for page in range(1, VERSION_PAGES + 1):
            params = {"limit": limit - len(listed), **({"continueToken": token} if token is not None else {})}
            found = self._request("GET", f"/api/dashboards/uid/{uid}/versions", what=what, params=params,
                                  allow=(404,), absent=VERSIONS_ABSENT)
            if found is None:
                if token is None:
                    return []
                # (deleted between two pages, or a token refused so): the versions read are not the list
                raise InvalidAnswer(f"Grafana's answer is not a valid API answer: page {page} of the list was not "
                                    "found (404), after a page that gave a continue token", where=what,
                                    hint="run again; if it repeats, point GRAFANA_URL at Grafana itself")
            wrapped = isinstance(found, dict) and "versions" in found  # Grafana 12 wraps the list, with a token
            after = found.get("continueToken", "") if wrapped else ""
            if wrapped:
                found = found["versions"]
            # each entry has its message (a text, "" when the person saving gave none) and version number: an entry
            # without them is not read as a save that records nothing. A continued page is Grafana 12's form, its
            # token a text ("" on the last page)
            ok = isinstance(found, list) and all(
                isinstance(v, dict) and isinstance(v.get("message"), str)
                and isinstance(v.get("version"), int) and not isinstance(v.get("version"), bool) for v in found) \
                and isinstance(after, str) and (wrapped or token is None)
            found = self._shape(found, ok, what, "a list of versions, each with a text message and a version number"
                                + (", and a text continue token" if wrapped else "")
                                + (" (Grafana 12's form, as the page before)" if token is not None else ""))
            listed += found
            if not after or len(listed) >= limit:
                break
            if after == token:  # (a proxy that drops the token answers the first page again, and its token)
                raise InvalidAnswer("Grafana's answer is not a valid API answer: a page of the list gave the continue "
                                    "token it was asked with", where=what,
                                    hint="GRAFANA_URL must reach Grafana's API itself: something in front of it may "
                                         "drop the continueToken query parameter")
            token = after
        else:
            raise InvalidAnswer(f"Grafana's answer is not a valid API answer: {VERSION_PAGES} pages of the list held "
                                f"{len(listed)} of the {limit} versions asked, each with a continue token", where=what,
                                hint="run again; if it repeats, point GRAFANA_URL at Grafana itself")
        numbers = [v["version"] for v in listed]  # pages read together: each version once, newest first
        if token is not None and (len(set(numbers)) != len(numbers) or numbers != sorted(numbers, reverse=True)):
            raise InvalidAnswer("Grafana's answer is not a valid API answer: its pages list versions "
                                f"{', '.join(map(str, numbers[:12]))}, not each once, newest first", where=what,
                                hint="run again; if it repeats, point GRAFANA_URL at Grafana itself")
        return [self._as_saved(uid, v) if _first_save(v) else v for v in listed[:limit]]

    def _as_saved(self, uid: str, listed: dict[str, Any]) -> dict[str, Any]:
        """A listed version with the message it was saved with, read alone."""
        number = listed["version"]
        what = f"dashboard {uid} version {number}"
        found = self._request("GET", f"/api/dashboards/uid/{uid}/versions/{number}", what=what)
        ok = isinstance(found, dict) and found.get("version") == number and isinstance(found.get("message"), str) \
            and found.get("uid") in (None, uid)  # (Grafana 9 on names the dashboard: a mixing cache's other one)
        self._shape(found, ok, what, f"the version {number} of dashboard {uid}, with a text message")
        return {**listed, "message": found["message"]}

    def latest_version(self, uid: str) -> dict[str, Any] | None:
        versions = self.versions(uid, 1)
        return versions[0] if versions else None

    def annotations(self, uid: str, dashboard_id: int) -> list[dict[str, Any]]:
        """The annotations people made on the dashboard's graphs (type "annotation": not alert state changes), up to
        ANNOTATIONS_READ: no version records them, and Grafana's delete of the dashboard deletes them with it. Asked
        by uid and by id (a Grafana before the uid filter reads the id); an item of another dashboard (a filter
        dropped) is not a valid answer."""
        what = f"dashboard {uid} annotations"
        found = self._request("GET", "/api/annotations", what=what, params={
            "dashboardUID": uid, "dashboardId": dashboard_id, "type": "annotation", "limit": ANNOTATIONS_READ + 1})
        # each with its id (a positive integer): one without shows nothing the look before a delete could tell from
        # an annotation made since
        ok = isinstance(found, list) and all(
            isinstance(a, dict) and (a.get("dashboardUID") == uid or a.get("dashboardId") == dashboard_id)
            and isinstance(a.get("id"), int) and not isinstance(a.get("id"), bool) and a["id"] > 0 for a in found)
        return self._shape(found, ok, what, f"a list of the annotations of dashboard {uid}, each with its id")

    def public_dashboard(self, uid: str) -> dict[str, Any] | None:
        """The dashboard's public dashboard (Grafana's "Share externally": a link anyone may open), or None where
        Grafana says it has none: its 404 naming that (messageId publicdashboards.notFound). No version records one,
        and Grafana's delete of the dashboard deletes it. Any other answer (a 404 of a Grafana without the API, or of a
        proxy; one for another dashboard) is not a valid answer, never "none"."""
        what = f"dashboard {uid} public dashboard"
        refusals: list[Any] = []
        found = self._request("GET", f"/api/dashboards/uid/{uid}/public-dashboards", what=what, allow=(404,),
                              absent=PUBLIC_DASHBOARD_ABSENT, refusals=refusals)
        if found is None:
            said = refusals[0] if refusals else None
            if isinstance(said, dict) and said.get("messageId") == PUBLIC_DASHBOARD_NOT_FOUND:
                return None
            raise InvalidAnswer("Grafana answered 404 without saying the dashboard has no public dashboard "
                                f"(messageId {PUBLIC_DASHBOARD_NOT_FOUND}): a Grafana without the public dashboards "
                                "API (before 10), or a proxy in front of it", where=what,
                                hint="GRAFANA_URL must reach Grafana's API itself")
        ok = isinstance(found, dict) and found.get("dashboardUid") == uid and isinstance(found.get("uid"), str) \
            and bool(found["uid"])
        return self._shape(found, ok, what, f"the public dashboard of dashboard {uid}, with its uid")

    def dashboard_permissions(self, uid: str) -> list[dict[str, Any]]:
        """Who may do what on the dashboard (GET /api/dashboards/uid/<uid>/permissions): its own entries and those its
        folder gives (`inherited`). Grafana's delete of the dashboard deletes its own. Each entry names its holder (a
        user, a team or a basic role), its level (an integer) and whether it is inherited: one without cannot be told
        from the folder's, and is not a valid answer."""
        what = f"dashboard {uid} permissions"
        found = self._request("GET", f"/api/dashboards/uid/{uid}/permissions", what=what)
        ok = isinstance(found, list) and all(
            isinstance(e, dict) and isinstance(e.get("inherited"), bool)
            and isinstance(e.get("permission"), int) and not isinstance(e.get("permission"), bool)
            and (e.get("uid") in (None, uid)) and any(e.get(k) for k in ("userId", "teamId", "role"))
            for e in found)
        return self._shape(found, ok, what, f"a list of the permissions of dashboard {uid}, each with its holder, "
                                            "level and whether it is inherited")

    def playlists(self) -> list[dict[str, Any]]:
        """Every playlist of the organization (GET /api/playlists), without items. Grafana's list has no pages: an
        answer holding PLAYLISTS_READ of them, or exactly one of the pages newer Grafana cuts it to (PLAYLIST_PAGES),
        may hold only some, and is not read as all of them."""
        what = "playlists"
        found = self._request("GET", "/api/playlists", what=what, params={"limit": PLAYLISTS_READ})
        ok = isinstance(found, list) and all(isinstance(p, dict) and isinstance(p.get("uid"), str) and p["uid"]
                                             for p in found)
        found = self._shape(found, ok, what, "a list of playlists, each with its uid")
        if len(found) >= PLAYLISTS_READ:
            raise InvalidAnswer(f"Grafana listed {len(found)} playlists, the most one answer holds: the rest cannot "
                                "be read", where=what, hint="delete playlists no one uses, or prune with --force")
        if len(found) in PLAYLIST_PAGES:
            raise InvalidAnswer(f"Grafana listed exactly {len(found)} playlists, one page of the list Grafana 11 and "
                                "later answer without the rest: more may exist", where=what,
                                hint="check the playlists in Grafana (Dashboards, Playlists), then prune with --force")
        return found

    def playlist(self, uid: str) -> dict[str, Any] | None:
        """One playlist with its items (GET /api/playlists/<uid>), each a type and a value; None when it is gone (404:
        deleted since it was listed)."""
        what = f"playlist {uid}"
        found = self._request("GET", f"/api/playlists/{uid}", what=what, allow=(404,),
                              absent=stored_absent(PLAYLIST_ABSENT, "playlists.playlist", uid))
        ok = found is None or isinstance(found, dict) and found.get("uid") == uid \
            and isinstance(found.get("items"), list) and all(
                isinstance(i, dict) and isinstance(i.get("type"), str) and isinstance(i.get("value"), str)
                for i in found["items"])
        return self._shape(found, ok, what, f"playlist {uid} with its items, each a type and a value")

    def home_dashboard(self, team_id: int | None = None) -> tuple[str, int]:
        """The home dashboard the organization's preferences (or team `team_id`'s) name, as (uid, id): "" and 0 where
        they name none. Grafana 10 and later name it by uid alone (homeDashboardUID, left out where none is set), older
        releases by id too (homeDashboardId, 0 for none). Grafana's delete of a dashboard leaves a preference naming
        it, and those it applies to are shown Grafana's default home instead."""
        what = "the organization's preferences" if team_id is None else f"team {team_id}'s preferences"
        found = self._request("GET", "/api/org/preferences" if team_id is None else f"/api/teams/{team_id}/preferences",
                              what=what)
        ok = isinstance(found, dict) and isinstance(found.get("homeDashboardUID", ""), str) and \
            isinstance(found.get("homeDashboardId", 0), int) and not isinstance(found.get("homeDashboardId"), bool) \
            and "message" not in found and (not found or bool(found.keys() & PREFERENCE_MEMBERS))
        found = self._shape(found, ok, what, "preferences (an object of Grafana's preference members, or none), "
                                             "naming the home dashboard by uid (or id) where one is set")
        return found.get("homeDashboardUID", ""), found.get("homeDashboardId", 0)

    def alert_rules(self) -> list[dict[str, Any]]:
        """Every Grafana-managed alert rule of the organization (GET /api/v1/provisioning/alert-rules: one answer, no
        pages), each with its uid, title and annotations. A rule links itself to a dashboard by the annotation
        `__dashboardUid__` (and to a panel by `__panelId__`); Grafana's delete of the dashboard leaves the rule linking
        to nothing (its notifications' dashboard and panel links then lead nowhere)."""
        what = "alert rules"
        found = self._request("GET", "/api/v1/provisioning/alert-rules", what=what)
        ok = isinstance(found, list) and all(
            isinstance(r, dict) and isinstance(r.get("uid"), str) and isinstance(r.get("title"), str)
            and isinstance(r.get("annotations") or {}, dict)
            and all(isinstance(value, str) for value in (r.get("annotations") or {}).values()) for r in found)
        return self._shape(found, ok, what, "a list of alert rules, each with its uid, title and annotations (text)")

    def teams(self) -> list[dict[str, Any]]:
        """Every team of the organization the account may read (GET /api/teams/search, page by page to `totalCount`),
        each with its id and name. A page that repeats a team, or that ends the list short of its count, is not a
        valid answer, never all of them."""
        what, found, page = "teams", {}, 1
        while True:
            answer = self._request("GET", "/api/teams/search", what=what, params={"perpage": TEAMS_PAGE, "page": page})
            ok = isinstance(answer, dict) and isinstance(answer.get("teams"), list) and \
                isinstance(answer.get("totalCount"), int) and not isinstance(answer.get("totalCount"), bool) and \
                all(isinstance(t, dict) and isinstance(t.get("id"), int) and not isinstance(t.get("id"), bool)
                    and isinstance(t.get("name"), str) for t in answer["teams"])
            answer = self._shape(answer, ok, what, "a page of teams, each with its id and name, and their total count")
            listed = answer["teams"]
            if any(t["id"] in found for t in listed):
                raise InvalidAnswer(f"Grafana's team search answered page {page} with teams of an earlier page: it "
                                    "cannot be read to its end", where=what, hint="GRAFANA_URL must reach Grafana's "
                                    "API itself; a proxy may drop the `page` parameter")
            found.update((t["id"], t) for t in listed)
            if len(found) >= answer["totalCount"]:
                return list(found.values())
            if not listed:
                raise InvalidAnswer(f"Grafana's team search counts {answer['totalCount']} teams and its page {page} "
                                    f"lists none, after {len(found)}: the rest cannot be read", where=what,
                                    hint="GRAFANA_URL must reach Grafana's API itself")
            page += 1

    def permissions(self, fresh: bool = False) -> dict[str, list[str]] | None:
        """The signed-in account's permissions (GET /api/access-control/user/permissions: action -> scopes), read
        once per client unless `fresh` (the look right before a delete: a permission withdrawn since the plan would
        make Grafana's filtered answers read as none); None when Grafana has no such endpoint (404: a Grafana before
        role-based access control)."""
        if self._permissions is None or fresh:
            what = "gpudash's account's permissions"
            found = self._request("GET", "/api/access-control/user/permissions", what=what, allow=(404,),
                                      absent=NO_ROUTE)
            ok = found is None or isinstance(found, dict) and all(
                isinstance(k, str) and isinstance(v, list) and all(isinstance(s, str) for s in v)
                for k, v in found.items())
            self._permissions = (self._shape(found, ok, what, "a map of actions to lists of scopes"),)
        return self._permissions[0]

    def save(self, dashboard: dict[str, Any], folder_uid: str, message: str) -> dict[str, Any]:
        """Save with the version the dashboard carries (no blind overwrite: a concurrent save is a 412), and its id
        where it carries one: Grafana looks such a save up by the id, so one deleted since (and perhaps created anew
        under its uid, numbering its versions from 1 again) is "not found", never written over."""
        what = f"dashboard {dashboard.get('uid')}"
        body = {"dashboard": dashboard, "folderUid": folder_uid, "message": message, "overwrite": False}
        with self._reported_if_sent("POST", "the save was sent to Grafana"):
            saved = self._request("POST", "/api/dashboards/db", what=what, json=body,
                                  allow=(404,) if dashboard.get("id") else (), absent=SAVED_ABSENT)
        if saved is None:
            raise DashboardGone(dashboard["id"], dashboard.get("uid"), "404")
        # What Grafana answers a save it made: status "success", the dashboard's uid and its new version.
        # Anything else (an error in a 200, `{}`) means the save cannot be shown to have happened.
        ok = isinstance(saved, dict) and saved.get("status") == "success" and isinstance(saved.get("uid"), str) \
            and saved["uid"] == dashboard.get("uid", saved["uid"]) and isinstance(saved.get("version"), int) \
            and not isinstance(saved.get("version"), bool)
        return self._shape(saved, ok, what, 'status "success" with the dashboard\'s uid and version')

    def delete(self, uid: str, look=None) -> str:
        """Delete, then read the dashboard again: only Grafana's "not found" shows it is gone (an answer
        that says deleted while the dashboard is still there is a failure). Grafana's delete takes no version:
        `look` is called before each retry of it (a 5xx or 429 answer, a failed connection), after the wait, and
        raises to refuse the delete (a person saved it meanwhile) or returns False when it is gone.
        Answers who deleted it: DELETED (Grafana answered a delete of ours), GONE (no request of ours reached
        Grafana, or the first one was answered "not found": someone else deleted it), or MAYBE_DELETED (an attempt
        of ours reached Grafana and its answer was lost, and then the dashboard was found gone: that attempt or
        someone else deleted it, and nothing tells which). Found gone and then there again at the read-back, it was
        created anew by someone else meanwhile: a failure saying so, never "still there"."""
        what = f"dashboard {uid}"
        reached: list[bool] = []
        refused: list[RemoteError] = []  # what the look before a retry raised: not an answer to a delete

        def looked() -> bool:
            try:
                return look()
            except RemoteError as exc:
                refused.append(exc)
                raise

        with self._reported_if_sent("DELETE", "the delete was sent to Grafana", "it was not read back to show it"):
            try:
                answer = self._request("DELETE", f"/api/dashboards/uid/{uid}", what=what, allow=(404,),
                                       absent=stored_absent(DASHBOARD_ABSENT, "dashboards.dashboard", uid),
                                       before_retry=looked if look is not None else None, reached=reached)
                if answer is not None:
                    self._shape(answer, isinstance(answer, dict) and isinstance(answer.get("message"), str), what,
                                "the deleted dashboard's title and message")
            except RemoteError as exc:
                # a lost answer, or one that is not Grafana's (a proxy's page for a request it may have passed on):
                # it may have happened, which only a read-back settles; anything else is Grafana's refusal. A failed
                # look before a retry (a refusal, or a read's answer that is not Grafana's) leaves only the attempts
                # before it, which may have happened where one reached Grafana unanswered
                from_look = any(exc is e for e in refused)
                if not (any(reached) if from_look else lost(exc) or isinstance(exc, InvalidAnswer)):
                    raise
                self._read_back(exc, "the delete was sent to Grafana", lambda: self.dashboard(uid) is None)
                return MAYBE_DELETED if lost(exc) else ODDLY_ANSWERED
            try:
                still = self.dashboard(uid)
            except DeadlineExceeded:
                raise
            except RemoteError as check:  # not read back: a delete Grafana answered (or that reached it) is not
                if answer is None and not any(reached):  # "refused"; one found gone before any reached it is
                    raise
                raise may_have_happened(check, "the delete was sent to Grafana" + (" and answered" if answer else ""),
                                        "it was not read back to show it") from None
        if still is not None and answer is None:  # found gone ("not found", or the look before a retry) and there now
            raise RemoteError("found gone (Grafana answered \"not found\", or the look before a retry of the delete "
                              "found it so), then there again: someone created it anew meanwhile; not deleted",
                              where=what, hint="run `gpudash plan` and review it before pruning")
        if still is not None:
            raise RemoteError("Grafana answered the delete, but the dashboard is still there", where=what,
                              hint="check Grafana's logs (a locked database, a proxy answering for it); run again")
        if answer is not None:
            return DELETED
        return MAYBE_DELETED if any(reached) else GONE
