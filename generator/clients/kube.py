"""The Kubernetes API client: the official client loads the kubeconfig (exec plugins such as
`aws eks get-token` included) and sends the requests; answers are read as JSON through `Answer`, never
through the client's models, so an object shaped unlike its API is a clear failure, not a crash."""

from __future__ import annotations

import contextlib
import re
import threading
from typing import Any

from .. import awaiting, redact
from .options import Options
from ..errors import RemoteError
from ..reading import yaml_begun
from .answer import NOT_JSON, Answer, OddAnswer, describe, json_value
from .http import decode, read_body
from .kube_contexts import UPDATE, kubeconfig_files, no_kubeconfig


def _client_modules():
    """The official client's modules gpudash uses (kubeconfig loading with its exec and token plugins, the API
    client, its exceptions), without the package `__init__`s that import every API class and model (and
    google-auth's HTTP transport, which only the gcp auth provider uses, and the OAuth 2 packages, which only the
    oidc auth provider's token refresh uses): 0.04 s of CPU instead of 0.39 s."""
    from .deferred import defer, standing_in

    defer("kubernetes", "kubernetes.client", "kubernetes.client.models", "google.auth.transport.requests",
          "oauthlib.oauth2", "requests_oauthlib",
          names={"kubernetes.client": {"ApiClient": "kubernetes.client.api_client",
                                       "Configuration": "kubernetes.client.configuration"}})
    with standing_in("requests_oauthlib", "OAuth2Session", _oauth2_session):
        from kubernetes import config
    from kubernetes.client import api_client, configuration

    return config, api_client.ApiClient, configuration.Configuration


def _oauth2_session(*args, **kwargs):
    """requests-oauthlib's OAuth2Session, which the kubeconfig loader imports with itself and calls to refresh an
    expired oidc id-token: its package, and oauthlib's OAuth 2 package under it (35 ms of CPU), are imported then."""
    from requests_oauthlib import OAuth2Session

    return OAuth2Session(*args, **kwargs)


_MAKING = threading.Lock()


def for_run(options: Options) -> "Kube":
    """The run's client, made by the first group that reads the cluster and shared by the others: one kubeconfig
    load per run, and one run of its exec plugin (a process of its own, such as `aws eks get-token`)."""
    with _MAKING:
        if "kube" not in options.clients:
            options.clients["kube"] = Kube(options)
        return options.clients["kube"]


def _no_kubeconfig(kube_error: Exception) -> RemoteError:
    """Why no kubeconfig was read: a KUBECONFIG naming no file is said as such (the client says only that it found
    no configuration), with what to do about it."""
    missing = no_kubeconfig()
    if missing is not None:
        return RemoteError(f"no usable kubeconfig: {missing[0]}", hint=missing[1])
    import yaml

    if isinstance(kube_error, yaml.MarkedYAMLError) and kube_error.problem_mark is not None:
        mark = kube_error.problem_mark
        return RemoteError(f"the kubeconfig {mark.name} is not valid YAML: {kube_error.problem} at line "
                           f"{mark.line + 1}, column {mark.column + 1}{yaml_begun(kube_error)}",
                           hint=f"fix the file there (`kubectl config view` reads it as the client does), or point "
                                f"KUBECONFIG at another kubeconfig; {UPDATE}")
    said = " ".join(str(kube_error).split())  # one line: the table's cell, and a parser's message runs over several
    if "context" in said.lower():
        return RemoteError(f"no usable kubeconfig ({said})",
                           hint="give --context one of the contexts `kubectl config get-contexts` lists, or set the "
                                f"kubeconfig's current-context; {UPDATE}")
    return RemoteError(f"no usable kubeconfig ({said})",
                       hint=f"check the kubeconfig (`kubectl config view` reads it as the client does), or point "
                            f"KUBECONFIG at another; {UPDATE}")


EXEC_MARGIN = 1.0  # seconds of the run an exec plugin leaves for its check to be reported before the deadline
_RUNNING: set = set()  # exec plugin processes under way (Popen), stopped by stop_exec_plugins


def stop_exec_plugins() -> None:
    """Kill the exec plugin processes still running, with the processes they started: verify's end, or its child
    process told to stop, leaves none behind, even one the run's deadline came before its own limit did (a loaded
    machine)."""
    for process in list(_RUNNING):
        _kill_plugin(process)


def _kill_plugin(process) -> None:
    """Kill an exec plugin and what it started (a wrapper script that does not exec its command, gcloud under
    gke-gcloud-auth-plugin): each plugin runs in a session of its own, so its process group holds it and its
    children and nothing else; the plugin itself is killed too should the group be gone."""
    import os
    import signal

    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        process.kill()


class ExecPluginHung(RemoteError):
    """The kubeconfig's exec plugin did not finish in the time the run had left; it was stopped."""


class ExecPluginFailed(RemoteError):
    """The kubeconfig's exec plugin exited with an error (expired AWS credentials for `aws eks get-token`): the client
    logs it and sends its requests without credentials, so what followed (a refusal, a failed connection) hid it.
    `logged`: the line the client logs for it."""

    def __init__(self, what: str, logged: str, *, hint: str):
        super().__init__(what, hint=hint)
        self.logged = logged


def _exec_plugins_timed(options: Options) -> list[ExecPluginHung]:
    """The official client runs the kubeconfig's exec plugin (`aws eks get-token`) and waits for it without a
    timeout: a plugin that hangs (an SSO login waiting for a browser, a prompt, a network call) would outlive the
    run. Its processes are given the time the run has left and stopped then, and the check says so, naming the
    command as the kubeconfig gives it (never its arguments or environment, which may hold secrets). The client logs
    and swallows a plugin's failure (and sends its requests without credentials): the hang is kept in the list
    returned, for the caller to raise."""
    import subprocess
    import types

    from kubernetes.config import exec_provider

    class TimedPopen(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            kwargs["start_new_session"] = True  # its own process group: stopped with the processes it starts
            super().__init__(*args, **kwargs)
            _RUNNING.add(self)
            awaiting.tell(*_hung(self))  # should the run's deadline come first, its check names the plugin

        def communicate(self, input=None, timeout=None):
            limit = max(0.1, options.remaining() - EXEC_MARGIN)
            try:
                out, err = super().communicate(input, timeout=limit)
                if self.returncode:  # failed: said by the kube check, as the client's own log line is not
                    hung.append(_failed(self, err))
                return out, err
            except subprocess.TimeoutExpired:
                _kill_plugin(self)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.wait(timeout=1)  # its pipes may stay open in processes of its own: not read
                plugin, hint = _hung(self)
                hung.append(ExecPluginHung(f"{plugin} did not finish within {limit:.1f} s and was stopped", hint=hint))
                raise hung[-1] from None
            finally:
                _RUNNING.discard(self)
                awaiting.tell(None)

    hung: list[ExecPluginHung | ExecPluginFailed] = []
    timed = types.ModuleType("subprocess")
    timed.__dict__.update(subprocess.__dict__)
    timed.Popen = TimedPopen
    exec_provider.subprocess = timed
    return hung


def _hung(process) -> tuple[str, str]:
    """An exec plugin named by its command as the kubeconfig gives it (never its arguments or environment), and what
    to do when it does not finish."""
    import os

    command = str(process.args[0] if isinstance(process.args, (list, tuple)) else str(process.args).split()[0])
    return (f"the kubeconfig's exec plugin {os.path.basename(command)!r}",
            f"run {command!r} with the kubeconfig's arguments yourself to see why it waits (an expired SSO login, a "
            "prompt, no network to its service); then run verify again, or raise --timeout")


def _failed(process, err: str | None) -> ExecPluginFailed:
    """A plugin that exited with an error, named by its command (never its arguments or environment) with its exit
    code and the last line it wrote to stderr (masked, cut), which says why (`ExpiredToken`, `no credentials`)."""
    import os

    command = process.args[0] if isinstance(process.args, (list, tuple)) else str(process.args).split()[0]
    said = (err or "").strip()
    last = redact.text(said.splitlines()[-1])[:200] if said else ""
    return ExecPluginFailed(
        f"the kubeconfig's exec plugin {os.path.basename(str(command))!r} failed (exit {process.returncode})"
        + (f": {last}" if last else ""), f"exec: process returned {process.returncode}" + (f". {said}" if said else ""),
        hint=f"run {str(command)!r} with the kubeconfig's arguments yourself to see why (`aws eks get-token` fails on "
             "expired or missing AWS credentials: refresh them, e.g. `aws sso login`, or set AWS_PROFILE); then run "
             "verify again")


@contextlib.contextmanager
def _unlogged(hung: list[ExecPluginHung]):
    """The client logs a plugin's failure on the root logger (`ERROR:root:...` on stderr) before carrying on: a
    hang or a failure, which the kube check reports, is not said twice."""
    import logging

    class Reported(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return not any(record.getMessage() in (str(error), getattr(error, "logged", None)) for error in hung)

    root, quiet = logging.getLogger(), Reported()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)


def _decoded(body: Any) -> str:
    return body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")


def _not_found(body: Any) -> bool:
    """Whether a 404's body is the Kubernetes API's: a Status whose reason is NotFound (an object or resource that is
    not there), not a proxy's or an ingress's page."""
    status = json_value(_decoded(body))
    return isinstance(status, dict) and status.get("kind") == "Status" and status.get("reason") == "NotFound"


# /apis/<group>/<version>[/namespaces/<namespace>]/<resource>[/<name>]
_RESOURCE_PATH = re.compile(r"/apis/([^/]+)/([^/]+)/(?:namespaces/[^/]+/)?([^/]+)(?:/[^/]+)?")
GO_NOT_FOUND = "404 page not found"  # Go's http.NotFound text: an API server before 1.24 for a path no API serves
# The Accept header of a metadata-only list, as client-go's metadata client sends it: the API server answers a
# PartialObjectMetadataList (kind, apiVersion meta.k8s.io/v1, each item's metadata alone); one that does not serve that
# form takes the plain JSON after it
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


def _empty_metadata_list(value: Any) -> bool:
    """Whether an answer is an empty PartialObjectMetadataList as the API server writes one: `items` null (its
    asPartialObjectMetadataList appends each item to a nil slice; kubernetes-client/python#2142 met it)."""
    return isinstance(value, dict) and value.get("kind") == "PartialObjectMetadataList" \
        and value.get("apiVersion") in ("meta.k8s.io/v1", "meta.k8s.io/v1beta1") and "items" in value \
        and value["items"] is None


class KubeAnswered(RemoteError):
    """The Kubernetes API answered an HTTP error other than 404; `status` is its code (403: RBAC refused the read,
    503 from a service proxy: the Service has no ready endpoint, or the API server is unavailable). `reason`: the
    reason of the API's Status object the answer's body is (410's "Expired": a continue token etcd compacted past),
    None where the body is no Status (a proxy's page)."""

    def __init__(self, what: str, status: int, *, hint: str | None = None, reason: str | None = None):
        super().__init__(what, hint=hint)
        self.status = status
        self.reason = reason


def _status_reason(body: Any) -> str | None:
    """The reason of the Kubernetes API's Status object that `body` is, else None."""
    status = json_value(_decoded(body))
    reason = status.get("reason") if isinstance(status, dict) and status.get("kind") == "Status" else None
    return reason if isinstance(reason, str) else None


class KubeRefused(KubeAnswered):
    """403: RBAC refused the read (the kubeconfig user's rights). The check that needed it cannot tell; the others
    still run (checks.result.step)."""


class Kube:
    def __init__(self, options: Options):
        import os

        config, api_client_class, configuration_class = _client_modules()
        hung = _exec_plugins_timed(options)
        try:
            # KUBECONFIG is read now: the client reads it once, when it is first imported. Empty is unset, as to
            # kubectl (the client would read no file at all): the files kubectl reads, the client merging them
            with _unlogged(hung):
                config.load_kube_config(config_file=os.pathsep.join(kubeconfig_files()), context=options.context)
        except Exception as kube_error:  # the client raises several types for a missing or bad kubeconfig
            if hung:
                raise hung[0] from None
            try:
                config.load_incluster_config()
            except config.ConfigException:
                raise _no_kubeconfig(kube_error) from None
        if hung:
            raise hung[0]
        configuration = configuration_class.get_default_copy()
        configuration.retries = 0
        for value in (configuration.api_key or {}).values():  # a kubeconfig token, as sent and bare
            redact.secret(value)
            redact.secret(str(value).removeprefix("Bearer "))
        redact.basic_auth(configuration.username, configuration.password)
        self.api = api_client_class(configuration)
        self.options = options
        self.hung = hung  # the exec plugin's failures and hangs: it runs again when its token expires, mid-run
        self.discovery: dict[str, list[dict[str, Any]] | None] = {}  # path -> what _discovered read there

    def _plugin_failed(self, before: int) -> None:
        """Raise the exec plugin's failure or hang since `before` (how many the run had): the client logged it and
        sent the request with the expired token, so the refusal or failed connection that followed hid it."""
        if len(self.hung) > before:
            raise self.hung[-1] from None

    def text(self, path: str, what: str, query: dict[str, str] | None = None,
             accept: str = "application/json") -> str | None:
        """The answer's text; None on 404; RemoteError when the API refuses or cannot be reached."""
        from kubernetes.client.exceptions import ApiException

        timeout = self.options.socket_timeout()
        before = len(self.hung)
        try:
            with _unlogged(self.hung):  # (the plugin, run again for an expired token, is reported, not logged)
                response = self.api.call_api(path, "GET", query_params=list((query or {}).items()),
                                             header_params={"Accept": accept},
                                             auth_settings=["BearerToken"], _return_http_data_only=True,
                                             _preload_content=False, _request_timeout=(timeout, timeout))
            return decode(read_body(response, self.options, what), None)
        except ApiException as exc:
            if exc.status == 404 and ("/proxy/" in path or _not_found(exc.body) or self._unserved(path, exc.body)):
                return None  # (through the service proxy a 404 is the exporter's own answer, its checks' to judge)
            if exc.status == 404:  # a proxy or ingress in front of the API server: nothing said of the object
                raise OddAnswer(what, "", redact.text(_decoded(exc.body))[:40] or "an empty body",
                                "the Kubernetes API's 404 (a Status, reason NotFound)",
                                said="answered 404 with something that is not the Kubernetes API's NotFound Status "
                                     f"({redact.text(_decoded(exc.body))[:40]!r}): the kubeconfig's server may "
                                     "reach a proxy, not the API server") from None
            self._plugin_failed(before)
            if exc.status in (401, 403):
                refused = KubeRefused if exc.status == 403 else KubeAnswered
                raise refused(f"the Kubernetes API refused access to {what} ({exc.status})", exc.status,
                              hint="check the kubeconfig user's RBAC (get/list on pods, nodes, daemonsets, "
                                   "deployments, services, configmaps, endpointslices, servicemonitors, "
                                   "prometheuses, prometheusagents, namespaces)") from None
            raise KubeAnswered(f"the Kubernetes API answered {exc.status} for {what}: {exc.reason}", exc.status,
                               hint="check the cluster's API server", reason=_status_reason(exc.body)) from None
        except RemoteError:
            self._plugin_failed(before)
            raise
        except Exception as exc:  # urllib3 connection errors and timeouts, kubeconfig exec failures
            self._plugin_failed(before)
            from .http import connect_failure
            from ..urls import safe_url

            server = getattr(self.api.configuration, "host", None)
            raise RemoteError(f"cannot reach the Kubernetes API{f' at {safe_url(server)}' if server else ''} "
                              f"({connect_failure(exc) or type(exc).__name__})",
                              hint="check KUBECONFIG / --context (the kubeconfig's server) and the network, or "
                                   "--skip kube") from None

    def _unserved(self, path: str, body: Any) -> bool:
        """Whether a 404 of `path` whose body is Go's plain GO_NOT_FOUND is the API server's answer for a resource it
        does not serve (a custom resource whose CRD is not installed: an API server before 1.24 answers so, a newer
        one a Status NotFound): its discovery (/apis, then /apis/<group>/<version>) reads, and does not list the
        group version, or lists it without the resource. Anything else (another body, a discovery that does not read
        as the API's, one that lists the resource) is not: a proxy's page is never read as "not installed"."""
        match = _RESOURCE_PATH.fullmatch(path)
        if match is None or _decoded(body).strip() != GO_NOT_FOUND:
            return False
        group, version, resource = match.groups()
        groups = self._discovered("/apis", "APIGroupList", "groups")
        if groups is None:
            return False
        served = {v.get("groupVersion") for g in groups if isinstance(g.get("versions"), list)
                  for v in g["versions"] if isinstance(v, dict)}
        if f"{group}/{version}" not in served:
            return True
        resources = self._discovered(f"/apis/{group}/{version}", "APIResourceList", "resources")
        return resources is not None and resource not in {r.get("name") for r in resources}

    def _discovered(self, path: str, kind: str, field: str) -> list[dict[str, Any]] | None:
        """The `field` list of the API server's discovery document at `path` (of `kind`), read once a run; None when
        it cannot be read or is not shaped as the API's."""
        found = self.discovery
        if path not in found:
            try:
                text = self.text(path, f"API discovery {path}")
            except (RemoteError, OddAnswer):
                text = None
            document = json_value(text) if text is not None else None
            items = document.get(field) if isinstance(document, dict) and document.get("kind") == kind else None
            found[path] = items if isinstance(items, list) and all(isinstance(i, dict) for i in items) else None
        return found[path]

    def read(self, path: str, what: str, query: dict[str, str] | None = None,
             accept: str = "application/json") -> Answer | None:
        """The decoded object; None on 404."""
        text = self.text(path, what, query, accept)
        if text is None:
            return None
        value = json_value(text)
        if value is NOT_JSON:
            raise OddAnswer(what, "", redact.text(text)[:40], "JSON")  # masked, then cut
        return Answer(value, what)

    def listing(self, path: str, what: str, query: dict[str, str] | None = None) -> list[Answer]:
        """The items of a list, read in one answer (never paged: `metadata` follows pages); a 404 on a list is odd (an
        empty list is the API's answer for none), and so is a continue token: asked without `limit`, the API server
        answers the whole list and gives none, so an answer that gives one (something in front of it paging on its
        own, or a limit in `query`) holds a page of it only."""
        answer = self.read(path, what, query)
        if answer is None:
            raise OddAnswer(what, "", "404 Not Found", "a list (an empty one when there is none)")
        token = answer.get("metadata.continue", str, "")
        if token:
            raise OddAnswer(what, "metadata.continue", token, "none",
                            said=f"a list read in one answer came with a continue token ({describe(token)}): a page "
                                 "of the list, not the whole (something in front of the API server may page it)")
        return list(answer.items("items", required=True))

    def metadata(self, path: str, what: str, query: dict[str, str] | None = None,
                 limit: int = 0) -> list[Answer] | None:
        """A list of `path` read as its objects' metadata alone (the API server's PartialObjectMetadataList: each item
        its `metadata`, no spec or data), or as the whole objects where the server answers so (before 1.15, or
        something in front of it that drops the form asked for: METADATA_ONLY falls back to plain JSON); None on
        404. Either is read alike, by each item's `metadata`.

        `limit`: read in pages of that many, as kubectl does (--chunk-size 500): the API server then reads etcd a page
        at a time, not the whole resource at once. Every answer's `metadata.continue` is followed to the last page
        (whether a limit was sent or not): a page may hold fewer items than the limit, none at all where a selector
        filters them out, and only the token says more remain. A token that is not a string, or one given before (an
        answer that does not move on), is an odd answer. A page after the first that has expired (410 Gone, a Status of
        reason Expired: etcd compacted past the token since the first page, five minutes by default) restarts the
        list once, as client-go's pager does (FullListIfExpired): the pages read are dropped and the list is asked
        again whole, without `limit` or `continue` (one answer, at the cluster's resourceVersion then). A page of it
        that is not read either (a second 410), or a page after the first refused otherwise (400: a token the API
        server cannot read, altered on the way; a 410 that is no Expired Status), raises KubeAnswered saying so: the
        pages read before it are never taken for the whole list.

        A list's pages are one snapshot: a page at another resourceVersion than the first's is odd (something in front
        of the API server that drops `continue` answers each page as a new list's first, a new token each time the
        cluster wrote: read on, it would never end).

        An empty PartialObjectMetadataList's `items` is null (the API server appends each item to a nil slice, and
        the field has no omitempty): none, there alone; `items` null in another answer, or absent, is odd."""
        asked, items, tokens = {**(query or {}), **({"limit": str(limit)} if limit else {})}, [], set()
        expired = 0  # the page that expired, the list then read again whole (0: none did)
        while True:
            page = len(tokens) + 1
            try:
                answer = self.read(path, what, asked, METADATA_ONLY)
            except KubeAnswered as failed:
                if page == 1 and not expired:
                    raise
                if failed.status == 410 and failed.reason == "Expired" and not expired:
                    asked, items, tokens, expired = {**(query or {})}, [], set(), page
                    continue
                asked_for = f"asked for the whole list again, its page {expired} having expired (410 Gone)" \
                    if expired else ""
                if page > 1:
                    asked_for += f", then for its page {page}" if expired else f"asked for the list's page {page}"
                raise KubeAnswered(f"{failed.what} ({asked_for}: it was not read whole)",
                                   failed.status, reason=failed.reason,
                                   hint="run verify again: a list's continue token expires once etcd compacts past "
                                   "it (5 minutes by default; 410 Gone), and one the API server cannot read (400) "
                                   "was altered on the way (a proxy in front of it)") from None
            if answer is None:
                if page == 1 and not expired:
                    return None
                raise OddAnswer(what, "", "404 Not Found", f"the list's page {page}" if page > 1 else
                                "the whole list, asked again after a page expired")
            version = answer.get("metadata.resourceVersion", str, "")
            if page == 1:
                snapshot = version
            elif version != snapshot:  # (a proxy dropping `continue` answers each page as a new list's first)
                raise OddAnswer(what, "metadata.resourceVersion", version, f"{snapshot!r}, its page 1's",
                                said=f"its page {page} is of the list at resourceVersion {describe(version)}, its page "
                                     f"1 of the list at {describe(snapshot)}: pages of one list are one snapshot "
                                     "(something in front of the API server may drop the continue token)")
            if not _empty_metadata_list(answer.value):
                items += answer.items("items", required=True)
            token = answer.get("metadata.continue", str, "")
            if not token:
                return items
            if token in tokens:
                raise OddAnswer(what, "metadata.continue", token, "a token of the next page",
                                said=f"its page {page} gives the continue token of a page before ({describe(token)}): "
                                     "read on, the list would never end")
            tokens.add(token)
            asked["continue"] = token
