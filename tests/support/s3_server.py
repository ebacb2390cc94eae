"""A real S3-API server on 127.0.0.1 for the object-store tests, with a counting proxy in front.

moto's server mode (``moto[server]``, its ``ThreadedMotoServer``) is a real HTTP server speaking
the S3 REST API; pyarrow's ``S3FileSystem`` talks to it as to AWS. moto keeps no traffic
counters, so the tests talk to it through :class:`CountingProxy`, a small HTTP proxy on another
loopback port that forwards every request unchanged and counts requests (by method) and the
response body bytes: what really crossed the wire.

Fixture ``moto_server`` (session): the port of one moto server on 127.0.0.1, shared by the S3
and KMS fixtures (support/aws_kms_server.py). Fixture ``s3`` (session): ``S3Service`` with ``filesystem()`` (a pyarrow S3FileSystem through the
proxy), ``bucket(name)``, ``counts()`` / ``reset()``. A missing moto fails the run (component
``moto``, see components.py).
"""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

#: Credentials the URIs of :meth:`S3Service.uri` carry (moto accepts any): a report or message
#: showing SECRET_KEY leaks it.
ACCESS_KEY = "AKIDSECUREBLOOMTEST"
SECRET_KEY = "sEcReT-9f3a1c"

_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
               "transfer-encoding", "upgrade"}


@dataclass
class Traffic:
    requests: Counter[str] = field(default_factory=Counter)
    body_bytes: int = 0
    get_ranges: list[str] = field(default_factory=list)
    #: (request path, Range header or None) of every GET: which object each range was of.
    gets: list[tuple[str, str | None]] = field(default_factory=list)
    #: requests by X-Amz-Target (JSON APIs such as KMS: "TrentService.Encrypt")
    targets: Counter[str] = field(default_factory=Counter)
    #: (method, request path, Range header or None) of every request, in the order answered.
    log: list[tuple[str, str, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class CountingProxy:
    """Forwards HTTP/1.1 requests to ``upstream`` (host, port) and counts them."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.traffic = Traffic()
        traffic, target = self.traffic, upstream

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _read_chunked(self) -> bytes:
                """The body of a request sent with Transfer-Encoding: chunked, de-chunked."""
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass   # trailers
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()

            def _forward(self) -> None:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    body: bytes | None = self._read_chunked()   # HTTP/1.1 chunked upload (pyarrow's S3 writes)
                    headers["Content-Length"] = str(len(body))
                else:
                    length = int(self.headers.get("Content-Length") or 0)
                    body = self.rfile.read(length) if length else None
                conn = http.client.HTTPConnection(*target, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    response = conn.getresponse()
                    data = response.read()
                finally:
                    conn.close()
                with traffic.lock:
                    traffic.requests[self.command] += 1
                    if self.headers.get("X-Amz-Target"):
                        traffic.targets[self.headers["X-Amz-Target"]] += 1
                    traffic.body_bytes += len(data) if self.command != "HEAD" else 0
                    if self.command == "GET" and self.headers.get("Range"):
                        traffic.get_ranges.append(self.headers["Range"])
                    if self.command == "GET":
                        traffic.gets.append((self.path, self.headers.get("Range")))
                    traffic.log.append((self.command, self.path, self.headers.get("Range")))
                self.send_response(response.status)
                for k, v in response.getheaders():
                    if k.lower() not in _HOP_BY_HOP and k.lower() != "content-length":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data) if self.command != "HEAD"
                                                        else response.getheader("Content-Length") or 0))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class S3Service:
    """Reads go through the counting proxy (:meth:`filesystem`); test data is uploaded straight to
    the server (:meth:`upload_filesystem`: the proxy forwards no chunked uploads)."""

    def __init__(self, proxy: CountingProxy, server_port: int) -> None:
        self.proxy = proxy
        self.endpoint = f"127.0.0.1:{proxy.port}"
        self.server_endpoint = f"127.0.0.1:{server_port}"

    @staticmethod
    def _fs(endpoint: str) -> Any:
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1",
                                 endpoint_override=endpoint, scheme="http", allow_bucket_creation=True)

    def filesystem(self, endpoint: str | None = None) -> Any:
        """A pyarrow S3FileSystem through the counting proxy (or through ``endpoint``)."""
        return self._fs(endpoint or self.endpoint)

    def upload_filesystem(self) -> Any:
        return self._fs(self.server_endpoint)

    def bucket(self, name: str) -> str:
        self.upload_filesystem().create_dir(name)
        return name

    def reset(self) -> None:
        with self.proxy.traffic.lock:
            self.proxy.traffic.requests.clear()
            self.proxy.traffic.body_bytes = 0
            self.proxy.traffic.get_ranges.clear()
            self.proxy.traffic.gets.clear()
            self.proxy.traffic.log.clear()

    def counts(self) -> tuple[dict[str, int], int]:
        """(requests by method, response body bytes) since the last :meth:`reset`."""
        with self.proxy.traffic.lock:
            return dict(self.proxy.traffic.requests), self.proxy.traffic.body_bytes

    @property
    def get_ranges(self) -> list[str]:
        return list(self.proxy.traffic.get_ranges)

    @property
    def gets(self) -> list[tuple[str, str | None]]:
        """(path, Range or None) of every GET since the last :meth:`reset` (listings included)."""
        return list(self.proxy.traffic.gets)

    @property
    def log(self) -> list[tuple[str, str, str | None]]:
        """(method, path, Range or None) of every request since the last :meth:`reset`, in order."""
        return list(self.proxy.traffic.log)

    def uri(self, path: str, endpoint: str | None = None) -> str:
        """``s3://ACCESS:SECRET@path?endpoint_override=...``: an object or prefix as a user gives it
        to the CLI or the pytest plugin, credentials in the URI (reports must not show them)."""
        return (f"s3://{ACCESS_KEY}:{SECRET_KEY}@{path}?endpoint_override={endpoint or self.endpoint}"
                "&scheme=http&region=us-east-1")


@pytest.fixture(scope="session")
def moto_server() -> Iterator[int]:
    """moto's server (every AWS API it emulates: S3, KMS, ...) on 127.0.0.1; yields its port (a
    missing moto fails the run)."""
    from support.components import missing

    try:
        from moto.server import ThreadedMotoServer
    except ImportError as e:
        missing("moto", f"{type(e).__name__}: {e} (pip install 'moto[server]')")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        yield int(server._server.server_port)  # moto exposes the bound port only on its werkzeug server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3(moto_server: int) -> Iterator[S3Service]:
    """moto's S3 server on 127.0.0.1 behind a counting proxy."""
    proxy = CountingProxy(("127.0.0.1", moto_server))
    try:
        yield S3Service(proxy, moto_server)
    finally:
        proxy.stop()
