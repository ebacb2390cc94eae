"""KMS faults against a real OpenBao dev server, through the KMS client and the whole file layer.

Files are encrypted by pyarrow with data keys wrapped by OpenBao transit (our
OpenBaoTransitKms behind pyarrow's CryptoFactory), then read with :class:`ParquetBloomReader`
while OpenBao is stopped, hung, has revoked the token or deleted the master key; plus local TCP
servers that accept and never answer, hang up, or answer garbage. Every fault must surface as the
library's clear error within the client's timeout (a thread bound catches a hang; no wall-clock
assertion). Cached KEKs are served within their lifetime and never after it.
(tests/interop/test_kms_openbao.py covers the client alone when stopped, hung or sealed.)
"""

from __future__ import annotations

import base64
import datetime as dt
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.kms_support import SettableClock, call_outcome
from support.openbao_server import OpenBaoServer
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
from support.parquet_files import COLUMN_KEYS, crypto_factory, sample_table

from secure_bloom.errors import (KeyAccessDeniedError, KeyManagementError, KeyNotFoundError, KmsUnavailableError,
                                 MalformedKeyMaterialError, MissingKeyError, SecureBloomError)
from secure_bloom.kms import KeyUnwrapper, FileKeyWrapper, KeyMaterial, KeyMetadata, OpenBaoTransitKms
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, write_table

pytestmark = pytest.mark.kms
MASTER_KEYS = ("kf", "kc1", "kc2")
TRANSIT_POLICY = 'path "transit/*" { capabilities = ["create", "read", "update", "list"] }'


@pytest.fixture
def bao(openbao_fresh: OpenBaoServer) -> OpenBaoServer:  # noqa: F811
    kms = OpenBaoTransitKms(openbao_fresh.url, openbao_fresh.token)
    for name in MASTER_KEYS:
        kms.create_key(name)
        openbao_fresh.request("POST", f"transit/keys/{name}/config", {"deletion_allowed": True})
    openbao_fresh.put_policy("transit-rw", TRANSIT_POLICY)
    return openbao_fresh


def _write(bao: OpenBaoServer, path: Path) -> Path:
    kms = OpenBaoTransitKms(bao.url, bao.token)
    config = pe.EncryptionConfiguration(footer_key="kf", column_keys=COLUMN_KEYS, double_wrapping=True)
    props = crypto_factory(kms).file_encryption_properties(pe.KmsConnectionConfig(), config)
    pq.write_table(sample_table(300), path, encryption_properties=props, row_group_size=100)
    return path


def _read_all(path: Path, kms: OpenBaoTransitKms, **kw: Any) -> None:
    with ParquetBloomReader(path, KeyAccess(kms=kms, **kw)) as reader:
        reader.describe()


def _client(bao: OpenBaoServer, token: str | None = None, **kw: Any) -> OpenBaoTransitKms:
    kw.setdefault("timeout", (1.0, 2.0))
    kw.setdefault("retries", 1)
    kw.setdefault("backoff_s", 0.05)
    return OpenBaoTransitKms(bao.url, token or bao.token, **kw)


def test_file_reads_with_openbao_healthy(bao: OpenBaoServer, tmp_path: Path) -> None:
    path = _write(bao, tmp_path / "f.parquet")
    with ParquetBloomReader(path, KeyAccess(kms=_client(bao))) as reader:
        info = reader.describe()
    assert info["footer"]["footer_key_available"] and all(c["encrypted"] for c in info["columns"]
                                                          if c["path"] in ("ssn", "amount", "ts"))


def test_openbao_stopped(bao: OpenBaoServer, tmp_path: Path) -> None:
    path = _write(bao, tmp_path / "f.parquet")
    bao.stop()
    error = call_outcome(lambda: _read_all(path, _client(bao)))
    assert isinstance(error, KmsUnavailableError), repr(error)
    assert "after 2 attempts" in str(error) and bao.url in str(error)


def test_openbao_hung(bao: OpenBaoServer, tmp_path: Path) -> None:
    path = _write(bao, tmp_path / "f.parquet")
    bao.pause()
    try:
        error = call_outcome(lambda: _read_all(path, _client(bao)))
    finally:
        bao.resume()
    assert isinstance(error, KmsUnavailableError) and "read timeout" in str(error), repr(error)


def test_token_revoked(bao: OpenBaoServer, tmp_path: Path) -> None:
    path = _write(bao, tmp_path / "f.parquet")
    token = bao.create_token(["transit-rw"])
    _read_all(path, _client(bao, token))                 # the token works
    status, _ = bao.request("POST", "auth/token/revoke", {"token": token})
    assert status == 204
    error = call_outcome(lambda: _read_all(path, _client(bao, token)))
    assert isinstance(error, KeyAccessDeniedError), repr(error)
    assert token not in str(error) and token not in repr(error)


def test_footer_master_key_deleted(bao: OpenBaoServer, tmp_path: Path) -> None:
    path = _write(bao, tmp_path / "f.parquet")
    status, _ = bao.request("DELETE", "transit/keys/kf")
    assert status == 204
    error = call_outcome(lambda: _read_all(path, _client(bao)))
    assert isinstance(error, (MissingKeyError, KeyNotFoundError)), repr(error)
    assert "kf" in str(error)


def test_column_master_key_deleted(bao: OpenBaoServer, tmp_path: Path) -> None:
    path = _write(bao, tmp_path / "f.parquet")
    assert bao.request("DELETE", "transit/keys/kc1")[0] == 204
    with ParquetBloomReader(path, KeyAccess(kms=_client(bao))) as reader:
        assert reader.bloom_filter(0, "ts") is None      # kc2 still works
        for column in ("ssn", "amount"):
            error = call_outcome(lambda c=column: reader.bloom_filter(0, c))  # type: ignore[misc]
            assert isinstance(error, KeyManagementError) and "kc1" in str(error), repr(error)


# --------------------------------------------------------------------------- cache lifetimes


@pytest.mark.parametrize("fault", ["key deleted", "token revoked"])
def test_cached_kek_is_served_within_its_lifetime_and_never_after(bao: OpenBaoServer, fault: str) -> None:
    token = bao.create_token(["transit-rw"])
    kms = _client(bao, token)
    dek, key_metadata = FileKeyWrapper(kms, double_wrapping=True).column_key("kc1")
    clock = SettableClock()
    unwrapper = KeyUnwrapper(kms, cache_lifetime_s=100.0, _clock=clock)
    assert unwrapper.unwrap(key_metadata) == dek          # KEK fetched from OpenBao and cached
    if fault == "key deleted":
        assert bao.request("DELETE", "transit/keys/kc1")[0] == 204
        expected: type[Exception] = KeyNotFoundError
    else:
        assert bao.request("POST", "auth/token/revoke", {"token": token})[0] == 204
        expected = KeyAccessDeniedError
    clock.now += 99.9
    assert unwrapper.unwrap(key_metadata) == dek          # within the lifetime: the cached KEK
    clock.now += 0.1
    error = call_outcome(lambda: unwrapper.unwrap(key_metadata))
    assert isinstance(error, expected), repr(error)       # at the lifetime: OpenBao is asked again
    clock.now += 1000
    assert isinstance(call_outcome(lambda: unwrapper.unwrap(key_metadata)), expected)


def test_write_table_shares_keks_within_the_cache_lifetime_and_never_after(bao: OpenBaoServer,
                                                                           tmp_path: Path) -> None:
    """Consecutive write_table calls share the KEKs (and the KEKs their verification unwrapped)
    for ``cache_lifetime``, as parquet-java does: within it a write needs no OpenBao request, so
    it succeeds after the token is revoked; the first write past it asks OpenBao, is refused and
    leaves nothing. (A deleted transit key is no fault for a write: encrypt creates it anew.)"""
    token = bao.create_token(["transit-rw"])
    kms = _client(bao, token)
    lifetime = 3.0
    config = pe.EncryptionConfiguration(footer_key="kf", column_keys=COLUMN_KEYS,
                                        cache_lifetime=dt.timedelta(seconds=lifetime))

    def write(name: str) -> None:
        write_table(sample_table(100), tmp_path / name, encryption=config, kms=kms, bloom_filter_options={"ssn": True})

    start = time.monotonic()
    write("first.parquet")
    made = time.monotonic()  # the shared tools were made before this
    assert bao.request("POST", "auth/token/revoke", {"token": token})[0] == 204
    write("within.parquet")  # the shared KEKs: no request to OpenBao
    assert time.monotonic() - start < lifetime
    time.sleep(max(0.0, made + lifetime - time.monotonic()) + 0.05)
    error = call_outcome(lambda: write("past.parquet"))
    assert isinstance(error, KeyAccessDeniedError), repr(error)
    assert token not in str(error) and token not in repr(error)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.parquet", "within.parquet"]


def test_single_wrapped_keys_are_never_cached(bao: OpenBaoServer) -> None:
    kms = _client(bao)
    dek, key_metadata = FileKeyWrapper(kms, double_wrapping=False).column_key("kc2")
    unwrapper = KeyUnwrapper(kms, cache_lifetime_s=1e9)
    assert unwrapper.unwrap(key_metadata) == dek
    assert bao.request("DELETE", "transit/keys/kc2")[0] == 204
    assert isinstance(call_outcome(lambda: unwrapper.unwrap(key_metadata)), KeyNotFoundError)


# --------------------------------------------------------------------------- misbehaving servers


class _TcpServer:
    """A loopback TCP server whose connections get ``respond(conn)``; bounded and self-stopping."""

    def __init__(self, respond: Callable[[socket.socket], None]) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._respond = respond
        self._stop = threading.Event()
        self._open: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        accepted = 0
        while not self._stop.is_set() and accepted < 64:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            accepted += 1
            self._open.append(conn)
            self._respond(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for conn in self._open:
            conn.close()
        self._sock.close()


def _never_answer(conn: socket.socket) -> None:
    pass  # keep the connection open, say nothing


def _hang_up(conn: socket.socket) -> None:
    conn.close()


def _canned(response: bytes) -> Callable[[socket.socket], None]:
    def respond(conn: socket.socket) -> None:
        conn.settimeout(2)
        try:
            conn.recv(65536)
            conn.sendall(response)
        except OSError:
            pass
        conn.close()
    return respond


def _http(status: str, body: bytes, content_type: str = "application/json") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body


@pytest.fixture
def tcp_server() -> Iterator[Callable[[Callable[[socket.socket], None]], _TcpServer]]:
    servers: list[_TcpServer] = []

    def start(respond: Callable[[socket.socket], None]) -> _TcpServer:
        servers.append(_TcpServer(respond))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


WRAPPED = "vault:v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


@pytest.mark.parametrize(("respond", "expected"), [
    (_never_answer, KmsUnavailableError),
    (_hang_up, KmsUnavailableError),
    (_canned(b"garbage that is not HTTP\r\n\r\n"), KmsUnavailableError),
    (_canned(_http("200 OK", b"not json")), KeyManagementError),
    (_canned(_http("200 OK", b'{"data": {"plaintext": 17}}')), KeyManagementError),
    (_canned(_http("200 OK", b'{"data": {"plaintext": "AAAA"}}')), MalformedKeyMaterialError),
    (_canned(_http("200 OK", b"[1, 2, 3]")), KeyManagementError),
    (_canned(_http("500 Internal Server Error", b'{"errors": ["boom"]}')), KmsUnavailableError),
    (_canned(_http("403 Forbidden", b'{"errors": ["permission denied"]}')), KeyAccessDeniedError),
    (_canned(_http("404 Not Found", b"<html>no</html>", "text/html")), KeyNotFoundError),
    (_canned(_http("400 Bad Request", b'{"errors": ["' + b"x" * 100_000 + b'"]}')), MalformedKeyMaterialError),
], ids=["never-answers", "hangs-up", "not-http", "not-json", "plaintext-not-str", "short-key",
        "json-list", "http-500", "http-403", "http-404-html", "http-400-huge"])
def test_misbehaving_server(tcp_server: Any, respond: Any, expected: type[Exception]) -> None:
    server = tcp_server(respond)
    kms = OpenBaoTransitKms(server.url, "not-a-real-token", timeout=(1.0, 1.0), retries=1, backoff_s=0.01)
    dek_wrap = KeyUnwrapper(kms)
    material = KeyMaterial(master_key_id="kc1", wrapped_dek=WRAPPED, is_footer_key=False, double_wrapping=False)
    key_metadata = KeyMetadata(material=material).to_bytes()
    error = call_outcome(lambda: dek_wrap.unwrap(key_metadata))
    assert isinstance(error, expected), repr(error)
    assert isinstance(error, SecureBloomError)
    assert "not-a-real-token" not in str(error) and len(str(error)) < 1000


def test_nothing_listening(tcp_server: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kms = OpenBaoTransitKms(f"http://127.0.0.1:{port}", "t", timeout=(1.0, 1.0), retries=2, backoff_s=0.01)
    error = call_outcome(lambda: kms.unwrap_key(WRAPPED, "kc1"))
    assert isinstance(error, KmsUnavailableError) and "after 3 attempts" in str(error)



# --------------------------------------------------------------------------- deadline and redirects

#: Slack over ``deadline_s`` for the bound below: a correctness bound (the call must end near its
#: deadline, not after the server finishes trickling), far above scheduling noise.
DEADLINE_SLACK_S = 8.0


def _trickle(response: bytes, seconds_per_byte: float = 0.5) -> Callable[[socket.socket], None]:
    """Send ``response`` one byte at a time; stop when the client goes away."""
    def respond(conn: socket.socket) -> None:
        conn.settimeout(2)
        try:
            conn.recv(65536)
            for byte in response:
                conn.sendall(bytes([byte]))
                time.sleep(seconds_per_byte)
        except OSError:
            pass
        conn.close()
    return respond


DECRYPT_OK = _http("200 OK", b'{"data": {"plaintext": "' + base64.b64encode(bytes(16)) + b'"}}')


@pytest.mark.parametrize("part", ["headers", "body"])
def test_trickling_server_is_cut_off_at_the_deadline(tcp_server: Any, part: str) -> None:
    head, body = DECRYPT_OK.split(b"\r\n\r\n", 1)
    if part == "headers":
        respond = _trickle(DECRYPT_OK)                    # the status line itself arrives at 2 bytes/s
    else:
        def respond(conn: socket.socket) -> None:         # headers at once, then the body byte by byte
            conn.sendall(head + b"\r\n\r\n")
            _trickle(body)(conn)
    server = tcp_server(respond)
    kms = OpenBaoTransitKms(server.url, "not-a-real-token", timeout=(2.0, 3.0), retries=1, deadline_s=4.0)
    start = time.monotonic()
    error = call_outcome(lambda: kms.unwrap_key(WRAPPED, "kc1"))
    elapsed = time.monotonic() - start
    assert isinstance(error, KmsUnavailableError), repr(error)
    assert "within the 4 s deadline" in str(error) and "not-a-real-token" not in str(error)
    # every socket read stayed under the 3 s read timeout; only the total deadline can end the call
    assert elapsed < 4.0 + DEADLINE_SLACK_S, f"unwrap_key took {elapsed:.1f} s for a 4 s deadline"


def test_deadline_covers_retries_and_backoff(tcp_server: Any) -> None:
    server = tcp_server(_canned(_http("503 Service Unavailable", b'{"errors": ["sealed"]}')))
    kms = OpenBaoTransitKms(server.url, "t", timeout=(1.0, 1.0), retries=50, backoff_s=1.0, deadline_s=2.0)
    error = call_outcome(lambda: kms.unwrap_key(WRAPPED, "kc1"))
    assert isinstance(error, KmsUnavailableError), repr(error)
    assert "no time left for a retry within the 2 s deadline" in str(error)


def test_deadline_must_be_positive() -> None:
    with pytest.raises(ValueError, match="deadline_s must be > 0"):
        OpenBaoTransitKms("http://127.0.0.1:1", "t", deadline_s=0)


def _redirecting_server(tcp_server: Any, status: str) -> tuple[_TcpServer, _TcpServer, list[bytes]]:
    """A server answering every request with redirect ``status`` to ``elsewhere``, a server that
    would answer like a real OpenBao and records every request it receives (it must get none)."""
    received: list[bytes] = []

    def target(conn: socket.socket) -> None:
        conn.settimeout(2)
        try:
            received.append(conn.recv(65536))
            conn.sendall(DECRYPT_OK)
        except OSError:
            pass
        conn.close()

    elsewhere = tcp_server(target)
    redirect = (f"HTTP/1.1 {status}\r\nLocation: {elsewhere.url}/v1/transit/decrypt/kc1\r\n"
                "Content-Length: 0\r\nConnection: close\r\n\r\n").encode()
    return tcp_server(_canned(redirect)), elsewhere, received


@pytest.mark.parametrize("status", ["301 Moved Permanently", "302 Found", "307 Temporary Redirect",
                                    "308 Permanent Redirect"])
def test_redirect_is_refused_and_the_token_stays_home(tcp_server: Any, status: str) -> None:
    server, elsewhere, received = _redirecting_server(tcp_server, status)
    kms = OpenBaoTransitKms(server.url, "secret-token-value", timeout=(1.0, 1.0), retries=1)
    error = call_outcome(lambda: kms.unwrap_key(WRAPPED, "kc1"))
    assert isinstance(error, KeyManagementError), repr(error)
    assert f"HTTP {status.split()[0]} (a redirect); redirects are refused" in str(error)
    assert "secret-token-value" not in str(error)
    elsewhere.close()
    assert received == []                                 # the target never saw a request, nor the token


# --------------------------------------------------------------------------- the JVM's transit client


def _java_transit_conf(server: _TcpServer, deadline_s: float) -> dict[str, str]:
    return {"parquet.encryption.kms.instance.url": server.url,
            "parquet.encryption.key.access.token": "secret-token-value",
            "secure_bloom.kms.transit.deadline.seconds": str(deadline_s)}


@pytest.mark.interop
@pytest.mark.parametrize("part", ["headers", "body"])
def test_java_transit_client_is_cut_off_at_its_deadline(tcp_server: Any, part: str) -> None:
    """Spark's VaultTransitKmsClient: a server trickling its answer (1 byte/s) ends the call at the
    total deadline; without one, a trickled body is waited for in full (the JDK's request timeout
    covers the headers only) and the call would succeed after minutes."""
    from secure_bloom.errors import JvmError
    from support.parquet_java_checks import kms_unwrap

    head, body = DECRYPT_OK.split(b"\r\n\r\n", 1)
    if part == "headers":
        respond = _trickle(DECRYPT_OK, seconds_per_byte=1.0)
    else:
        def respond(conn: socket.socket) -> None:         # headers at once, then the body byte by byte
            conn.sendall(head + b"\r\n\r\n")
            _trickle(body, seconds_per_byte=1.0)(conn)
    server = tcp_server(respond)
    with pytest.raises(JvmError, match=r"transit decrypt with master key 'kc1'.* failed: no answer within "
                                       r"the deadline of 3\.0 s") as err:
        kms_unwrap("VaultTransitKmsClient", "kc1", WRAPPED, _java_transit_conf(server, 3.0), timeout=90)
    assert "secret-token-value" not in str(err.value)


@pytest.mark.interop
@pytest.mark.parametrize("status", ["301 Moved Permanently", "307 Temporary Redirect"])
def test_java_transit_client_refuses_redirects(tcp_server: Any, status: str) -> None:
    from secure_bloom.errors import JvmError
    from support.parquet_java_checks import kms_unwrap

    server, elsewhere, received = _redirecting_server(tcp_server, status)
    with pytest.raises(JvmError, match=rf"HTTP {status.split()[0]} \(a redirect\); redirects are refused") as err:
        kms_unwrap("VaultTransitKmsClient", "kc1", WRAPPED, _java_transit_conf(server, 10.0), timeout=90)
    assert "secret-token-value" not in str(err.value)
    elsewhere.close()
    assert received == []
