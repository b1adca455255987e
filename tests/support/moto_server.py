"""moto's server on 127.0.0.1: CloudWatch over real HTTP, reached with boto3's endpoint_url.

moto's own WSGI application (the one its server runs: each request dispatched to the service's responses
and backend) is served over HTTP/1.1 with keep-alive, as AWS's endpoints are. moto's server closes the
connection after every answer, so each of a test's thousands of requests paid a new connection and a new
thread at both ends (about 40 % of a small request's CPU); what each request is answered is moto's.
"""

from __future__ import annotations

import functools
import io
import os
import sys
import traceback
from urllib.parse import unquote

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


class _Listed:
    def __init__(self, names: tuple[str, ...]):
        self.names = names

    def __call__(self) -> tuple[str, ...]:
        return self.names


_DASHBOARDS: dict[str, dict] = {}  # account -> dashboards by name, whichever Region's endpoint is called


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


def _wsgi_handler(app) -> type[KeepAliveHandler]:
    """A request handler that passes each request to the WSGI application `app` and answers with a length."""

    class Handler(KeepAliveHandler):
        timeout = 600  # a connection its client left open (a CLI run's pool) ends its thread when idle that long

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path, _, query = self.path.partition("?")
            host, port = self.server.server_address[:2]
            environ = {"REQUEST_METHOD": self.command, "SCRIPT_NAME": "", "PATH_INFO": unquote(path, "latin-1"),
                       "QUERY_STRING": query, "SERVER_NAME": str(host), "SERVER_PORT": str(port),
                       "SERVER_PROTOCOL": self.request_version, "REMOTE_ADDR": self.client_address[0],
                       "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(length),
                       "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
                       "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": False,
                       "wsgi.run_once": False}
            for name, value in self.headers.items():
                key = "HTTP_" + name.upper().replace("-", "_")
                if key not in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
                    environ[key] = f"{environ[key]},{value}" if key in environ else value
            started: list = []

            def start_response(status, headers, exc_info=None):
                started[:] = [status, headers]

            try:
                chunks = app(environ, start_response)
                try:
                    data = b"".join(chunks)
                finally:
                    getattr(chunks, "close", lambda: None)()
                status, headers = started
            except Exception:  # what moto's server answers for an exception in moto: a 500 with the traceback
                status, headers, data = "500 INTERNAL SERVER ERROR", [("Content-Type", "text/plain")], \
                    traceback.format_exc().encode()
            code, _, reason = status.partition(" ")
            self.send_response(int(code), reason)
            for name, value in headers:
                if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle  # noqa: N815

    return Handler


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


class MotoServer(LoopbackServer):
    def __init__(self):
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication

        self._serve(_wsgi_handler(DomainDispatcherApplication(_backend_app)))
        self.url = f"http://{self.address}"
        self.clients: dict[tuple[str, str], object] = {}
        self.product_clients: dict[tuple, object] = {}  # see cloudwatch_world._clients_kept

    def __enter__(self) -> "MotoServer":
        _moto_modules_listed_once()
        _action_names_listed_once()
        _attribute_names_worked_out_once()
        _dashboards_global()
        for key, value in FAKE_CREDENTIALS.items():
            os.environ.setdefault(key, value)
        return super().__enter__()

    def reset(self) -> None:
        import requests

        requests.post(f"{self.url}/moto-api/reset", timeout=10)
        for dashboards in _DASHBOARDS.values():
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
                         namespace: str = "ml", node: str = "ip-10-0-1-1", gpu: str = "0") -> None:
        """Datapoints as the CloudWatch agent publishes them for one GPU a workload pod holds (the per-pod
        and the per-GPU dimension sets): what verify samples."""
        # one PutMetricData call for all eight (the API takes up to 1,000 datapoints a call): the same stored data
        self.client("cloudwatch", region).put_metric_data(Namespace="ContainerInsights/Prometheus", MetricData=[{
            "MetricName": metric, "Value": 50, "Dimensions": [
                {"Name": "ClusterName", "Value": cluster}, *({"Name": k, "Value": v} for k, v in dimensions.items())]}
            for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED",
                           "DCGM_FI_DEV_POWER_USAGE")
            for dimensions in ({"namespace": namespace, "pod": pod}, {"node": node, "gpu": gpu})])
