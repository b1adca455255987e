"""moto's server on 127.0.0.1: CloudWatch over real HTTP, reached with boto3's endpoint_url.

moto's own WSGI application (the one its server runs: each request dispatched to the service's responses
and backend) is served over HTTP/1.1 with keep-alive, as AWS's endpoints are. moto's server closes the
connection after every answer, so each of a test's thousands of requests paid a new connection and a new
thread at both ends (about 40 % of a small request's CPU); what each request is answered is moto's.
"""

from __future__ import annotations

import contextlib

import email.utils
import functools
import io
import os
import re
import sys
import traceback
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit

from tests.support.loopback import KeepAliveHandler, LoopbackServer

FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                    "AWS_SESSION_TOKEN": "testing"}


def _moto_modules_listed_once() -> None:
    """moto's server finds each request's service by listing its own package folder (a listdir and about
    150 isdir calls per request, a tenth of a publishing test's CPU): the folder never changes."""
    from moto import backends

    if not isinstance(backends.list_of_moto_modules, _Listed):
        backends.list_of_moto_modules = _Listed(tuple(backends.list_of_moto_modules()))


def _action_names_listed_once() -> None:
    """moto finds whether a request's action is one its responses class answers by listing the class's
    functions with inspect.getmembers on every request (about a tenth of a small request's CPU in moto):
    a class's functions never change while the server runs."""
    from moto.core import responses

    if not hasattr(responses.method_names_from_class, "cache_info"):
        responses.method_names_from_class = functools.lru_cache(maxsize=None)(responses.method_names_from_class)


def _attribute_names_worked_out_once() -> None:
    """moto's serializer finds each answer member's value by trying the names a member may have on moto's
    object (aliases from the object's class and the member's shape, each also in snake_case), worked out again,
    with a new context object and its dotted path, for every member of every object answered: most of a
    DescribeAlarms answer's CPU. The names depend on the object's class, the member and its shape alone: each
    list is worked out once and the names tried in the same order, with the same lookup; the path is built
    only when a transformer of the answer needs it (an object with a Meta of its own is asked moto's way)."""
    from moto.core import serialize

    serializer = serialize.ResponseSerializer
    if getattr(serializer.get_value, "worked_out_once", False):
        return
    original, lookup, missing = serializer.get_value, serialize.get_value, serialize.MISSING
    names: dict[tuple, tuple[str, ...]] = {}

    def get_value(self, value, key, shape):
        picker = self._value_picker
        if type(picker) is not serialize.XFormedAttributePicker or "Meta" in getattr(value, "__dict__", ()):
            return original(self, value, key, shape)
        parent = getattr(shape, "parent", None)  # set on a shape as its structure is serialized
        known = (tuple(picker.alias_providers), type(value), key, shape, parent)  # shapes held: never a reused id
        if known not in names:
            if len(names) > 100_000:
                names.clear()
            names[known] = tuple(picker.get_possible_keys(serialize.AttributePickerContext(
                obj=value, key=key, shape=shape, operation_model=self.operation_model,
                service_model=self.operation_model.service_model, key_path=".".join(self.path))))
        keyed = hasattr(value, "__getitem__")  # as moto.core.utils.get_value reads each name, without its checks
        for name in names[known]:
            found = lookup(value, name, missing) if keyed or "." in name else getattr(value, name, missing)
            if found is not missing:
                break
        else:
            found = None
        if picker.response_transformers:
            path = f"{'.'.join(self.path)}.{key}"
            for ending, transform in picker.response_transformers.items():
                if path.endswith(ending):
                    return transform(found)
        return found

    get_value.worked_out_once = True
    serializer.get_value = get_value


def _random_strings_drawn_at_once() -> None:
    """moto's random strings (every answer's 52-character request id, x-amzn-requestid) are drawn one character at a
    time, a call of Random.choice each: a twentieth of a small request's CPU in moto. Each is drawn here with one call
    of Random.choices from moto's same Random (its seed still decides them): characters as uniform over the same pool,
    the string as long, lower-cased as asked."""
    from moto.moto_api._internal.moto_random import MotoRandom

    if getattr(MotoRandom.get_random_string, "drawn_at_once", False):
        return
    import string

    def get_random_string(self, length: int = 20, include_digits: bool = True, lower_case: bool = False) -> str:
        pool = string.ascii_letters + string.digits if include_digits else string.ascii_letters
        drawn = "".join(self.choices(pool, k=length))
        return drawn.lower() if lower_case else drawn

    get_random_string.drawn_at_once = True
    MotoRandom.get_random_string = get_random_string


_SERVER = BaseHTTPRequestHandler.server_version + " " + BaseHTTPRequestHandler.sys_version  # its Server header


class _Raw:
    """An answer's body, as botocore reads an urllib3 response's."""

    def __init__(self, data: bytes):
        self.data = data

    def stream(self, *args, **kwargs):
        yield self.data

    def read(self, *args, **kwargs) -> bytes:
        data, self.data = self.data, b""
        return data

    def close(self) -> None:
        self.data = b""


class _Listed:
    def __init__(self, names: tuple[str, ...]):
        self.names = names

    def __call__(self) -> tuple[str, ...]:
        return self.names


_DASHBOARDS: dict[str, dict] = {}  # account -> dashboards by name, whichever Region's endpoint is called


def _tags_on_create_only() -> None:
    """AWS applies PutMetricAlarm's Tags only when the call creates the alarm and ignores them when it updates one
    (PutMetricAlarm API reference); moto tags on both, which showed an alarm a person made just before gpudash's
    create carrying gpudash's tags as well as theirs, as AWS never does. Here an update's Tags are ignored."""
    from moto.cloudwatch.models import CloudWatchBackend

    if getattr(CloudWatchBackend.put_metric_alarm, "tags_on_create_only", False):
        return
    put = CloudWatchBackend.put_metric_alarm

    def put_metric_alarm(self, name: str, *args, **kwargs):
        if name in self.alarms:
            kwargs["tags"] = None
        return put(self, name, *args, **kwargs)

    put_metric_alarm.tags_on_create_only = True
    CloudWatchBackend.put_metric_alarm = put_metric_alarm


# The names (or ARNs) an AlarmRule names: each argument of its ALARM/OK/INSUFFICIENT_DATA/AT_LEAST calls, quoted or not
_RULE_WORDS = re.compile(r'"([^"]*)"|([^\s(),"]+)')


def _composite_alarms() -> None:
    """moto 5.2 stores a composite alarm (an alarm with an AlarmRule: its PutMetricAlarm reads one "to re-use this
    method for composite alarms") and lists it in DescribeAlarms' CompositeAlarms, but answers PutCompositeAlarm as not
    implemented and ignores AlarmTypes. Here PutCompositeAlarm is answered by that method, and DescribeAlarms lists
    what the API reference says it lists: metric alarms alone without AlarmTypes ("only metric alarms are returned,
    even if composite alarms exist in the account"), each kind only when AlarmTypes names it (log alarms, which moto
    does not hold, as an empty list). moto's DeleteAlarms
    deletes an alarm a composite alarm's rule names; CloudWatch refuses the whole call, deleting none of the alarms
    it names (its API reference: "you can't delete any composite alarm that is part of the cycle because there is
    always still a composite alarm that depends on that alarm"; its answer, as users report it: ValidationError
    "Cannot delete abc,xyz as there are composite alarm(s) depending on them."): so it is here."""
    from moto.cloudwatch.exceptions import ValidationError
    from moto.cloudwatch.responses import CloudWatchResponse
    from moto.core.responses import ActionResult

    if getattr(CloudWatchResponse.describe_alarms, "alarm_types", False):
        return
    listed = CloudWatchResponse.describe_alarms

    def describe_alarms(self) -> ActionResult:
        kinds = set(self._get_param("AlarmTypes", []) or ["MetricAlarm"])
        result = dict(listed(self).result)
        for kind, key in (("MetricAlarm", "MetricAlarms"), ("CompositeAlarm", "CompositeAlarms")):
            if kind not in kinds:
                result[key] = []
        if "LogAlarm" in kinds:  # it holds none; CloudWatch answers each kind asked for as a list
            result["LogAlarms"] = []
        return ActionResult(result)

    delete = CloudWatchResponse.delete_alarms

    def delete_alarms(self) -> ActionResult:
        names = self._get_param("AlarmNames", [])
        alarms = self.cloudwatch_backend.alarms
        named = {word for alarm in alarms.values() if alarm.rule
                 for pair in _RULE_WORDS.findall(alarm.rule) for word in pair if word}
        held = [name for name in names if name in named or (name in alarms and alarms[name].alarm_arn in named)]
        if held:
            raise ValidationError(f"Cannot delete {','.join(held)} as there are composite alarm(s) depending on "
                                  f"{'them' if len(held) > 1 else 'it'}.")
        return delete(self)

    describe_alarms.alarm_types = True
    CloudWatchResponse.describe_alarms = describe_alarms
    CloudWatchResponse.delete_alarms = delete_alarms
    put = CloudWatchResponse.put_metric_alarm

    def put_composite_alarm(self) -> ActionResult:
        """moto's put_metric_alarm, keeping the ActionsSuppressor (an alarm's name or ARN) it drops: DescribeAlarms
        lists it in the composite alarm, as CloudWatch does."""
        answer = put(self)
        self.cloudwatch_backend.alarms[self._get_param("AlarmName")].actions_suppressor = \
            self._get_param("ActionsSuppressor")
        return answer

    CloudWatchResponse.put_composite_alarm = put_composite_alarm


def _dashboards_global() -> None:
    """CloudWatch dashboards are global in AWS: every Region's endpoint lists, reads, writes and deletes
    the account's one set. moto keeps a set per Region, which hid that a fleet over two Regions saw each
    dashboard as another Region's to prune; here every Region's backend holds the account's one set."""
    from moto.cloudwatch.models import CloudWatchBackend

    if getattr(CloudWatchBackend.__init__, "global_dashboards", False):
        return
    regional = CloudWatchBackend.__init__

    def __init__(self, region_name: str, account_id: str):
        regional(self, region_name, account_id)
        self.dashboards = _DASHBOARDS.setdefault(account_id, {})

    __init__.global_dashboards = True
    CloudWatchBackend.__init__ = __init__


_DASHBOARD_TAGS: dict[str, dict[str, dict[str, str]]] = {}  # account -> dashboard name -> its tags (global, as they are)


def _dashboard_tags() -> None:
    """CloudWatch dashboards take tags (TagResource, UntagResource and ListTagsForResource on a dashboard's ARN,
    arn:aws:cloudwatch::<account>:dashboard/<name>; PutDashboard's Tags on a create alone); moto tags alarms alone
    (its TagResource answers any other ARN ResourceNotFoundException). Here a dashboard's tags are kept with the
    account's one set of dashboards, and go with the dashboard when it is deleted."""
    from moto.cloudwatch.exceptions import ResourceNotFoundException
    from moto.cloudwatch.models import CloudWatchBackend

    if getattr(CloudWatchBackend.tag_resource, "dashboard_tags", False):
        return
    tag, untag, listed, delete = (CloudWatchBackend.tag_resource, CloudWatchBackend.untag_resource,
                                  CloudWatchBackend.list_tags_for_resource, CloudWatchBackend.delete_dashboards)

    def held(self, arn: str) -> dict[str, str] | None:
        """The tags of the dashboard `arn` names (None: `arn` names no dashboard); ResourceNotFoundException where
        it names one that does not exist."""
        name = arn.partition(":dashboard/")[2] if ":cloudwatch::" in arn else ""
        if not name:
            return None
        if name not in self.dashboards:
            raise ResourceNotFoundException
        return _DASHBOARD_TAGS.setdefault(self.account_id, {}).setdefault(name, {})

    def tag_resource(self, arn: str, tags: dict[str, str]) -> None:
        found = held(self, arn)
        if found is None:
            return tag(self, arn, tags)
        found.update(tags)

    def untag_resource(self, arn: str, tag_keys: list[str]) -> None:
        found = held(self, arn)
        if found is None:
            return untag(self, arn, tag_keys)
        for key in tag_keys:
            found.pop(key, None)

    def list_tags_for_resource(self, arn: str) -> dict[str, str]:
        found = held(self, arn)
        return listed(self, arn) if found is None else dict(found)

    def delete_dashboards(self, dashboards: list[str]) -> str | None:
        refused = delete(self, dashboards)
        if refused is None:
            for name in dashboards:
                _DASHBOARD_TAGS.get(self.account_id, {}).pop(name, None)
        return refused

    tag_resource.dashboard_tags = True
    CloudWatchBackend.tag_resource, CloudWatchBackend.untag_resource = tag_resource, untag_resource
    CloudWatchBackend.list_tags_for_resource, CloudWatchBackend.delete_dashboards = list_tags_for_resource, \
        delete_dashboards


def _answer(app, method: str, target: str, headers, body: bytes, server: tuple, client: str,
            protocol: str = "HTTP/1.1") -> tuple[int, str, list[tuple[str, str]], bytes]:
    """What the WSGI application `app` answers a request (status, reason, headers, body), as moto's server
    answers it: an exception in moto is a 500 with the traceback. `headers` are (name, value) pairs."""
    path, _, query = target.partition("?")
    host, port = server[:2]
    length = len(body)
    environ = {"REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": unquote(path, "latin-1"),
               "QUERY_STRING": query, "SERVER_NAME": str(host), "SERVER_PORT": str(port),
               "SERVER_PROTOCOL": protocol, "REMOTE_ADDR": client, "CONTENT_LENGTH": str(length),
               "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
               "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": False,
               "wsgi.run_once": False}
    for name, value in headers:
        key = "HTTP_" + name.upper().replace("-", "_")
        if key == "HTTP_CONTENT_TYPE":
            environ.setdefault("CONTENT_TYPE", value)
        elif key != "HTTP_CONTENT_LENGTH":
            environ[key] = f"{environ[key]},{value}" if key in environ else value
    environ.setdefault("CONTENT_TYPE", "")
    started: list = []

    def start_response(status, headers, exc_info=None):
        started[:] = [status, headers]

    try:
        direct = _direct(app, environ)
        if direct is not None:
            status, answer_headers, data = direct
        else:
            chunks = app(environ, start_response)
            try:
                data = b"".join(chunks)
            finally:
                getattr(chunks, "close", lambda: None)()
            status, answer_headers = started
    except Exception:  # what moto's server answers for an exception in moto: a 500 with the traceback
        status, answer_headers, data = "500 INTERNAL SERVER ERROR", [("Content-Type", "text/plain")], \
            traceback.format_exc().encode()
    code, _, reason = status.partition(" ")
    kept = [(name, value) for name, value in answer_headers
            if name.lower() not in ("content-length", "connection", "transfer-encoding")]
    return int(code), reason, kept, data


_VIEWS: dict[tuple, object] = {}  # (Flask application, method, path) -> moto's view, or None: Flask answers


def _direct(app, environ) -> tuple[str, list, bytes] | None:
    """An AWS call (a POST to /, as boto3 makes to CloudWatch and the tagging API) answered by moto's view as moto's
    Flask application calls it and answers (moto_server/werkzeug_app.py, core/utils.convert_to_flask_response):
    the same request class, the view's (status, headers, body) made a Flask Response, a ClientError a 400, and
    the one header flask_cors adds to an answer without an Origin. Without Flask's per-request contexts, hooks
    and debug checks: about 40 % of moto's CPU for a small request. Anything else (another method or path, a
    request with an Origin, an application with other hooks) is None: Flask answers it."""
    if environ["REQUEST_METHOD"] != "POST" or environ["PATH_INFO"] != "/" or "HTTP_ORIGIN" in environ:
        return None
    flask_app = app.get_application(environ)
    key = (flask_app, "POST", "/")
    if key not in _VIEWS:
        _VIEWS[key] = _view(flask_app)
    view = _VIEWS[key]
    if view is None:
        return None
    from botocore.exceptions import ClientError
    from moto.moto_api import recorder
    from moto.moto_server.werkzeug_app import BackendRequest
    from werkzeug.exceptions import HTTPException

    request = BackendRequest(environ)
    _root_url_known(request, environ)
    try:
        try:
            recorder._record_request(request)
            result = view.callback(request, request.raw_url, dict(request.headers))
        except ClientError as exc:
            result = 400, {}, exc.response["Error"]["Message"]
        status, headers, content = result if len(result) == 3 else (200, {}, result)
        response = flask_app.response_class(response=content, status=status, headers=headers)
    except HTTPException as exc:  # as Flask answers one (and flask_cors marks it)
        response = exc.get_response(environ)
    response.headers["Access-Control-Allow-Origin"] = "*"
    return response.status, list(response.headers.items()), response.get_data()


_ROOT_URLS: dict[tuple, str] = {}  # what werkzeug's root_url is for a request's scheme, Host, server and script path


def _root_url_known(request, environ) -> None:
    """werkzeug's `root_url` of `request` (moto reads it for every request's URL), as werkzeug works it out from the
    environ's scheme, Host header, server name and port and script path alone (and the class's trusted hosts): worked
    out once for each such request and given to the next ones as werkzeug itself keeps it once worked out (the
    request's own attribute). About 30 us of a small request's CPU; the same text."""
    key = (type(request), type(request).trusted_hosts, environ.get("wsgi.url_scheme"), environ.get("HTTP_HOST"),
           environ.get("SERVER_NAME"), environ.get("SERVER_PORT"), environ.get("SCRIPT_NAME"))
    if key in _ROOT_URLS:
        request.__dict__["root_url"] = _ROOT_URLS[key]
    else:
        _ROOT_URLS[key] = request.root_url


def _view(flask_app):
    """The view moto's application routes a POST to / to, when Flask would run nothing else around it: no
    before-request hook, flask_cors's after-request hook alone."""
    from moto.core.utils import convert_to_flask_response
    from werkzeug.exceptions import HTTPException

    if flask_app.before_request_funcs or [f.__name__ for f in flask_app.after_request_funcs.get(None, [])] != [
            "cors_after_request"] or any(flask_app.after_request_funcs.get(k) for k in flask_app.after_request_funcs
                                         if k is not None):
        return None
    try:
        endpoint, arguments = flask_app.url_map.bind("localhost").match("/", method="POST")
    except HTTPException:
        return None
    view = flask_app.view_functions.get(endpoint)
    return view if isinstance(view, convert_to_flask_response) and not arguments else None


def _wsgi_handler(app) -> type[KeepAliveHandler]:
    """A request handler that passes each request to the WSGI application `app` and answers with a length."""

    class Handler(KeepAliveHandler):
        timeout = 600  # a connection its client left open (a CLI run's pool) ends its thread when idle that long

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            code, reason, headers, data = _answer(app, self.command, self.path, self.headers.items(), body,
                                                  self.server.server_address, self.client_address[0],
                                                  self.request_version)
            self.send_response(code, reason)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle  # noqa: N815

    return Handler


_IN_PROCESS: dict[str, object] = {}  # "127.0.0.1:port" -> a running server (moto, a proxy) answering callers here


def _sent_in_process() -> None:
    """A boto3 client in this process (a test's, or the CLI's run in-process) that calls a running moto server's
    own address is answered by that server's application in the caller's thread: the request botocore built,
    signed and would have sent (the Host and Accept-Encoding headers that http.client adds included), and the
    answer as the server's HTTP handler writes it (its Server and Date headers, moto's, the length), read by
    botocore as any HTTP answer. Only the socket and its two threads are skipped: half of a small request's CPU.
    A request to any other address (a fault proxy in front of moto, a closed server, a subprocess's calls) goes
    over HTTP, as does every request when GPUDASH_TEST_MOTO_HTTP=1."""
    from botocore import httpsession

    if getattr(httpsession.URLLib3Session.send, "in_process", False):
        return
    over_http = httpsession.URLLib3Session.send

    def send(self, request):
        parts = urlsplit(request.url)
        server = _IN_PROCESS.get(parts.netloc) if parts.scheme == "http" else None
        answered = None if server is None else server.answer(request, parts)
        return over_http(self, request) if answered is None else answered

    send.in_process = True
    httpsession.URLLib3Session.send = send


def _backend_app(service: str):
    """moto's Flask application for `service`, out of debug mode. moto builds it in debug mode, where Flask
    wraps every request's form in a new class (a helper for browser upload errors) and does other
    per-request debug work: about a quarter of moto's CPU in a publishing test. An exception in moto still
    reaches the handler above (which answers it as moto's server does), not Flask's generic error page."""
    from moto.moto_server.werkzeug_app import create_backend_app

    app = create_backend_app(service)
    app.debug = False
    app.config["PROPAGATE_EXCEPTIONS"] = True
    return app


# The services gpudash calls (CloudWatch, and the tagging API for alarms' tags in bulk): their applications are made
# when the server starts serving in-process, not by the first call's thread (see `_ready_for_threads`)
CALLED = ("cloudwatch", "resourcegroupstaggingapi")
# the kube-state-metrics pod whose reads the agent alarm counts (the agent's job writes its namespace/name)
KSM_POD = "kube-system/kube-state-metrics-6d4f9c7b8-x2k9p"


def _ready_for_threads(server: "MotoServer") -> None:
    """Answer each call gpudash makes once, in-process on the thread that starts the server, then forget what they
    made: moto makes a service's application at its first call, and imports much of itself lazily while answering
    (moto.iam at every request's setup, moto.s3 and moto.events for the tagging API), which a call's thread (the
    deadline's, each Region's) did while another thread (a spare Prometheus's readiness poll, a test's own import)
    could import one of those modules or what they import, and see it half made."""
    from botocore.exceptions import ClientError

    cloudwatch, tagging = server.client("cloudwatch", "us-east-1"), server.client(CALLED[1], "us-east-1")
    metric = {"MetricName": "m", "Namespace": "n", "Statistic": "Average", "Period": 60, "EvaluationPeriods": 1,
              "Threshold": 1.0, "ComparisonOperator": "GreaterThanThreshold"}
    cloudwatch.put_metric_alarm(AlarmName="warm", Tags=[{"Key": "k", "Value": "v"}], **metric)
    arn = cloudwatch.describe_alarms(AlarmNames=["warm"])["MetricAlarms"][0]["AlarmArn"]
    calls = [lambda: cloudwatch.list_tags_for_resource(ResourceARN=arn),
             lambda: cloudwatch.tag_resource(ResourceARN=arn, Tags=[{"Key": "k2", "Value": "v"}]),
             lambda: cloudwatch.untag_resource(ResourceARN=arn, TagKeys=["k2"]),
             lambda: tagging.get_resources(ResourceTypeFilters=["cloudwatch:alarm"]),
             lambda: cloudwatch.put_dashboard(DashboardName="warm", DashboardBody='{"widgets": []}'),
             lambda: cloudwatch.get_dashboard(DashboardName="warm"),
             lambda: cloudwatch.list_dashboards(DashboardNamePrefix="warm"),
             lambda: cloudwatch.delete_dashboards(DashboardNames=["warm"]),
             lambda: cloudwatch.get_dashboard(DashboardName="warm"),
             lambda: cloudwatch.list_metrics(Namespace="n"),
             lambda: cloudwatch.delete_alarms(AlarmNames=["warm"])]
    for call in calls:
        with contextlib.suppress(ClientError):
            call()
    server.reset()


class MotoServer(LoopbackServer):
    def __init__(self):
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication

        self.app = DomainDispatcherApplication(_backend_app)
        self._serve(_wsgi_handler(self.app))
        self.url = f"http://{self.address}"
        self.clients: dict[tuple[str, str], object] = {}
        self.product_clients: dict[tuple, object] = {}  # see cloudwatch_world._clients_kept

    def __enter__(self) -> "MotoServer":
        _moto_modules_listed_once()
        _action_names_listed_once()
        _attribute_names_worked_out_once()
        _random_strings_drawn_at_once()
        _dashboards_global()
        _dashboard_tags()
        _tags_on_create_only()
        _composite_alarms()
        for key, value in FAKE_CREDENTIALS.items():
            os.environ.setdefault(key, value)
        super().__enter__()
        if os.environ.get("GPUDASH_TEST_MOTO_HTTP") != "1":
            _sent_in_process()
            _IN_PROCESS[self.address] = self
            _ready_for_threads(self)
        return self

    def __exit__(self, *exc) -> None:
        # moto keeps its state per process, not per server: a server's test module leaves none to the next module of
        # its worker (one that starts from an empty CloudWatch read a module's alarms and dashboards left before it)
        self.reset()
        _IN_PROCESS.pop(self.address, None)
        super().__exit__(*exc)

    def answer_as_http(self, method: str, target: str, headers: list[tuple[str, str]],
                       body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """What this server's HTTP handler answers a request that http.client sends with these headers (it adds
        Accept-Encoding and the length; a Host given is kept): status, reason, headers (its Server and Date
        first, the length last) and body, answered by moto's application in the caller's thread."""
        sent = _as_http_client_sends(headers, self.address, body)
        code, reason, answered, data = _answer(self.app, method, target, sent, body, self.server.server_address,
                                               "127.0.0.1")
        return code, reason, [("Server", _SERVER), ("Date", email.utils.formatdate(usegmt=True)), *answered,
                              ("Content-Length", str(len(data)))], b"" if method == "HEAD" else data

    def answer(self, request, parts):
        """botocore's request answered by moto's application in this thread, as an HTTP answer (see above)."""
        method, target, headers, body = as_sent(request, parts)
        code, _, answered, data = self.answer_as_http(method, target, headers, body)
        return received(request, code, answered, data)

    def reset(self) -> None:
        if self.address in _IN_PROCESS:  # moto's own reset endpoint, asked as any in-process request
            code, _, _, data = _answer(self.app, "POST", "/moto-api/reset", [("Host", self.address)], b"",
                                       self.server.server_address, "127.0.0.1")
            assert code == 200, data
        else:
            import requests

            requests.post(f"{self.url}/moto-api/reset", timeout=10).raise_for_status()
        for dashboards in (*_DASHBOARDS.values(), *_DASHBOARD_TAGS.values()):
            dashboards.clear()

    def client(self, service: str = "cloudwatch", region: str = "us-east-1"):
        """The tests' own client of `service` in `region`: one per server (a client holds no state of a test's
        world, only its connections to this server, kept alive from one test to the next)."""
        import boto3
        from botocore.config import Config

        key = (service, region)
        if key not in self.clients:
            # moto answers unimplemented calls with HTTP 500: do not retry them.
            self.clients[key] = boto3.client(service, region_name=region, endpoint_url=self.url,
                                             config=Config(retries={"max_attempts": 1}), **{
                                                 "aws_access_key_id": "testing", "aws_secret_access_key": "testing"})
        return self.clients[key]

    def put_dcgm_metrics(self, pod: str, cluster: str = "gpu-cluster", region: str = "us-east-1",
                         namespace: str = "ml", node: str = "ip-10-0-1-1", gpu: str = "0",
                         daemonset_counts: bool = True) -> None:
        """Datapoints as the CloudWatch agent publishes them for one GPU a workload pod holds (the per-pod
        and the per-GPU dimension sets), and (`daemonset_counts`) the exporter DaemonSet's desired count that its
        kube-state-metrics job publishes with [ClusterName] and with [ClusterName, kube_state_metrics_pod] (the agent
        alarm's): what verify samples."""
        # one PutMetricData call for all nine (the API takes up to 1,000 datapoints a call): the same stored data
        self.client("cloudwatch", region).put_metric_data(Namespace="ContainerInsights/Prometheus", MetricData=[{
            "MetricName": metric, "Value": 50, "Dimensions": [
                {"Name": "ClusterName", "Value": cluster}, *({"Name": k, "Value": v} for k, v in dimensions.items())]}
            for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED",
                           "DCGM_FI_DEV_POWER_USAGE")
            for dimensions in ({"namespace": namespace, "pod": pod}, {"node": node, "gpu": gpu})] + [{
                "MetricName": "kube_daemonset_status_desired_number_scheduled", "Value": 2,
                "Dimensions": [{"Name": "ClusterName", "Value": cluster}, *extra]}
                for extra in ([], [{"Name": "kube_state_metrics_pod", "Value": KSM_POD}])] * daemonset_counts)


def as_sent(request, parts) -> tuple[str, str, list[tuple[str, str]], bytes]:
    """botocore's request as http.client sends it: method, target, headers (the Host, Accept-Encoding and length
    that it adds when the request has none), body."""
    body = request.body
    if body is None:
        body = b""
    elif isinstance(body, str):
        body = body.encode("utf-8")
    elif not isinstance(body, (bytes, bytearray)):
        body = body.read()
    headers = [(name, value.decode("latin-1") if isinstance(value, bytes) else str(value))
               for name, value in request.headers.items()]
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return request.method, target, _as_http_client_sends(headers, parts.netloc, body), bytes(body)


def _as_http_client_sends(headers: list[tuple[str, str]], host: str, body: bytes) -> list[tuple[str, str]]:
    """`headers` with those http.client adds to a request that has none of them: Host, Accept-Encoding, the length."""
    names = {name.lower() for name, _ in headers}
    added = [("Host", host)] if "host" not in names else []
    if "accept-encoding" not in names:
        added.append(("Accept-Encoding", "identity"))
    if body and "content-length" not in names:
        added.append(("Content-Length", str(len(body))))
    return [*added, *headers]


def received(request, code: int, headers: list[tuple[str, str]], data: bytes):
    """An HTTP answer (its headers as sent) as botocore receives it for `request`."""
    from botocore.awsrequest import AWSResponse
    from urllib3 import HTTPHeaderDict

    found = HTTPHeaderDict()
    for name, value in headers:
        found.add(name, value)
    response = AWSResponse(request.url, code, found, _Raw(b"" if request.method == "HEAD" else data))
    if not request.stream_output:
        response.content  # read at once, as botocore reads an answer it does not stream
    return response


def serve_in_process(address: str, server) -> None:
    """botocore's requests in this process to "127.0.0.1:port" are answered by `server.answer(request, parts)` in
    the caller's thread (when it answers None, the request goes over HTTP)."""
    _sent_in_process()
    _IN_PROCESS[address] = server


def stop_serving_in_process(address: str) -> None:
    _IN_PROCESS.pop(address, None)


def answered_here(url: str | None):
    """What answers botocore's requests to `url` in this process (a moto server, a proxy), or None."""
    if not url:
        return None
    parts = urlsplit(url)
    return _IN_PROCESS.get(parts.netloc) if parts.scheme == "http" else None


def in_process_server(address: str) -> MotoServer | None:
    """The running moto server at "127.0.0.1:port" whose callers in this process it answers in their own thread
    (None over HTTP: another address, or GPUDASH_TEST_MOTO_HTTP=1)."""
    server = _IN_PROCESS.get(address)
    return server if isinstance(server, MotoServer) else None


_SHARED: list[MotoServer] = []


def shared_server() -> MotoServer:
    """The process's one moto server for test modules that leave moto as they found it (reset): its Flask
    applications and the clients made for it are kept from one module to the next. It runs until the process
    ends (its thread is a daemon)."""
    if not _SHARED:
        _SHARED.append(MotoServer().__enter__())
    return _SHARED[0]
