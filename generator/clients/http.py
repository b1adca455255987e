"""Reads over HTTP that end by the run's deadline: every connect and socket read has a timeout, and a
body that arrives too slowly (a server that drips) is abandoned when the deadline passes."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .. import redact
from ..errors import RemoteError
from .options import Options

BODY_LIMIT = 64 * 2**20  # no answer gpudash reads is near this; a larger one is not the API
# What an answer past BODY_LIMIT is said to have done: read no further, failed as an answer cut short
PAST_LIMIT = f"answered more than {BODY_LIMIT // 2**20} MiB"


def joined_within_limit(chunks: Iterable[bytes], past_limit: Callable[[], BaseException]) -> bytes:
    """`chunks` joined, read no further than BODY_LIMIT: past it, the error `past_limit()` makes is raised."""
    parts, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > BODY_LIMIT:
            raise past_limit()
        parts.append(chunk)
    return b"".join(parts)


class SlowAnswer(RemoteError):
    """The deadline passed while the answer was still arriving (`answering`), or before any of it came."""

    def __init__(self, what: str, hint: str | None = None, *, answering: bool = True) -> None:
        super().__init__(what, hint=hint)
        self.answering = answering


def read_body(response: Any, options: Options, what: str) -> bytes:
    """The whole body of a urllib3 response read without preloading, by the deadline."""
    chunks, size = [], 0
    while True:
        if options.remaining() <= 0:
            raise _late(what, options, answering=True)
        chunk = response.read1(65536, decode_content=True)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > BODY_LIMIT:
            raise RemoteError(f"{what} {PAST_LIMIT}", hint="check the URL")
        chunks.append(chunk)


# A connection that could not be made, by why, and how many more attempts each deserves. A name the resolver says
# does not exist (EAI_NONAME) will not exist a few seconds later: not retried. A temporary resolver failure
# (EAI_AGAIN: the DNS server did not answer) and a refused connection (the host answered at once that nothing
# listens: a server restarting, or the wrong port) get one more attempt after the first backoff, no more: 7 to 15 s
# of backoff rarely outlasts a restart, and a publish run again converges. Timeouts, resets and 5xx answers keep
# the clients' full retries, also after a refusal: the budget counts refusals in a row.
NO_SUCH_HOST = "the host name does not resolve"
NAME_LOOKUP_FAILED = "the DNS lookup of the host name failed"
REFUSED = "connection refused"
RETRIES_AFTER = {NO_SUCH_HOST: 0, NAME_LOOKUP_FAILED: 1, REFUSED: 1}


# What `get` imports on its first call: imported by `before_threads` on the thread that starts a pool of threads making
# such calls, so that no two of them import one module at once (one can see it half made: "cannot import name ... from
# partially initialized module"); the idna codec is looked up by the socket layer at each connection.
THREAD_IMPORTS = ("encodings.idna", "requests", "requests.auth", "urllib3.exceptions")


def before_threads() -> None:
    """Import THREAD_IMPORTS, before threads that make requests with `get` start."""
    import importlib

    for name in THREAD_IMPORTS:
        importlib.import_module(name)


def connect_failure(exc: BaseException) -> str | None:
    """NO_SUCH_HOST, NAME_LOOKUP_FAILED or REFUSED when `exc` (requests', urllib3's or botocore's, which wrap the
    socket's error in their own) failed for that reason, else None."""
    import socket

    seen, todo = set(), [exc]
    while todo:
        error = todo.pop()
        if not isinstance(error, BaseException) or id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, socket.gaierror):
            return NAME_LOOKUP_FAILED if error.errno == socket.EAI_AGAIN else NO_SUCH_HOST
        if isinstance(error, ConnectionRefusedError):
            return REFUSED
        wrapped = getattr(error, "kwargs", None)  # botocore: EndpointConnectionError(error=<urllib3's>)
        todo += [error.__cause__, error.__context__, getattr(error, "reason", None), *error.args,
                 wrapped.get("error") if isinstance(wrapped, dict) else None]
    return None


def named_charset(content_type: str | None) -> str | None:
    """The charset a Content-Type names, or None. (requests' `encoding` says ISO-8859-1 for any text/* answer naming
    none, HTTP/1.1's old default; an exporter's text is UTF-8 by the exposition format, so a label value's UTF-8 read
    as Latin-1.)"""
    from email.message import Message

    if not content_type:
        return None
    header = Message()
    header["Content-Type"] = content_type
    return header.get_content_charset()


def decode(body: bytes, charset: str | None) -> str:
    """Text in the charset the answer names; UTF-8 when it names none, or one that does not exist."""
    import codecs

    try:
        codecs.lookup(charset or "utf-8")
    except LookupError:
        charset = None
    return body.decode(charset or "utf-8", errors="replace")


def credentials(token: str | None, basic: tuple[str, str] | None):
    """The requests auth for the credentials the user gave: a bearer token, or basic auth, or none. A session with an
    auth never reads ~/.netrc (or $NETRC): without one, requests puts the netrc entry for the host in the
    Authorization header (over a bearer header), and the server gets a login the user never gave gpudash for it."""
    import requests
    from requests.auth import HTTPBasicAuth

    class Credentials(requests.auth.AuthBase):
        def __call__(self, request):
            if token:
                request.headers["Authorization"] = f"Bearer {token}"
            elif basic:
                HTTPBasicAuth(*basic)(request)
            return request

    return Credentials()


def no_netrc_on_redirect(session):
    """`session.rebuild_auth` without netrc: a redirect keeps the Authorization header only to the same scheme, host
    and port (requests' rule) and never takes one from ~/.netrc, which requests reads at every redirect whatever
    the session's auth."""

    def rebuild_auth(prepared_request, response):
        if "Authorization" in prepared_request.headers and session.should_strip_auth(response.request.url,
                                                                                     prepared_request.url):
            del prepared_request.headers["Authorization"]

    return rebuild_auth


def session(url: str):
    """A requests session for `url`'s server (its user-info becomes basic auth, sent to that host alone; ~/.netrc is
    never read). Reads `get` makes with it share its keep-alive connections: a client that asks one server many
    things in a run (verify's Prometheus checks: 16 queries) pays one connection, not one per read, and the server
    one accept (about a quarter of a small query's CPU on each side). The caller closes it."""
    import requests

    made = requests.Session()
    made.auth = credentials(None, redact.strip(url)[1])
    made.rebuild_auth = no_netrc_on_redirect(made)
    return made


class Sessions:
    """`session`s for one server's URL, one per thread that reads (a requests session is not safe to share between
    threads: preview's queries run in a pool of them), each kept for the thread's later reads; `close` closes all."""

    def __init__(self, url: str) -> None:
        import threading

        self.url = url
        self._made: list = []
        self._lock = threading.Lock()
        self._local = threading.local()

    def own(self):
        """This thread's session, made at its first read."""
        made = getattr(self._local, "session", None)
        if made is None:
            made = self._local.session = session(self.url)
            with self._lock:
                self._made.append(made)
        return made

    def close(self) -> None:
        """Close every session made so far; a later read makes a new one."""
        import threading

        with self._lock:
            made, self._made, self._local = self._made, [], threading.local()
        for each in made:
            each.close()


def get(url: str, options: Options, what: str, hint: str, params: dict[str, str] | None = None,
        verb: str = "read", evaluated: bool = False, reuse=None, in_body: bool = False) -> tuple[int, str]:
    """GET `url` with `reuse` (a `session` for its server, left open) or a session of its own; the status and the
    text. An `evaluated` answer (a Prometheus query: nothing is sent before the query has run) may keep its first
    byte until the deadline; other reads wait at most a socket timeout. `in_body`: the params go form-encoded in a
    POST's body, not in the URL (a read all the same, for an API that takes both, as Prometheus' queries do)."""
    import requests
    from urllib3.exceptions import HTTPError

    clean = redact.strip(url)[0]
    timeout = options.socket_timeout()
    first_byte = options.socket_timeout(cap=options.remaining()) if evaluated else timeout
    answering = False
    reading = session(url) if reuse is None else reuse
    try:
        sent = reading.post(clean, data=params, timeout=(timeout, first_byte), stream=True,
                            hooks={"response": _posted_again}) if in_body else \
            reading.get(clean, params=params, timeout=(timeout, first_byte), stream=True)
        with sent as response:
            answering = True
            body = read_body(response.raw, options, what)
            return response.status_code, decode(body, named_charset(response.headers.get("Content-Type")))
    except (requests.RequestException, HTTPError, OSError) as exc:  # HTTPError, OSError: while the body streams
        if options.remaining() <= 0:  # the socket gave up because the run's deadline came: say so
            raise _late(what, options, answering) from None
        raise RemoteError(f"cannot {verb} {what} ({type(exc).__name__})", hint=hint) from None
    finally:
        if reuse is None:
            reading.close()


def _posted_again(response, **_):
    """A redirect (301, 302, 303) of a POSTed read followed as a 307 is: the POST with its body sent again to the new
    address. requests follows those as a GET without the body (a browser's habit, which RFC 9110 allows and does not
    ask for): a query in the body is lost, and Prometheus answers the empty query as one it cannot parse. One without a
    Location to follow is left the answer it is (its own status)."""
    if response.request.method == "POST" and response.status_code in (301, 302, 303) and response.is_redirect:
        response.status_code = 307
    return response


def _late(what: str, options: Options, answering: bool) -> SlowAnswer:
    if answering:
        return SlowAnswer(f"{what} did not finish answering within {options.timeout:g} s (it answers too slowly)",
                          hint="check the server and the network between, or raise --timeout")
    return SlowAnswer(f"{what}: no answer within {options.timeout:g} s",
                      hint="check that the server is reachable and not overloaded, or raise --timeout", answering=False)
