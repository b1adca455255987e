"""CloudWatch (and the Resource Groups Tagging API) through botocore: paced per Region, retried on
throttling, 5xx and dropped connections within the command's deadline, and every answer checked
to be a real API answer.

An answer that is not one (not JSON, `{}` where a list is due, items without their keys, for the calls
publishing makes any member not as the API's model has it; a listing that goes round or lists what was
not asked for) is a remote failure, never an empty result: reading `{}` as "no alarms" would plan every alarm as a
create over whatever exists. Each call runs under the deadline (a server dripping its answer is
abandoned when the time is up); backoff, a capped Retry-After and pacing wait on the deadline's
clock, so tests inject a clock and never sleep.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import math
import os
import random
import re
import threading
from typing import Any, Callable

from .. import redact
from ..errors import GpudashError, RemoteError, may_have_happened
from ..markers import ALARM_OWNER_TAG
from ..ownership import NOT_COMPARED, UNMODELLED
from .answer import NOT_JSON, json_value
from .deadline import Deadline, DeadlineExceeded, http_date
from .http import BODY_LIMIT, PAST_LIMIT, RETRIES_AFTER, connect_failure, joined_within_limit
from .pacing import Pacer

TAGGING = "resourcegroupstaggingapi"
BATCH = 100  # DescribeAlarms page, AlarmNames per call, GetResources page (DeleteAlarms names one: DELETE_GROUP)
# What each read publishing makes must answer: key -> type. Its writes answer their output's members only
# (`{}`, or an empty body; PutDashboard its validation messages): anything else is not the write's answer.
# Other calls (verify's ListMetrics) are read by their callers, who name what is odd themselves; for
# every call, something else than a list where the model has one is marked (botocore would read `{}` as []).
# DescribeAlarms: every one gpudash makes asks for composite alarms too (ALARM_TYPES), and CloudWatch answers both lists
# (an empty one where it holds none of that kind): an answer without CompositeAlarms (a server or proxy ignoring
# AlarmTypes) cannot show a composite alarm holding a name gpudash would write, so it is not an answer.
REQUIRED = {
    "DescribeAlarms": {"MetricAlarms": list, "CompositeAlarms": list},
    "GetDashboard": {"DashboardBody": str},
    "ListDashboards": {"DashboardEntries": list},
    "ListTagsForResource": {"Tags": list},
    "GetResources": {"ResourceTagMappingList": list},
}
WRITES = ("PutDashboard", "PutMetricAlarm", "DeleteAlarms", "TagResource", "UntagResource", "DeleteDashboards")
# Lists an answer holds where its request asked for them, whose items are checked as those of REQUIRED's lists where it
# holds them: DescribeAlarms lists log alarms when AlarmTypes names LogAlarm (ALARM_TYPES, unless that Region refused
# the type: `_log_alarms_refused`), and CloudWatch answers each kind asked for as a list (an empty one where it holds
# none), as it answers CompositeAlarms: an answer to such a request without LogAlarms (a proxy stripping it) cannot
# show a log alarm holding a name gpudash would write, so it is not an answer (`_unanswered`)
OPTIONAL_LISTS = {"DescribeAlarms": ("LogAlarms",)}
CHECKED = (*REQUIRED, *WRITES)
ITEM_KEYS = {"MetricAlarms": ("AlarmName", "AlarmArn"), "CompositeAlarms": ("AlarmName", "AlarmArn"),
             "LogAlarms": ("AlarmName", "AlarmArn"),
             "ResourceTagMappingList": ("ResourceARN",),
             "Tags": ("Key", "Value"), "DashboardEntries": ("DashboardName",)}
RETRYABLE_CODES = {"Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded",
                   "TooManyRequestsException", "RequestThrottled", "ServiceUnavailable", "InternalFailure",
                   "InternalServerError", "InternalServiceError", "InvalidAnswer"}
DENIED_CODES = ("AccessDenied", "AccessDeniedException")  # the credentials may not make the call
# The error codes (as botocore parses them from the answer) by which an API says the thing asked for does not exist:
# ResourceNotFound for dashboards and alarms (GetDashboard's DashboardNotFoundError, DeleteDashboards, DeleteAlarms);
# ResourceNotFoundException for the tagging calls (ListTagsForResource). Re-raised as botocore's ClientError for the
# caller to judge; by the code alone (an error whose message names a not-found, or without a code, is that error:
# never "not there"). Only for these APIs, whose callers judge it: from any other (a listing, a write) that code is no
# answer the API gives, and a failure of the call like any refusal.
NOT_FOUND_CODES = {"ListTagsForResource": ("ResourceNotFoundException", "ResourceNotFound"),
                   **dict.fromkeys(("GetDashboard", "DeleteDashboards", "DeleteAlarms"), ("ResourceNotFound",))}
BACKOFF_BASE, BACKOFF_CAP = 0.5, 8.0
# The Region of every call is its cluster's clusters[].region (AWS_REGION chooses none), so that is what to check
ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL"


def reach_hint(endpoint: str = ENDPOINT_VARIABLE) -> str:
    """What to check when CloudWatch cannot be reached; `endpoint` is how the user gave the endpoint (--endpoint-url,
    or the variable)."""
    return f"check the network, the Region (clusters[].region in the settings) and {endpoint}; run again"


def answer_hint(endpoint: str = ENDPOINT_VARIABLE) -> str:
    """What to check when something that is not CloudWatch's API answered."""
    return f"check {endpoint} and any proxy in between; run again"
_NOT_AN_ANSWER = "GpudashNotAnAnswer"
# What a write's call answers when the look before a retry found the object already as the write makes it: whether an
# attempt before it may have reached CloudWatch (True: it may have made it; False: none did, someone else made it so)
LOOKED = "GpudashLookedDone"
_REFUSED = "GpudashRefused"  # the answer that is not one is an error document: the write was refused
# The kinds of alarm every DescribeAlarms asks for: every kind CloudWatch has. It keeps one alarm of a name whatever its
# kind (PutLogAlarm: a name "unique within the Amazon Web Services account and Region"), and lists the composite and
# log alarms only when AlarmTypes names them ("If you omit this parameter, only metric alarms are returned, even if
# composite alarms or log alarms exist in the account"): a name no listing of metric alarms holds may be a person's
# composite or log alarm.
ALARM_TYPES = ["MetricAlarm", "CompositeAlarm", "LogAlarm"]
# The log alarms of a DescribeAlarms answer as it lists them (`_check_body`): botocore releases before log alarms drop
# the list they do not know
_LOG_ALARMS = "GpudashLogAlarms"
# The lists of alarms of other kinds than metric alarms in a DescribeAlarms page, with what each kind is called
OTHER_KINDS = (("CompositeAlarms", "composite alarm"), (_LOG_ALARMS, "log alarm"))
# The mark `metric_alarms` puts in each alarm of another kind it lists beside the metric alarms (what the kind is
# called): a name it holds is taken, never gpudash's to write or delete (gpudash writes metric alarms alone)
KIND = "GpudashAlarmKind"
# The members of a DescribeAlarms page's alarms the installed botocore does not know (`_not_as_modelled`'s `unknown`),
# by the alarm's index on the page: `metric_alarms` puts them in each alarm (ownership.UNMODELLED)
_UNMODELLED_ON_PAGE = "GpudashUnmodelledOnPage"


class NotResent(RemoteError):
    """A write's retry withheld by the look before it (`CloudWatch.call`'s `before_retry`): the object is neither as
    the write sends it nor as it was before (someone else changed it meanwhile). Raised as it is."""


SERVICES = ("cloudwatch", TAGGING)  # every service gpudash makes a client of
# The services botocore's credential chain makes clients of, from the same session: STS for a profile's role_arn and
# for a web identity token (AWS_ROLE_ARN, EKS's IRSA), SSO and its OIDC for an SSO profile, sign-in for `aws login`
CREDENTIAL_SERVICES = ("sts", "sso", "sso-oidc", "signin")


def _model_loader(session):
    """botocore's data loader for `session`, searching where botocore's own does (AWS_DATA_PATH and the config's
    data_path first), that knows of the services gpudash calls only, and those the credential chain calls to find
    its keys (CREDENTIAL_SERVICES): to tell whether it knows a service, botocore's lists every service it has a model
    of (about 400 folders and 2,700 file checks, for each client's model and again for its endpoint rules), and reads
    the endpoints of those services alone (known_endpoints)."""
    from botocore.loaders import JSONFileLoader, Loader, create_loader

    class Files(JSONFileLoader):
        def load_file(self, file_path):
            if os.path.basename(file_path) == "endpoints":
                return known_endpoints(file_path, super().load_file)
            return super().load_file(file_path)

    class CalledServices(Loader):
        FILE_LOADER_CLASS = Files

        def list_available_services(self, type_name: str) -> list[str]:
            return [service for service in SERVICES + CREDENTIAL_SERVICES if any(
                self.file_loader.exists(os.path.join(path, service, version, type_name))
                for path in self.search_paths if os.path.isdir(os.path.join(path, service))
                for version in os.listdir(os.path.join(path, service)))]

    return CalledServices(extra_search_paths=create_loader(session.get_config_variable("data_path")).search_paths,
                          include_default_search_paths=False)


# The endpoints of the services this session makes clients of, from botocore's endpoints.json (1.2 MB, every service
# of every partition: read as ordered dictionaries, about 12 ms of CPU, a tenth of the CloudWatch side of `verify`),
# kept beside the bytecode and read back while the file is the same file (its path, size and modification time)
_ENDPOINTS_KEPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", "botocore-endpoints.json")


def known_endpoints(file_path: str, load: Callable[[str], Any], kept: str | None = None) -> Any:
    """botocore's endpoints document at `file_path` (without its extension; `load` reads it as botocore does), holding
    only the services of SERVICES and CREDENTIAL_SERVICES: for them botocore's EndpointResolver answers as with the
    whole document (every other key of the document and of each partition is kept), and the loader knows no other
    service. Read from `kept` (the copy a run wrote) when it was made of this very file; a copy that cannot be read
    or is of another file is made again (not written where bytecode is not: PYTHONDONTWRITEBYTECODE)."""
    import sys

    kept = kept or _ENDPOINTS_KEPT
    source = next((file_path + ext for ext in (".json", ".json.gz") if os.path.isfile(file_path + ext)), None)
    try:
        found = os.stat(source) if source else None
    except OSError:
        found = None
    if found is None:
        return load(file_path)
    key = [os.path.abspath(source), found.st_size, found.st_mtime_ns, list(SERVICES + CREDENTIAL_SERVICES)]
    try:
        with open(kept, encoding="utf-8") as copy:
            held = json.load(copy)
        if held["key"] == key:
            return held["endpoints"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    whole = load(file_path)
    endpoints = _called_only(whole)
    if endpoints is not whole and not sys.dont_write_bytecode:
        partial = f"{kept}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(kept), exist_ok=True)
            with open(partial, "w", encoding="utf-8") as copy:
                json.dump({"key": key, "endpoints": endpoints}, copy)
            os.replace(partial, kept)
        except OSError:  # a folder that cannot be written: read whole next time too, as bytecode is compiled
            with contextlib.suppress(OSError):
                os.remove(partial)
    return endpoints


def _called_only(document: Any) -> Any:
    """`document` with each partition's services cut to those gpudash's session makes clients of; `document` itself
    where it is not shaped as botocore's endpoints document is."""
    called = SERVICES + CREDENTIAL_SERVICES
    partitions = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(partitions, list) or not all(isinstance(p, dict) and isinstance(p.get("services"), dict)
                                                   for p in partitions):
        return document
    return {**document, "partitions": [
        {**partition, "services": {name: data for name, data in partition["services"].items() if name in called}}
        for partition in partitions]}


class BotocoreUnsupported(GpudashError):
    """The installed botocore lacks a part of it gpudash reads (`_http_session`): an install to change, not an input."""

    exit_code = 4  # as the CLI's internal errors: gpudash cannot run as it is installed


def _http_session(client) -> Any:
    """The HTTP session botocore's `client` sends its requests through, for `_bounded_send`: botocore's private
    `client._endpoint.http_session`, with the private `_content` of the answers it makes (botocore.awsrequest
    .AWSResponse). botocore offers no public way to read an answer as it arrives: its `before-send` event hands a
    handler the request alone, the events after it get the answer read whole, and it streams no answer of a JSON
    protocol (boto/botocore#2025). A botocore without either part fails here, when the client is made (before any
    request of it is sent), saying which part and what to install; never a bound silently lost."""
    from botocore.awsrequest import AWSResponse

    session = getattr(getattr(client, "_endpoint", None), "http_session", None)
    missing = ("client._endpoint.http_session" if not callable(getattr(session, "send", None))
               else "AWSResponse._content" if "_content" not in vars(AWSResponse("", 200, {}, None)) else None)
    if missing is not None:
        raise _unsupported(f"has no {missing}, which gpudash reads", "nothing was sent")
    return session


def _unsupported(does: str, sent: str) -> BotocoreUnsupported:
    """The error for an installed botocore that `does` what the answer bound cannot work with (`sent`: what of the
    command's requests was sent)."""
    from botocore import __version__ as botocore_version

    return BotocoreUnsupported(
        f"botocore {botocore_version} {does} to stop reading a CloudWatch answer at {BODY_LIMIT // 2**20} MiB "
        f"(botocore reads an answer whole, and one without end took the machine's memory); {sent}",
        where="the installed botocore",
        hint=f"install an earlier botocore and boto3 (pip install 'botocore<{botocore_version}' "
             f"'boto3<{botocore_version}'), and report it to gpudash's maintainers")


def _bounded_send(http_session) -> Callable[..., Any]:
    """botocore's send of a request through `http_session` (a client's endpoint's), its answer read here and not past
    BODY_LIMIT: botocore reads an answer whole, and one without end (a proxy or endpoint answering chunk after chunk)
    took the machine's memory. One past it is a failure of the HTTP client (HTTPClientError, PAST_LIMIT): an answer
    cut short, which may have been CloudWatch's to a request it made."""
    def send(request, **_) -> Any:
        from botocore.exceptions import ConnectionClosedError, HTTPClientError, ReadTimeoutError, SSLError
        from urllib3.exceptions import ProtocolError, ReadTimeoutError as Urllib3ReadTimeout, SSLError as Urllib3SSL

        request.stream_output = True  # (botocore's send then leaves the body to be read)
        response = http_session.send(request)
        if response._content is not None:  # read whole already: this botocore does not stream when asked to
            raise _unsupported("read a CloudWatch answer whole though the request asked to stream it "
                               "(request.stream_output), which gpudash relies on",
                               "the request was sent and its answer read")
        def past_limit() -> Exception:
            response.raw.close()
            return HTTPClientError(error=f"CloudWatch {PAST_LIMIT}")

        try:  # a failure while the body streams, said as botocore's send says it (URLLib3Session.send)
            body = joined_within_limit(response.raw.stream(1 << 16), past_limit)
        except Urllib3SSL as exc:
            raise SSLError(endpoint_url=request.url, error=exc) from None
        except Urllib3ReadTimeout as exc:
            raise ReadTimeoutError(endpoint_url=request.url, error=exc) from None
        except ProtocolError as exc:
            raise ConnectionClosedError(error=exc, request=request, endpoint_url=request.url) from None
        except HTTPClientError:
            raise
        except Exception as exc:  # noqa: BLE001 - as botocore's send: any other failure of the HTTP client
            raise HTTPClientError(error=exc) from None
        response._content = body
        return response
    return send


def _mask_credentials(session) -> None:
    """The keys and session token the chain found (a profile file, SSO) are masked in output."""
    try:
        found = session.get_credentials()
        found = found and found.get_frozen_credentials()
    except Exception:  # a broken profile: CloudWatch.credentials reports it
        return
    if found is not None:
        redact.secret(found.access_key)
        redact.secret(found.secret_key)
        redact.secret(found.token)


def _names_dashboard(arn: Any, name: str) -> bool:
    """Whether `arn` is the dashboard `name`'s ARN (arn:<partition>:cloudwatch::<account>:dashboard/<name>)."""
    return isinstance(arn, str) and re.fullmatch(r"arn:[a-z-]+:cloudwatch::[0-9]*:dashboard/" + re.escape(name),
                                                 arn) is not None


class CloudWatch:
    """botocore clients per Region and service, one pacer, errors turned into RemoteError."""

    def __init__(self, profile: str | None = None, endpoint_url: str | None = None, pacer: Pacer | None = None,
                 max_attempts: int = 6, deadline: Deadline | None = None, endpoint_name: str = ENDPOINT_VARIABLE):
        import botocore.session
        from botocore.config import Config

        from botocore.exceptions import ConfigParseError, ProfileNotFound

        try:
            # botocore's session, not boto3's: boto3 adds its resource layer and s3transfer (a fifth of verify's
            # CloudWatch side, CPU) and no handler for the services gpudash calls. The data loader's path read here
            # is where boto3's session reads the profile first: a missing profile or a broken file is said here.
            self.session = botocore.session.Session(profile=profile or None)
            self.session.register_component("data_loader", _model_loader(self.session))
        except ProfileNotFound:
            raise GpudashError(f"AWS profile {profile!r} not found in the AWS config and credentials files",
                               where="--profile (AWS_PROFILE)",
                               hint="give a profile that `aws configure list-profiles` lists, or leave --profile "
                                    "and AWS_PROFILE unset to use the standard AWS chain") from None
        except ConfigParseError as exc:
            raise GpudashError("the AWS config or credentials file cannot be read as one",
                               where=str(exc.kwargs.get("path", "AWS_CONFIG_FILE")),
                               hint="fix the file, or point AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE at the "
                                    "right one") from None
        self.endpoint_url = endpoint_url
        self.endpoint_name = endpoint_name  # how the user gave it, for the fixes: --endpoint-url or AWS_ENDPOINT_URL
        # gpudash retries itself (on the deadline's clock, within the deadline): botocore makes one attempt.
        self.config = Config(retries={"total_max_attempts": 1}, user_agent_extra="gpudash",
                             connect_timeout=5, read_timeout=20)
        self.deadline = deadline or Deadline(command="publishing")
        self.pacer = pacer or Pacer(clock=self.deadline.clock)
        self.max_attempts = max(1, max_attempts)
        self.clients: dict[tuple[str, str], Any] = {}
        self.notes: list[str] = []  # things the user should know that are not failures
        self.without_log_alarms: set[str] = set()  # Regions whose CloudWatch refused AlarmTypes LogAlarm
        # dashboard name -> its ARN, as a GetDashboard answer gave it (a name's ARN never changes: its tags are read by
        # it without asking GetDashboard again)
        self.dashboard_arns: dict[str, str] = {}
        # dashboard name -> (its stamp as listed before the read, the alarm ARNs its body shows): the account's
        # dashboards read for a prune's alarms, read again only where a later listing gives another stamp
        self.alarms_on_dashboards: dict[str, tuple[tuple[Any, int], set[str]]] = {}
        self.lock = threading.Lock()
        self.local = threading.local()  # `backoffs` of the calls this thread made: see `backoffs`

    def note(self, text: str) -> None:
        with self.lock:
            if text not in self.notes:
                self.notes.append(text)

    def backoffs(self) -> int:
        """How many times this thread's calls have waited to retry (a throttle, a 5xx, a dropped connection): a look
        made of several reads is stale when one of its reads waited after an earlier one was made."""
        return getattr(self.local, "backoffs", 0)

    def has_credentials(self) -> bool:
        return self.credentials() is not None

    def credentials(self):
        """What the standard chain finds (None: nothing), read as botocore does when it makes a client. A source
        of the chain that fails is one message, never a Python error: one that cannot be reached (an instance role
        is read from the instance metadata service, through the proxy the environment names) a remote failure, one
        that refuses (an SSO login expired or never made, a credential_process that fails) a setting to mend."""
        from botocore.exceptions import (BotoCoreError, ClientError, ConnectionError as BotoConnectionError,
                                         HTTPClientError)

        try:
            found = self.session.get_credentials()
            return found and found.get_frozen_credentials()  # a source read when first used (SSO, a role) read now
        except ClientError as exc:  # STS refused the role a profile or AWS_ROLE_ARN names
            raise RemoteError(f"the AWS credential chain could not be read: {exc}", where="AWS credentials",
                              hint="check the role's trust policy and the credentials that assume it "
                                   "(the profile's source_profile, or the web identity token)") from None
        except (BotoConnectionError, HTTPClientError) as exc:
            raise RemoteError(f"the AWS credential chain could not be read: {exc}", where="AWS credentials",
                              hint="a source of the chain could not be reached (an instance role, read from "
                                   "169.254.169.254; an SSO portal; STS): check the network and the proxy the "
                                   "environment names (HTTP_PROXY, HTTPS_PROXY; NO_PROXY lists what goes around it), "
                                   "or set AWS_PROFILE or the standard AWS variables") from None
        except BotoCoreError as exc:
            raise GpudashError(f"the AWS credentials cannot be read: {exc}", where="AWS credentials (AWS_PROFILE)",
                               hint="renew them (an SSO profile: `aws sso login`), or mend the profile's "
                                    "credential_process, or set the standard AWS variables") from None
        except ConnectionError as exc:  # (Python's, raised by a source outside botocore's own errors)
            raise RemoteError(f"the AWS credential chain could not be read: {type(exc).__name__}: {exc}",
                              where="AWS credentials", hint="check the network and the proxy the environment names, "
                                                            "or set AWS_PROFILE or the standard AWS variables") from None
        except (ValueError, OSError) as exc:  # a source botocore fails in Python's words, not its own
            raise GpudashError(f"the AWS credentials cannot be read: {type(exc).__name__}: {exc}",
                               where="AWS credentials", hint="mend the source that holds them: a credential_process "
                               "must print botocore's JSON, AWS_WEB_IDENTITY_TOKEN_FILE must name a readable file, "
                               "AWS_CONTAINER_CREDENTIALS_FULL_URI an address botocore reads; or set the standard AWS "
                               "variables") from None

    def _created(self, region: str, service: str):
        """botocore's client of `service` in `region`. A setting of the AWS configuration botocore refuses while it
        makes one (AWS_DEFAULTS_MODE, AWS_STS_REGIONAL_ENDPOINTS, AWS_ENDPOINT_URL_<SERVICE>, ... as a variable or
        in the config file) is a usage error naming it, never a Python error."""
        from botocore.exceptions import BotoCoreError

        try:
            return self.session.create_client(service, region_name=region, endpoint_url=self.endpoint_url,
                                              config=self.config)
        except (BotoCoreError, ValueError) as exc:  # (ValueError: an endpoint URL botocore cannot use)
            raise GpudashError(f"the AWS configuration cannot be used: {exc}",
                               where="AWS settings (AWS_* variables, the AWS config file)",
                               hint="mend or unset the setting it names (an endpoint: AWS_ENDPOINT_URL_CLOUDWATCH, "
                                    "or endpoint_url in the config file)") from None

    def client(self, region: str, service: str = "cloudwatch"):
        with self.lock:  # creating clients from one session is not thread-safe
            key = (region, service)
            if key not in self.clients:
                self.credentials()  # (botocore reads them making the client: a failing source said as such)
                client = self._created(region, service)
                client.meta.events.register("before-parse", _check_body)
                client.meta.events.register("before-send", _bounded_send(_http_session(client)))
                _mask_credentials(self.session)
                self.clients[key] = client
            return self.clients[key]

    def call(self, region: str, api: str, what: str, service: str | None = None, *,
             before_retry: Callable[[], bool] | None = None, **kwargs) -> Any:
        """One API call, paced and retried; the answer checked. Its not-found (NOT_FOUND_CODES) is re-raised as is (with
        `after_lost`: whether an earlier attempt of the call reached CloudWatch and lost its answer). A write
        stopped (a signal, the deadline) once a request of it was sent may have happened, and says so.
        CloudWatch's writes are not conditional: `before_retry`, called after each wait (the backoff, then the
        attempt's pacing turn: no wait falls between the look and the resend) and before the attempt it precedes,
        reads the object again; it returns True to send the write once more, False when the object is
        already as the write sends it (the call answers {LOOKED: whether an earlier attempt may have landed: if
        not, someone else made it so; the caller's read-back is the proof), or raises NotResent (changed by someone
        else meanwhile)."""
        sent: list[bool] = []
        lost: list[bool] = []  # an attempt reached CloudWatch and its answer was lost
        try:
            return self._call(region, api, what, service, sent, lost, before_retry, **kwargs)
        except NotResent:
            raise
        except DeadlineExceeded as exc:
            if api not in WRITES or not sent:
                raise  # nothing was sent: not attempted, as it says
            raise exc.after_sending(f"CloudWatch {api} was sent", "no answer showed it") from None
        except RemoteError as exc:
            if api not in WRITES or not lost:
                raise  # every attempt failed to connect or was answered: it did not happen
            cause = exc.what
            failure = may_have_happened(exc, f"CloudWatch {api} was sent", "its answer was lost")
            failure.write_lost = True  # the caller reads the object back to tell done from not done
            failure.cause = cause  # the last failure as it was answered: what a read-back that shows it not made says
            raise failure from None

    def _call(self, region: str, api: str, what: str, service: str | None, sent: list[bool], lost: list[bool],
              before_retry: Callable[[], bool] | None = None, **kwargs) -> Any:
        from botocore.exceptions import (BotoCoreError, ClientError, ConnectionError as BotoConnectionError,
                                         ConnectTimeoutError, EndpointConnectionError, HTTPClientError,
                                         NoCredentialsError, NoRegionError, ProxyConnectionError)

        service = service or (TAGGING if api == "GetResources" else "cloudwatch")
        method = getattr(self.client(region, service), _snake(api))
        attempt, attempts, refused = 0, self.max_attempts, 0  # refused: connect failures in a row; after an answer (a
        # 503 of an endpoint starting up) the call goes on up to its usual attempts, counted from its first
        while attempt < attempts:
            attempt += 1
            self.deadline.check(what)
            self.pacer.wait(region, api)
            retry_after, why = None, None
            try:
                response = self.deadline.run(lambda: method(**kwargs), what, on_start=lambda: sent.append(True))
                problem = response.get(_NOT_AN_ANSWER) if api in CHECKED else None  # checked raw, once
                problem = problem or _unanswered(api, kwargs, response)
                if problem is None:
                    return response
                if api in WRITES and not response.get(_REFUSED):  # a 2xx that is neither the write's answer nor
                    lost.append(True)  # an error document: the request reached CloudWatch and may have been made
                failure = (f"CloudWatch answered {api} in {region} with something that is not an API answer "
                           f"({problem})", answer_hint(self.endpoint_name))
            except NoCredentialsError:  # nothing remote failed: a setting is missing
                raise GpudashError("no AWS credentials found", where=what,
                                   hint="set AWS_PROFILE, or the standard AWS environment variables, or an "
                                        "instance role") from None
            except NoRegionError:
                raise GpudashError("no AWS Region", where=what, hint="set AWS_REGION") from None
            except ClientError as exc:
                error = exc.response.get("Error", {})
                code, message = str(error.get("Code", "?")), error.get("Message", "")
                if code in NOT_FOUND_CODES.get(api, ()):
                    # after an attempt whose answer was lost, that attempt may be why it is not found (a delete
                    # of gpudash's own that landed): the caller tells gone from deleted by someone else with this
                    exc.after_lost = bool(lost)
                    raise
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
                failure = (f"CloudWatch {api} failed in {region}: {code}: {message}".rstrip(": "), _hint(api, code))
                if code == str(status):  # no AWS error document: botocore names the error by its status
                    failure = (f"CloudWatch answered {api} in {region} with something that is not an API answer "
                               f"({_not_aws(exc.response, status, message)})", answer_hint(self.endpoint_name))
                    if api in WRITES:  # a proxy's redirect or page, perhaps after passing the request on: CloudWatch
                        lost.append(True)  # may have made the write, and its own answer is lost (not retried: the
                        # same page would answer; the caller reads the object back)
                if not (code in RETRYABLE_CODES or status >= 500 or status == 429):
                    refused = RemoteError(failure[0], where=what, hint=failure[1])
                    refused.code = code  # the API's error code: what a caller tells refusals apart by
                    raise refused from None
                if status >= 500:  # a gateway's answer (CloudWatch's own was lost or late), or CloudWatch's own
                    lost.append(True)  # failure (InternalFailure): the request reached it, which may have made it
                headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
                retry_after = self.deadline.retry_after(headers.get("retry-after"), what)
            except (BotoConnectionError, HTTPClientError) as exc:
                # could not connect: nothing was sent; anything else (reset, cut short, read timeout) may have
                # reached CloudWatch, which may have done what it asked
                # (a TLS error is not among them: urllib3 reports one while reading the answer, after the
                # whole request went out, as it reports a failed handshake)
                if not isinstance(exc, (EndpointConnectionError, ConnectTimeoutError, ProxyConnectionError)):
                    lost.append(True)
                elif sent:
                    sent.pop()
                why = connect_failure(exc)
                failure = (f"CloudWatch {api} failed in {region}: {exc}" + (f" ({why})" if why else ""),
                           reach_hint(self.endpoint_name))
            except BotoCoreError as exc:
                raise RemoteError(f"CloudWatch {api} failed in {region}: {exc}", where=what,
                                  hint=reach_hint(self.endpoint_name)) from None
            except RecursionError:  # an error answer botocore parses itself, nested deeper than its parser follows
                if api in WRITES:  # (it reached something in front of CloudWatch, or CloudWatch: it may have made it)
                    lost.append(True)
                failure = (f"CloudWatch answered {api} in {region} with something that is not an API answer (JSON "
                           "nested too deeply to read)", answer_hint(self.endpoint_name))
            refused = refused + 1 if why else 0
            if attempt >= attempts or (why and refused > RETRIES_AFTER[why]):
                break
            delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
            self.local.backoffs = self.backoffs() + 1
            self.deadline.pause(max(delay, retry_after or 0.0), what)
            if before_retry is not None:
                self.pacer.ready(region, api)  # the resend's turn first: no wait between the look and the resend
                if not before_retry():
                    return {LOOKED: bool(lost)}
        raise RemoteError(f"{failure[0]} (after {attempt} attempt{'s' if attempt > 1 else ''})", where=what,
                          hint=failure[1])

    # --- reads gpudash makes, every page -------------------------------------------------------

    def dashboard_body(self, region: str, name: str) -> dict[str, Any] | None:
        """A dashboard's body as a JSON object; None when there is no such dashboard."""
        from botocore.exceptions import ClientError

        what = f"CloudWatch dashboard {name}"
        try:
            answer = self.call(region, "GetDashboard", what, DashboardName=name)
        except ClientError:  # ResourceNotFound only: every other error is a RemoteError
            return None
        named = answer.get("DashboardName")
        if named != name:  # another dashboard's body (a cache or proxy mixing answers), or one that names none
            # (CloudWatch names the dashboard in every answer): nothing shows it is this one
            raise RemoteError(f"CloudWatch answered GetDashboard in {region} with something that is not an API answer "
                              f"(asked for the dashboard {name}, it names {'none' if named is None else repr(named)})",
                              where=what, hint=answer_hint(self.endpoint_name))
        body = json_value(answer["DashboardBody"])
        if not isinstance(body, dict):
            raise RemoteError(f"CloudWatch answered GetDashboard in {region} with a body that is not a JSON object",
                              where=what, hint=answer_hint(self.endpoint_name))
        if _names_dashboard(answer.get("DashboardArn"), name):  # (one that does not: dashboard_tags asks again)
            self.dashboard_arns[name] = answer["DashboardArn"]
        return body

    def dashboard_tags(self, region: str, name: str) -> list[dict[str, str]] | None:
        """A dashboard's tags (ListTagsForResource on the ARN a GetDashboard answer gave it); None when there is no
        such dashboard (deleted since it was read). A dashboard takes tags (TagResource) as an alarm does, and its
        delete takes them with it; gpudash writes none. An answer without the dashboard's ARN, or one naming another
        dashboard, is not an API answer: its tags are not known to be none."""
        from botocore.exceptions import ClientError

        what = f"CloudWatch dashboard {name}"
        arn = self.dashboard_arns.get(name)
        if arn is None:
            try:
                arn = self.call(region, "GetDashboard", what, DashboardName=name).get("DashboardArn")
            except ClientError:  # ResourceNotFound only
                return None
            if not _names_dashboard(arn, name):
                raise RemoteError(f"CloudWatch answered GetDashboard in {region} with something that is not an API "
                                  f"answer (asked for the dashboard {name}, its ARN is "
                                  f"{'missing' if arn is None else repr(arn)})", where=what,
                                  hint=answer_hint(self.endpoint_name))
            self.dashboard_arns[name] = arn
        try:
            return self.call(region, "ListTagsForResource", what, ResourceARN=arn)["Tags"]
        except ClientError:  # its not-found code only (NOT_FOUND_CODES): every other error is a RemoteError
            return None

    def dashboard_names(self, region: str, prefix: str) -> list[str]:
        """Names of the dashboards whose name starts with `prefix` ("": every dashboard of the account), every page."""
        return list(self.dashboard_stamps(region, prefix))

    def dashboard_stamps(self, region: str, prefix: str) -> dict[str, tuple[Any, int] | None]:
        """The dashboards whose name starts with `prefix` ("": every dashboard of the account), every page, each with
        its listed last change (LastModified and Size): a body read after this listing is the body still while a
        later listing gives the same stamp. None where the entry gives no such stamp, or one too near the listing's
        answer to tell a later change by (SETTLED): it is then read again each time."""
        what = f"CloudWatch dashboards {prefix}* in {region}"
        listing, token = _Listing("ListDashboards", region, what, self.endpoint_name), None
        stamps: dict[str, tuple[Any, int] | None] = {}
        while True:
            kwargs = {**({"DashboardNamePrefix": prefix} if prefix else {}), **({"NextToken": token} if token else {})}
            page = self.call(region, "ListDashboards", what, **kwargs)  # entries checked to have a name
            token = listing.next(page.get("NextToken"), [entry["DashboardName"] for entry in page["DashboardEntries"]],
                                 lambda name: name.startswith(prefix), f"a name that does not start with {prefix!r}")
            answered = _answered_at(page)
            stamps.update((entry["DashboardName"], _stamp(entry, answered)) for entry in page["DashboardEntries"])
            if not token:
                return {name: stamps[name] for name in listing.items}

    def metric_alarms(self, region: str, *, prefix: str | None = None,
                      names: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """Alarms by name prefix, or by names (at most BATCH), every page: the metric alarms, and the alarms of the
        other kinds (ALARM_TYPES), each of those marked with its kind (KIND): a name one holds is taken
        (`other_kind`)."""
        selector = {"AlarmNamePrefix": prefix} if prefix is not None else {"AlarmNames": names}
        what = f"CloudWatch alarms {prefix}* in {region}" if prefix is not None else f"CloudWatch alarms in {region}"
        asked = (lambda name: name.startswith(prefix)) if prefix is not None else set(names or ()).__contains__
        unasked = f"a name that does not start with {prefix!r}" if prefix is not None else "a name it was not asked for"
        return self._alarms(region, selector, what, asked, unasked)

    def composite_alarms(self, region: str) -> dict[str, dict[str, Any]]:
        """Every composite alarm in `region`, whatever its name, every page: the alarms whose rules (AlarmRule) may
        name an alarm gpudash wrote, which CloudWatch then does not delete (`composite_rules.parents`)."""
        return self._alarms(region, {}, f"CloudWatch composite alarms in {region}", lambda name: True, "",
                            kinds=["CompositeAlarm"])

    def _alarms(self, region: str, selector: dict[str, Any], what: str, asked: Callable[[str], bool], unasked: str,
                kinds: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """DescribeAlarms by `selector`, every page, asking for `kinds` (ALARM_TYPES where CloudWatch takes them)."""
        alarms: dict[str, dict[str, Any]] = {}
        listing, token = _Listing("DescribeAlarms", region, what, self.endpoint_name), None
        while True:
            kwargs = {**selector, "AlarmTypes": kinds or self._alarm_types(region), "MaxRecords": BATCH}
            if token:
                kwargs["NextToken"] = token
            try:
                page = self.call(region, "DescribeAlarms", what, **kwargs)
            except RemoteError as exc:
                if not _log_alarms_refused(exc, kwargs["AlarmTypes"]):
                    raise
                self.without_log_alarms.add(region)
                self.note(f"CloudWatch in {region} refuses AlarmTypes LogAlarm ({exc.code}): it has no log alarms, "
                          "so none can hold an alarm's name there; its alarms are read as metric and composite alarms")
                continue
            others = [{**alarm, KIND: kind} for key, kind in OTHER_KINDS for alarm in page.get(key) or ()]
            listed = page["MetricAlarms"] + others  # one name twice (of two kinds) is no answer: `listing.next`
            token = listing.next(page.get("NextToken"), [a["AlarmName"] for a in listed], asked, unasked)
            _arns_name_their_alarms(listed, region, what, self.endpoint_name)
            for index, members in page.get(_UNMODELLED_ON_PAGE, {}).items():
                page["MetricAlarms"][index][UNMODELLED] = members
            alarms.update({a["AlarmName"]: a for a in listed})
            if not token:
                return alarms

    def _alarm_types(self, region: str) -> list[str]:
        """ALARM_TYPES, without LogAlarm where CloudWatch refused it (`_log_alarms_refused`)."""
        with self.lock:
            refused = region in self.without_log_alarms
        return [kind for kind in ALARM_TYPES if not (refused and kind == "LogAlarm")]

    def owned_alarm_tags(self, region: str) -> dict[str, list[dict[str, str]]] | None:
        """ARN -> tags of every alarm carrying the ownership tag in `region`; None when GetResources is denied."""
        filters = [{"Key": ALARM_OWNER_TAG["Key"], "Values": [ALARM_OWNER_TAG["Value"]]}]
        return self._tagged(region, {"ResourceTypeFilters": ["cloudwatch:alarm"], "TagFilters": filters,
                                     "ResourcesPerPage": BATCH})

    def tags_of(self, region: str, arns: list[str]) -> dict[str, list[dict[str, str]]] | None:
        """ARN -> tags of these alarms (at most BATCH) in one GetResources call (ResourceARNList); None when
        GetResources is denied. An alarm it does not list (one it does not know, or whose tags were all removed)
        is not in the answer: the caller asks such an alarm alone."""
        asked = set(arns)
        found = self._tagged(region, {"ResourceARNList": list(arns)})
        return None if found is None else {arn: tags for arn, tags in found.items() if arn in asked}

    def _tagged(self, region: str, selector: dict[str, Any]) -> dict[str, list[dict[str, str]]] | None:
        """ARN -> tags of what GetResources lists with `selector`, every page; None when it is denied, when it gives
        EMPTY_PAGES empty pages in a row, each with a new token (its documentation says a page may hold fewer results
        than allowed and only the absence of a token ends it, so such a listing may be a slow index as well as a
        broken one), or when a page gives again what an earlier one gave (reported of AWS: the results again after an
        empty page, with new tokens, without end): it is not read on, nor believed, and the caller reads each alarm's
        own tags. A next page is asked with its token alone (GetResources takes no ResourceARNList beside a token)."""
        found: dict[str, list[dict[str, str]]] = {}
        token, what = "", f"tags of CloudWatch alarms in {region}"
        listing = _Listing("GetResources", region, what, self.endpoint_name)
        if "ResourceARNList" in selector:
            asked, unasked = set(selector["ResourceARNList"]).__contains__, "a resource it was not asked for"
        else:  # listed by the ownership tag: each resource listed carries it
            asked = lambda arn: ALARM_OWNER_TAG in page_tags[arn]  # noqa: E731
            unasked = f"a resource without the {ALARM_OWNER_TAG['Key']}={ALARM_OWNER_TAG['Value']} tag it was asked by"
        while True:
            kwargs = {"PaginationToken": token} if token and "ResourceARNList" in selector else {
                **selector, **({"PaginationToken": token} if token else {})}
            try:
                page = self.call(region, "GetResources", what, **kwargs)
            except RemoteError as exc:
                if getattr(exc, "code", None) not in DENIED_CODES:
                    raise
                self.note(f"tag:GetResources is not allowed in {region}: reading alarm tags one alarm at a "
                          "time (slow); grant tag:GetResources to read them in bulk")
                return None
            page_tags = {item["ResourceARN"]: item["Tags"] for item in page["ResourceTagMappingList"]}
            try:
                token = listing.next(page.get("PaginationToken"),
                                     [item["ResourceARN"] for item in page["ResourceTagMappingList"]], asked,
                                     unasked) or ""
            except EmptyPages:
                self.note(f"tag:GetResources answered {EMPTY_PAGES} pages in a row without a resource in {region}, "
                          "each with a new token: not read on; reading alarm tags one alarm at a time (slow)")
                return None
            except Repeating as exc:  # reported of AWS: results again after an empty page, with new tokens, no end
                self.note(f"tag:GetResources gave in {region} on a later page what an earlier page gave ({exc.said}), "
                          "as AWS has been reported to: not read on nor believed; reading alarm tags one alarm at a "
                          "time (slow)")
                return None
            found.update(page_tags)
            if not token:
                return found

    def alarm_tags(self, region: str, alarm: dict[str, Any]) -> list[dict[str, str]]:
        """One alarm's tags (ListTagsForResource); none for an alarm that no longer exists (deleted since
        it was listed: its fields, read next, show it gone)."""
        from botocore.exceptions import ClientError

        try:
            return self.call(region, "ListTagsForResource", f"alarm {alarm['AlarmName']}",
                             ResourceARN=alarm["AlarmArn"])["Tags"]
        except ClientError:  # its not-found code only (NOT_FOUND_CODES): every other error is a RemoteError
            return []


def _unanswered(api: str, asked: dict[str, Any], response: dict[str, Any]) -> str | None:
    """The list an answer to a request that asked for it lacks (OPTIONAL_LISTS): a DescribeAlarms asking for log
    alarms answered without LogAlarms."""
    if api == "DescribeAlarms" and "LogAlarm" in asked.get("AlarmTypes", ()) and response.get(_LOG_ALARMS) is None:
        return "no LogAlarms"
    return None


def other_kind(alarm: dict[str, Any] | None) -> str | None:
    """What the kind of this alarm is called where `metric_alarms` listed it as an alarm of another kind than a metric
    alarm (a composite or log alarm), else None."""
    return alarm.get(KIND) if alarm else None


def _log_alarms_refused(exc: RemoteError, asked: list[str]) -> bool:
    """Whether CloudWatch refused a DescribeAlarms that asked for log alarms because LogAlarm is outside the values it
    takes (a CloudWatch without log alarms: a partition or Region they have not reached, an older stand-in): an enum
    refusal of that value whose set leaves it out, or words saying the value is not valid. Such a CloudWatch holds
    none, so no log alarm can hold a name there: read without the type, nothing is missed."""
    if not ("LogAlarm" in asked and getattr(exc, "code", None) in ("ValidationError", "InvalidParameterValue")):
        return False
    # a refusal for another reason that names LogAlarm (the type taken, the request not) is no evidence: log alarms
    # would go unread where they exist, and a name one holds read as free
    listed = _ENUM_SET.search(exc.what)
    if listed is not None:  # "Value 'LogAlarm' at 'alarmTypes.3.member' ... enum value set: [CompositeAlarm, ...]"
        return "LogAlarm" not in listed[1] and _REFUSED_VALUE.search(exc.what) is not None
    return _NOT_A_VALUE.search(exc.what) is not None


_ENUM_SET = re.compile(r"enum value set:\s*\[([^\]]*)\]")
_REFUSED_VALUE = re.compile(r"Value '\[?[^']*\bLogAlarm\b")
_NOT_A_VALUE = re.compile(r"\bLogAlarm\b[^.;]*\b(?:is not (?:a )?valid|is invalid|unknown|not supported|unsupported)\b"
                          r"|\b(?:invalid|unknown|unsupported) (?:value|alarm ?type)s?\b[^.;]*\bLogAlarm\b", re.I)


def answer_lost(exc: BaseException) -> bool:
    """Whether this failure of a write came after an attempt of it reached CloudWatch and every answer was lost:
    it may have happened, which only reading the object back can settle."""
    return bool(getattr(exc, "write_lost", False)) and not isinstance(exc, DeadlineExceeded)


def for_verify(options) -> CloudWatch:
    """The client `verify` reads with: one attempt per call, sockets bounded by the run's deadline."""
    from botocore.config import Config

    cloudwatch = CloudWatch(profile=options.profile, endpoint_url=options.endpoint_url, max_attempts=1,
                            endpoint_name=options.endpoint_name)
    timeout = options.socket_timeout()
    cloudwatch.config = cloudwatch.config.merge(Config(connect_timeout=timeout, read_timeout=timeout))
    return cloudwatch


def list_metrics_page(cloudwatch: CloudWatch, region: str, namespace: str, source: str, kwargs: dict) -> object:
    """One ListMetrics page. botocore decodes the answer; where it cannot (a string where its model has a
    list), its parser stops with a Python error: that answer is odd, not a bug in gpudash."""
    from .answer import OddAnswer

    try:
        page = cloudwatch.call(region, "ListMetrics", f"CloudWatch {namespace}", **kwargs)
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        raise OddAnswer(source, "", exc, "a ListMetrics answer",
                        said=f"not a ListMetrics answer (botocore's parser stopped: {type(exc).__name__})") from None
    if _NOT_AN_ANSWER in page:
        raise OddAnswer(source, "", None, "a ListMetrics answer",
                        said=f"not a ListMetrics answer ({page[_NOT_AN_ANSWER]})")
    return page


def _arns_name_their_alarms(listed: list[dict[str, Any]], region: str, what: str, endpoint: str) -> None:
    """Each alarm's AlarmArn names it and the Region asked (arn:<partition>:cloudwatch:<region>:<account>:alarm:<name>):
    its tags are read, written and judged by that ARN, so an alarm listed with another alarm's ARN would be judged
    (and pruned) on that alarm's tags. One that does not is not an answer."""
    for alarm in listed:
        arn, name = alarm["AlarmArn"], alarm["AlarmName"]
        parts = arn.split(":", 6)
        if len(parts) != 7 or parts[0] != "arn" or parts[2:4] != ["cloudwatch", region] or parts[5:] != ["alarm", name]:
            raise RemoteError(f"CloudWatch answered DescribeAlarms in {region} with something that is not an API "
                              f"answer (the alarm {name} listed with an AlarmArn that does not name it in {region}: "
                              f"{arn})", where=what, hint=answer_hint(endpoint))


EMPTY_PAGES = 20  # pages in a row a listing may answer with no item and a next-page token before it is not believed


class EmptyPages(RemoteError):
    """A listing that gave EMPTY_PAGES empty pages in a row, each with a new next-page token."""


class Repeating(RemoteError):
    """A listing that gave an item or a next-page token an earlier page gave: it cannot be read to its end."""


# How long before a listing's answer a dashboard's LastModified must lie for its stamp to tell a later change. The API
# reference says LastModified is in milliseconds, but the AWS CLI's example of list-dashboards shows whole seconds
# (2024-10-11T18:40:11+00:00: the CLI prints a time's fraction when it has one), and the answer's Date header is in
# whole seconds: a dashboard saved in the second its body is read could be saved again in that second, in a body of
# the same size, after the read, and keep its stamp. One second for each truncation: a change after the listing is
# then stamped in a later second than the one listed.
SETTLED = datetime.timedelta(seconds=2)


def _answered_at(page: dict[str, Any]) -> datetime.datetime | None:
    """When CloudWatch answered a page (its Date header, in whole seconds); None where it gives none that parses."""
    return http_date(((page.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}).get("date"))


def _stamp(entry: dict[str, Any], answered: datetime.datetime | None) -> tuple[Any, int] | None:
    """A ListDashboards entry's last change: its LastModified (a time) and Size (an integer); None where it gives no
    such pair, or the page no time it was answered at, or the change lies within SETTLED of that time (nothing then
    shows the body unchanged)."""
    modified, size = entry.get("LastModified"), entry.get("Size")
    if not isinstance(modified, datetime.datetime) or not isinstance(size, int) or isinstance(size, bool):
        return None
    if answered is None or modified.tzinfo is None or modified + SETTLED > answered:
        return None
    return modified, size


class _Listing:
    """One paginated listing: the tokens and items its pages gave so far. A listing is not an answer (a failure,
    never a short or endless list) when a page gives a token it gave before or one that is not a string (it would
    go round until the deadline), lists an item an earlier page listed (a server that ignores the token and answers
    the first page again with a new one), lists one the call did not ask for (outside the prefix, names or tag
    asked by: a server that ignores the filter), or gives EMPTY_PAGES empty pages in a row, each with a new token.
    A listing that keeps giving new items with new tokens ends only at the deadline (nothing tells it from a large
    account)."""

    def __init__(self, api: str, region: str, what: str, endpoint: str = ENDPOINT_VARIABLE):
        self.api, self.region, self.what, self.endpoint = api, region, what, endpoint
        self.tokens: set[str] = set()
        self.items: list[str] = []
        self.listed: set[str] = set()
        self.empty = 0

    def next(self, token: Any, keys: list[str], asked: Callable[[str], bool], unasked: str) -> str | None:
        """The next page's token (None: the last page), after the page listing `keys`."""
        self.empty = 0 if keys else self.empty + 1
        said, kind = None, RemoteError
        if token and not isinstance(token, str):
            said = "a next-page token that is not a string"
        elif token and token in self.tokens:
            said, kind = "a next-page token it gave before", Repeating
        elif token and self.empty >= EMPTY_PAGES:
            said, kind = f"{EMPTY_PAGES} pages in a row without an item, each with a new next-page token", EmptyPages
        said = said or next((f"{unasked} ({key})" for key in keys if not asked(key)), None)
        if said is None and (repeated := next((key for key in keys if key in self.listed), None)):
            said, kind = f"an item an earlier page listed ({repeated})", Repeating
        if said is None and len(set(keys)) < len(keys):
            said = "an item twice on one page"
        if said is not None:
            error = kind(f"CloudWatch answered {self.api} in {self.region} with {said}: the listing is not an "
                         "answer", where=self.what, hint=answer_hint(self.endpoint))
            error.said = said
            raise error
        self.items.extend(keys)
        self.listed.update(keys)
        if not token:
            return None
        self.tokens.add(token)
        return token


def _as_error_document(response_dict: dict[str, Any], body: bytes) -> None:
    """An error answer's body as botocore's JSON parser can read it. It reads a body that is not JSON as the message of
    an error named by the status; JSON that is not an object (null, a list) made it raise an AttributeError, and an
    object whose __type or message is not a text a TypeError, outside any error of its own. Such a body is no AWS
    error document either: handed over as the message of an error named by the status, as text that is not JSON is."""
    found = json_value(body) if body else {}
    if found is NOT_JSON or (isinstance(found, dict) and all(
            found.get(key) is None or isinstance(found[key], str) for key in ("__type", "message", "Message"))):
        return
    response_dict["body"] = json.dumps({"message": body.decode("utf-8", "replace")}).encode()


def _not_aws(response: dict[str, Any], status: int, body: str) -> str:
    """An error answer that is no AWS error document, as said: its status, where a redirect points (without its query,
    which may carry a sign-in's state), its content type and the start of its body, secrets masked."""
    from urllib.parse import urlsplit

    headers = response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    location = urlsplit(headers.get("location") or "")
    where = (f" redirecting to {redact.text(location._replace(query='', fragment='').geturl())}"
             if 300 <= status < 400 and location.path + location.netloc else "")
    excerpt = redact.text(body)[:40]
    return f"HTTP {status}{where}, {headers.get('content-type') or 'no content type'}: {excerpt!r}"


def _snake(api: str) -> str:
    return "_".join(part.lower() for part in re.findall(r"[A-Z][a-z]*", api))


def _hint(api: str, code: str) -> str:
    permission = ("tag:" if api == "GetResources" else "cloudwatch:") + api
    if api == "DescribeAlarms":  # asked for composite alarms too (ALARM_TYPES), which it lists to this scope alone
        permission += (' on Resource "*" (CloudWatch lists composite alarms only to a permission of that scope, and '
                       "gpudash reads them so as never to write over one)")
    hints = {**dict.fromkeys(DENIED_CODES, f"grant {permission} to the credentials in use"),
             "Throttling": "rate exceeded after retries; run again, publishing converges",
             "LimitExceeded": "a CloudWatch quota is reached; ask for an increase or prune old alarms"}
    return hints.get(code, "run `gpudash plan` and check the request; run again if the fault was passing")


def _check_body(response_dict: dict[str, Any], customized_response_dict: dict[str, Any], operation_model=None,
                **_) -> None:
    """Check the raw answer before botocore reads it: botocore takes a body that is not JSON for
    `{"message": body}` and a mapping where a list is due for an empty list. Mark what is not an
    answer (and hand botocore `{}` so that it does not trip over it): the one check of an answer,
    which `call` reads back as the mark."""
    status, body = response_dict.get("status_code", 0), response_dict.get("body") or b""
    name = getattr(operation_model, "name", "")
    if status >= 300:
        _as_error_document(response_dict, body)
        return
    if not 200 <= status < 300 or not (body or name in REQUIRED):
        return
    output = getattr(operation_model, "output_shape", None)
    unknown: dict[str, Any] | None = {} if name == "DescribeAlarms" else None  # botocore's parser drops them
    parsed = json_value(body)
    if parsed is NOT_JSON:
        parsed = None
        # the excerpt is cut from the body with its secrets masked: a secret cut in two is masked nowhere
        problem = f"not JSON: {redact.text(body.decode('utf-8', 'replace'))[:40]!r}" if name in CHECKED else None
    else:
        problem = _invalid(name, parsed) if name in CHECKED else None
        if name in WRITES and not problem:
            problem = _not_a_write_answer(output, parsed)
        if not problem and output is not None:  # the calls publishing makes: every member as the model has it
            problem = (_not_as_modelled(output, parsed, "", unknown=unknown) if name in CHECKED
                       else _not_a_list(output, parsed, ""))
    if problem:
        customized_response_dict[_NOT_AN_ANSWER] = problem
        customized_response_dict[_REFUSED] = _error_code(parsed) is not None
        response_dict["body"] = b"{}"
        return
    if name == "DescribeAlarms":  # (None: the answer holds no LogAlarms)
        customized_response_dict[_LOG_ALARMS] = parsed.get("LogAlarms")
    if unknown and (on_page := _by_alarm(unknown)):
        customized_response_dict[_UNMODELLED_ON_PAGE] = on_page


_ALARM_MEMBER = re.compile(r"MetricAlarms\[(\d+)\]\.(.+)", re.DOTALL)  # a path in a DescribeAlarms answer


def _by_alarm(unknown: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The members of a DescribeAlarms answer its model lacks (by path, as `_not_as_modelled` found them) that lie in
    a metric alarm, by the alarm's index on the page, each by its path in the alarm ("FutureSetting",
    "Metrics[0].FutureSetting")."""
    found: dict[int, dict[str, Any]] = {}
    for path, value in unknown.items():
        if match := _ALARM_MEMBER.fullmatch(path):
            found.setdefault(int(match[1]), {})[match[2]] = value
    return found


def _not_a_list(shape: Any, value: Any, path: str) -> str | None:
    """Where the answer has something else than a list where the API's model has one: botocore reads a
    mapping there as its keys (`{}` as an empty list) and a string as its characters. Only the members
    under which the model has a list are visited."""
    if value is None:
        return None
    kind = shape.type_name
    if kind == "list":
        if not isinstance(value, list):
            return f"{path or 'the answer'} is not a list"
        if _holds_a_list(shape.member):
            for index, item in enumerate(value):
                problem = _not_a_list(shape.member, item, f"{path}[{index}]")
                if problem:
                    return problem
    elif kind == "structure" and isinstance(value, dict):
        for key, member in _members_holding_a_list(shape):
            if key in value:
                problem = _not_a_list(member, value[key], f"{path}.{key}" if path else key)
                if problem:
                    return problem
    return None


@functools.lru_cache(maxsize=None)
def _members_holding_a_list(shape: Any) -> tuple[tuple[str, Any], ...]:
    """A structure's members (their key in an answer, their shape) under which the model has a list: the
    only ones `_not_a_list` must read (a DescribeAlarms answer's scalars are most of its members)."""
    return tuple((member.serialization.get("name", name), member) for name, member in shape.members.items()
                 if _holds_a_list(member))


@functools.lru_cache(maxsize=None)
def _holds_a_list(shape: Any, _through: frozenset = frozenset()) -> bool:
    """Whether the shape is a list or a structure with a list somewhere among its members (maps are not
    read by `_not_a_list`). A structure met again on its own path adds nothing its first visit does not."""
    if shape.type_name == "list":
        return True
    if shape.type_name != "structure" or id(shape) in _through:
        return False
    return any(_holds_a_list(member, _through | {id(shape)}) for member in shape.members.values())


_SCALARS: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,), "integer": (int,), "long": (int,),
                                        "double": (int, float), "float": (int, float), "timestamp": (int, float, str)}


def _not_as_modelled(shape: Any, value: Any, path: str, type_only: bool = False,
                     unknown: dict[str, Any] | None = None) -> str | None:
    """Where an answer is not as the API's model has it: a member of another type (a string where the model has an
    integer, a boolean, a list: botocore's JSON parser passes any value through), a structure without a member
    the model requires (a dimension without its Name, a tag without its Value), or a scalar outside the API's values
    for it (`_domain`), except in a member of TYPE_ONLY (`type_only`: the whole of it). Members the model does not
    know are left alone (a newer API may add them), each put in `unknown` by its path with its value as answered
    (below the top: a member the answer adds beside its lists is no object's); a null is an absent member, as
    botocore reads it."""
    kind, where = shape.type_name, path or "the answer"
    if kind == "structure":
        if not isinstance(value, dict):
            return f"{where} is not an object"
        members, required = _modelled_members(shape)
        for key in required:
            if value.get(key) is None:
                return f"{where} has no {key}"
        for key, item in value.items():
            if item is None:
                continue
            member = members.get(key)
            if member is not None:
                problem = _member_not_as_modelled(member, item, f"{path}.{key}" if path else key,
                                                  type_only or key in TYPE_ONLY, unknown)
                if problem:
                    return problem
            elif unknown is not None and path:
                unknown[f"{path}.{key}"] = item
    elif kind == "list":
        if not isinstance(value, list):
            return f"{where} is not a list"
        for index, item in enumerate(value):
            if item is not None:
                problem = _member_not_as_modelled(shape.member, item, f"{path}[{index}]", type_only, unknown)
                if problem:
                    return problem
    elif kind == "map":
        if not isinstance(value, dict):
            return f"{where} is not an object"
        for key, item in value.items():
            if item is not None:
                problem = _member_not_as_modelled(shape.value, item, f"{path}.{key}", type_only, unknown)
                if problem:
                    return problem
    elif kind in _SCALARS:
        return f"{where} is not a{'n' if kind[0] in 'aeiou' else ''} {kind}"
    return None


def _member_not_as_modelled(shape: Any, value: Any, path: str, type_only: bool = False,
                            unknown: dict[str, Any] | None = None) -> str | None:
    """Where a member (not None) is not as the model has it: a scalar of its type outside the API's values for it
    (`_domain`; not with `type_only`), anything else as `_not_as_modelled` reads it (`unknown` with it)."""
    if not _scalar_as_modelled(shape.type_name, value):
        return _not_as_modelled(shape, value, path, type_only, unknown)
    if shape.type_name == "timestamp" and not _reads_as_time(value):  # whatever the member: botocore reads them all
        return f"{path} is not a time"
    domain = None if type_only else _domain(shape)
    return None if domain is None else _outside(domain, value, path)


# Members no verdict of gpudash reads a value of (ownership.NOT_COMPARED: an alarm's state and evaluation state, when
# they changed, a PromQL alarm's criteria and interval; the composite and log alarms DescribeAlarms may list beside the
# metric alarms gpudash asks for), whose values CloudWatch may extend: checked for their type alone, each member under
# them too. A value the installed botocore does not know is there a newer API's, which must not fail every plan:
# boto3 1.26's model has PARTIAL_DATA alone of EvaluationState's values, and CloudWatch lists EVALUATION_ERROR (an alarm
# set up wrong) and EVALUATION_FAILURE too now. Every other member's domain is checked (a comparison, a statistic, a
# unit, a period, a threshold: the fields an alarm is compared by): a value gpudash judges an alarm by, outside it,
# would be read as an edit, and `apply --force` would rewrite the alarm from an answer CloudWatch cannot give.
TYPE_ONLY = frozenset((*NOT_COMPARED, "CompositeAlarms", "LogAlarms"))


# Values the API reference names for a member that botocore's model leaves an open string: CloudWatch takes no other
# (PutMetricAlarm: "Valid Values: breaching | notBreaching | ignore | missing"), so it lists no other.
DOCUMENTED_VALUES = {"TreatMissingData": ("breaching", "notBreaching", "ignore", "missing")}


@functools.lru_cache(maxsize=None)
def _domain(shape: Any) -> tuple[tuple[str, ...], str, Any, Any, bool] | None:
    """The values of a scalar shape the API has, from its model (an enum; an integer's min and max) or
    DOCUMENTED_VALUES, and who names them; with whether it must be a finite number (a double or float: CloudWatch
    takes no NaN or infinity as a number); None where any value of its type is one."""
    from botocore import __version__ as botocore_version

    values, source = tuple(getattr(shape, "enum", None) or ()), f"as botocore {botocore_version} knows them"
    if not values and shape.name in DOCUMENTED_VALUES:
        values, source = DOCUMENTED_VALUES[shape.name], "as the API reference names them"
    low, high = (shape.metadata.get("min"), shape.metadata.get("max")) if shape.type_name in ("integer", "long") \
        else (None, None)
    finite = shape.type_name in ("double", "float")
    return (values, source, low, high, finite) if values or low is not None or high is not None or finite else None


def _outside(domain: tuple[tuple[str, ...], str, Any, Any, bool], value: Any, path: str) -> str | None:
    """Why `value` (of its member's type) is not one of the values `domain` (see `_domain`) allows, or None. A value
    the installed botocore's model does not know may be one a newer API added: the message names botocore's version,
    so that updating it is seen as the way out if CloudWatch did."""
    values, source, low, high, finite = domain
    if values and value not in values:
        return f"{path} is {value!r}, none of the values the API has for it ({source})"
    if low is not None and value < low or high is not None and value > high:
        bounds = f"at least {low}" if high is None else f"{low} to {high}" if low is not None else f"at most {high}"
        return f"{path} is {value}, where the API has {bounds}"
    if finite and not math.isfinite(value):
        return f"{path} is {value}, not a finite number"
    return None


def _reads_as_time(value: Any) -> bool:
    """Whether botocore's parser reads the timestamp `value` (a text or a number) as a time: one it cannot ("x", 1e20,
    NaN) makes it raise a ValueError or a RuntimeError while it reads the answer, outside any error of its own."""
    from botocore.utils import parse_timestamp

    try:
        parse_timestamp(value)
    except (ValueError, TypeError, OverflowError, OSError, RuntimeError):
        return False
    return True


def _scalar_as_modelled(kind: str, value: Any) -> bool:
    """Whether `value` is a scalar of the model's type `kind` (False for a container: it is read member by member)."""
    types = _SCALARS.get(kind)
    return types is not None and isinstance(value, types) and (kind == "boolean" or not isinstance(value, bool))


@functools.lru_cache(maxsize=None)
def _modelled_members(shape: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A structure's members by their key in an answer, and the keys of those the model requires."""
    members = {member.serialization.get("name", name): (name, member) for name, member in shape.members.items()}
    return ({key: member for key, (_, member) in members.items()},
            tuple(key for key, (name, _) in members.items() if name in shape.required_members))


def _not_a_write_answer(shape: Any, response: Any) -> str | None:
    """Why a 2xx answer to a write is not the write's answer: a write answers its output's members
    (PutDashboard its validation messages, the others nothing). An error document sent with a 2xx status
    (`{"__type": "ThrottlingException", ...}`) is not one, and the write is not known to be done."""
    if not isinstance(response, dict):
        return f"a JSON {type(response).__name__}, not an object"
    members = {member.serialization.get("name", key) for key, member in shape.members.items()} if shape else set()
    unknown = sorted(key for key in response if key not in members)
    if not unknown:
        return None
    error = _error_code(response)
    if error is not None:
        message = response.get("message") or response.get("Message") or ""
        return f"an error, {error.rpartition('#')[2]}: {message}".rstrip(": ")
    return f"{', '.join(unknown[:3])}, which it does not answer"


def _error_code(response: Any) -> str | None:
    """The error an answer is a document of (`{"__type": "ThrottlingException", ...}`), or None."""
    if not isinstance(response, dict):
        return None
    error = response.get("__type") or response.get("code") or response.get("Code")
    return error if isinstance(error, str) else None


# What DescribeAlarms reports of every metric alarm (each: one of these members), beside its name and ARN: its state,
# and what PutMetricAlarm requires of an alarm on a metric or a math expression: a comparison, a number of periods, a
# threshold (or an anomaly band's), a metric (or queries). A PromQL alarm (EvaluationCriteria) has a state alone. An
# alarm listed without one is not CloudWatch's answer (an edit cannot remove them), never "edited in the console".
ALARM_MEMBERS = (("StateValue",), ("ComparisonOperator",), ("EvaluationPeriods",), ("Threshold", "ThresholdMetricId"),
                 ("MetricName", "Metrics"))


def _unreported(alarm: dict[str, Any]) -> str | None:
    """The member(s) of ALARM_MEMBERS this listed alarm lacks ("A or B" where either would do; an empty list of queries
    is none: CloudWatch takes an alarm on queries only with one), or what one of its queries lacks (each is an
    expression or a metric's statistic: CloudWatch takes no query with neither), or None."""
    needed = ALARM_MEMBERS[:1] if alarm.get("EvaluationCriteria") is not None else ALARM_MEMBERS
    missing = next((" or ".join(keys) for keys in needed if all(alarm.get(key) in (None, []) for key in keys)), None)
    queries = alarm.get("Metrics") if isinstance(alarm.get("Metrics"), list) else []
    return missing or next((f"Expression or MetricStat in its query {query.get('Id')}" for query in queries
                            if isinstance(query, dict) and query.get("Expression") is None
                            and query.get("MetricStat") is None), None)


def _repeated_id(alarm: dict[str, Any]) -> str | None:
    """An Id two of the alarm's queries have, or None: an Id names a query's result in the alarm's expressions (and
    ThresholdMetricId), so CloudWatch takes each once (the API reference: unique within a call)."""
    queries = alarm.get("Metrics") if isinstance(alarm.get("Metrics"), list) else []
    ids = [query.get("Id") for query in queries if isinstance(query, dict) and isinstance(query.get("Id"), str)]
    return next((name for index, name in enumerate(ids) if name in ids[:index]), None)


def _invalid(api: str, response: Any) -> str | None:
    """Why `response` is not a valid answer to `api`, or None."""
    if not isinstance(response, dict):
        return f"a JSON {type(response).__name__}, not an object"
    for key, kind in REQUIRED.get(api, {}).items():
        if not isinstance(response.get(key), kind):
            return f"no {key}" if key not in response else f"{key} is not a {kind.__name__}"
    lists = [key for key, kind in REQUIRED.get(api, {}).items() if kind is list]
    for key in [*lists, *(key for key in OPTIONAL_LISTS.get(api, ()) if response.get(key) is not None)]:
        if not isinstance(response[key], list):
            return f"{key} is not a list"
        for item in response[key]:
            if not isinstance(item, dict) or any(not isinstance(item.get(k), str) for k in ITEM_KEYS.get(key, ())):
                return f"an item of {key} without {', '.join(ITEM_KEYS.get(key, ())) or 'its fields'}"
    if api == "DescribeAlarms":
        for alarm in response["MetricAlarms"]:
            if (missing := _unreported(alarm)) is not None:
                return f"the alarm {alarm['AlarmName']} without {missing}, which CloudWatch reports of every such alarm"
            if (repeated := _repeated_id(alarm)) is not None:
                return f"the alarm {alarm['AlarmName']} with two queries of the Id {repeated!r}, where CloudWatch " \
                       "takes an Id once in an alarm"
    if api == "GetResources":
        for item in response["ResourceTagMappingList"]:
            if not isinstance(item.get("Tags"), list):  # asked for by tag: a resource listed without its tags is not
                return "a resource without its Tags"      # an answer (each tag's Key and Value: the model's check)
    return None
