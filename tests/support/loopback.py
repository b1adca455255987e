"""The life cycle every test HTTP server shares: a threaded server on 127.0.0.1, port chosen by the OS."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class KeepAliveHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive, headers and body out in one write, no request log on stderr."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart

    def log_message(self, *args):
        pass


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up before its answer is written (a scrape or check that timed out) is normal
    here: it is not printed as a traceback on stderr."""

    def handle_error(self, request, client_address) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LoopbackServer:
    def _serve(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        """Serve on `port` (0: one the OS chooses, as it does when `port` is taken)."""
        try:
            self.server = _QuietServer(("127.0.0.1", port), handler)
        except OSError:
            if not port:
                raise
            self.server = _QuietServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def _serve_tls(self):
        """HTTPS from now on (call after `_serve`, before the server starts), with a fresh certificate for
        127.0.0.1: (certificate file, key file, base64 certificate). Needs openssl."""
        import ssl

        from tests.support import kube_discovery

        issued = kube_discovery.certificate()
        if issued is None:
            raise RuntimeError("openssl is needed to serve TLS")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(issued[0]), str(issued[1]))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        return issued

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host}:{port}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
