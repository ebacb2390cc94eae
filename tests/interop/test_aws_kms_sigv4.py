"""The JDK-only SigV4 signer of the JVM's AWS KMS client (io.securebloom.AwsSigV4) against the
AWS SigV4 test suite (tests/data/aws4_testsuite) and against botocore's own signer on the same
requests: the same canonical request, string to sign and signature, step by step.

Both directions: the request the Java client sends (its JSON body and headers) signed by
botocore's SigV4Auth, and the request botocore's KMS client sends (captured before it leaves)
signed by the Java signer. One JVM per direction (cases are batched).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from typing import Any
from urllib.parse import parse_qsl

import pytest
from support.paths import REPO_DIR

pytestmark = pytest.mark.interop

SUITE = REPO_DIR / "tests" / "data" / "aws4_testsuite"
SUITE_ACCESS_KEY = "AKIDEXAMPLE"
SUITE_SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SUITE_TIME = dt.datetime(2015, 8, 30, 12, 36, 0, tzinfo=dt.timezone.utc)

# Fixed inputs of the botocore cross-check (test values, not real credentials).
ACCESS_KEY = "AKIDSIGV4CROSSCHECK"
SECRET_KEY = "sigv4/Cross+Check=Secret0123456789abcdEF"
TOKEN = "FwoGZXIvYXdzEXAMPLE//session+token=="
TIME = dt.datetime(2026, 3, 14, 1, 59, 26, tzinfo=dt.timezone.utc)
MASTER_KEY_IDS = ("1234abcd-12ab-34cd-56ef-1234567890ab", "arn:aws:kms:eu-west-1:111122223333:key/"
                  "1234abcd-12ab-34cd-56ef-1234567890ab", "alias/pii-key", "arn:aws:kms:eu-west-1:111122223333:alias/x",
                  "alias/ünïcode-κλειδί")
ENDPOINTS = (("https://kms.eu-west-1.amazonaws.com", "eu-west-1"), ("http://127.0.0.1:4566", "us-east-1"),
             ("https://kms-fips.us-gov-west-1.amazonaws.com:443", "us-gov-west-1"))


def _sigv4_tool(mode: str, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from support.parquet_java_checks import checks_jar

    from secure_bloom.spark.jvm import run_java
    from benchmarks.parquet_java import harness_jars

    proc = run_java("io.securebloom.SigV4Tool", [mode], 120, stdin=json.dumps({"cases": cases}),
                    jars=[checks_jar(), *harness_jars()])
    assert proc.returncode == 0, proc.stderr[-2000:]
    results: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])["results"]
    assert len(results) == len(cases)
    return results


def _parse_req(text: str) -> tuple[str, str, list[tuple[str, str]], list[tuple[str, str]], bytes]:
    head, _, body = text.partition("\n\n")
    lines = head.split("\n")
    method, target, _ = lines[0].split(" ", 2) if lines[0].count(" ") >= 2 else (*lines[0].split(" "), "")
    path, _, query = target.partition("?")
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name, value))
    return method, path, parse_qsl(query, keep_blank_values=True), headers, body.encode("utf-8")


def _suite_cases() -> list[str]:
    return sorted(p.name for p in SUITE.iterdir() if p.is_dir())


def test_signer_matches_the_aws_sigv4_test_suite() -> None:
    names = _suite_cases()
    assert len(names) >= 20
    cases, expected = [], []
    for name in names:
        base = SUITE / name / name
        method, path, query, headers, body = _parse_req(base.with_suffix(".req").read_text("utf-8"))
        creq = base.with_suffix(".creq").read_text("utf-8").replace("\r", "")
        token = re.search(r"^x-amz-security-token:(.*)$", creq, re.MULTILINE)
        cases.append({"method": method, "path": path, "query": query, "headers": headers,
                      "body_b64": base64.b64encode(body).decode(), "region": "us-east-1", "service": "service",
                      "access_key": SUITE_ACCESS_KEY, "secret_key": SUITE_SECRET_KEY,
                      "token": token.group(1) if token else None, "epoch_seconds": int(SUITE_TIME.timestamp())})
        expected.append((creq, base.with_suffix(".sts").read_text("utf-8").replace("\r", ""),
                         base.with_suffix(".authz").read_text("utf-8").replace("\r", "")))
    for name, result, (creq, sts, authz) in zip(names, _sigv4_tool("sign", cases), expected):
        assert result["canonical_request"] == creq, name
        assert result["string_to_sign"] == sts, name
        assert result["authorization"] == authz, name


def _botocore_sign(method: str, url: str, headers: list[tuple[str, str]], body: bytes, region: str,
                   monkeypatch: pytest.MonkeyPatch, token: str | None = TOKEN) -> dict[str, str]:
    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: TIME.replace(tzinfo=None))
    request = AWSRequest(method=method, url=url, data=body)
    for name, value in headers:
        if name.lower() not in ("authorization", "x-amz-date", "x-amz-security-token"):
            request.headers[name] = value
    auth = botocore.auth.SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, token), "kms", region)
    auth.add_auth(request)
    authorization = request.headers["Authorization"]
    del request.headers["Authorization"]  # the steps again, over the request as it was signed
    canonical = auth.canonical_request(request)
    return {"canonical_request": canonical, "string_to_sign": auth.string_to_sign(request, canonical),
            "authorization": authorization}


def test_requests_of_the_java_client_sign_as_botocore_signs_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Encrypt and Decrypt requests AwsKmsClient builds (its body, its headers), for key ids,
    ARNs and aliases, several endpoints, with and without a session token: botocore's SigV4Auth
    computes the same canonical request, string to sign and Authorization header."""
    cases = []
    for (endpoint, region) in ENDPOINTS:
        for master_key_id in MASTER_KEY_IDS:
            for token in (TOKEN, None):
                common = {"master_key_id": master_key_id, "endpoint": endpoint, "region": region,
                          "access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "token": token,
                          "epoch_seconds": int(TIME.timestamp())}
                cases.append({**common, "operation": "Encrypt", "key_b64": base64.b64encode(bytes(range(16))).decode()})
                cases.append({**common, "operation": "Decrypt", "wrapped": base64.b64encode(b"\x01\x02" * 60).decode()})
    results = _sigv4_tool("kms", cases)
    for case, java in zip(cases, results):
        body = base64.b64decode(java["body_b64"])
        sent = json.loads(body)
        assert sent["EncryptionContext"] == {"secure_bloom:master_key_id": case["master_key_id"],
                                             "secure_bloom:purpose": "parquet-key-wrap"}
        headers = [(name, value) for name, value in java["headers"]]
        assert dict(headers)["X-Amz-Target"] == f"TrentService.{case['operation']}"
        boto = _botocore_sign("POST", case["endpoint"].rstrip("/") + "/", headers, body, case["region"],
                              monkeypatch, token=case["token"])
        assert java["canonical_request"] == boto["canonical_request"], case
        assert java["string_to_sign"] == boto["string_to_sign"], case
        assert java["authorization"] == boto["authorization"], case


def test_requests_of_botocore_sign_as_the_java_signer_signs_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """What botocore's own KMS client sends (captured just before it would go out, so nothing is
    sent): the Java signer gives the same Authorization for the same bytes and headers."""
    import boto3
    import botocore.auth
    from botocore.awsrequest import AWSResponse

    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: TIME.replace(tzinfo=None))
    captured: list[Any] = []

    def capture(request: Any, **_: Any) -> AWSResponse:
        captured.append(request)
        return AWSResponse(request.url, 200, {}, _Raw(b'{"CiphertextBlob": "AAAA", "KeyId": "k", "Plaintext": "AAAA"}'))

    cases = []
    for endpoint, region in ENDPOINTS:
        session = boto3.session.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                                        aws_session_token=TOKEN, region_name=region)
        client = session.client("kms", endpoint_url=endpoint)
        client.meta.events.register("before-send.kms", capture)
        for master_key_id in MASTER_KEY_IDS:
            context = {"secure_bloom:master_key_id": master_key_id, "secure_bloom:purpose": "parquet-key-wrap"}
            client.encrypt(KeyId=master_key_id, Plaintext=bytes(16), EncryptionContext=context)
            client.decrypt(CiphertextBlob=b"\x00" * 40, EncryptionContext=context, KeyId=master_key_id)
    for request in captured:
        url = request.url
        path = re.sub(r"^https?://[^/]+", "", url) or "/"
        host = re.match(r"^https?://([^/]+)", url).group(1)  # type: ignore[union-attr]
        host = re.sub(r":443$", "", host) if url.startswith("https") else host
        authorization = request.headers["Authorization"]
        authorization = authorization.decode() if isinstance(authorization, bytes) else authorization
        # the headers botocore signed (it adds amz-sdk-* and Content-Length after signing)
        signed = re.search(r"SignedHeaders=([^,]+)", authorization).group(1).split(";")  # type: ignore[union-attr]
        headers = [(k, v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()
                   if k.lower() in signed]
        if not any(k.lower() == "host" for k, _ in headers):
            headers.append(("Host", host))
        assert sorted(k.lower() for k, _ in headers) == signed
        region = re.search(r"Credential=[^/]+/\d{8}/([^/]+)/", authorization).group(1)  # type: ignore[union-attr]
        cases.append({"method": request.method, "path": path, "query": [], "headers": headers,
                      "body_b64": base64.b64encode(request.body or b"").decode(), "region": region,
                      "service": "kms", "access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "token": TOKEN,
                      "epoch_seconds": int(TIME.timestamp())})
    assert len(cases) == 2 * len(ENDPOINTS) * len(MASTER_KEY_IDS)
    for request, java in zip(captured, _sigv4_tool("sign", cases)):
        expected = request.headers["Authorization"]
        expected = expected.decode() if isinstance(expected, bytes) else expected
        assert java["authorization"] == expected, request.url


class _Raw:
    """A urllib3-like raw body for a captured request's canned response."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, *_: Any, **__: Any) -> Any:
        yield self._data

    def read(self, *_: Any) -> bytes:
        data, self._data = self._data, b""
        return data


def test_signed_headers_never_carry_the_secret_key() -> None:
    [result] = _sigv4_tool("kms", [{"operation": "Encrypt", "master_key_id": "alias/k", "key_b64": "AAAAAAAAAAAAAAAAAAAAAA==",
                                    "endpoint": "https://kms.eu-west-1.amazonaws.com", "region": "eu-west-1",
                                    "access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "token": None,
                                    "epoch_seconds": int(TIME.timestamp())}])
    assert SECRET_KEY not in json.dumps(result)
