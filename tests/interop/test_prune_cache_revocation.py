"""A PruneCache never answers for a caller the KMS has stopped serving (issue 20 item 4).

A real OpenBao dev server; the reader's token is limited by an ACL policy that the test rewrites
(revoking decrypt on one key) and then the token itself is revoked. The cache's answers must
follow what an uncached read does with the same KeyAccess: with ``cache_lifetime_s=0`` the first
lookup after the revocation raises KeyAccessDeniedError, cached or not; with the default
lifetime both answer while the KEK is cached, and both refuse once it is dropped.
"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pyarrow.parquet.encryption as pe
import pytest

from secure_bloom.errors import KeyAccessDeniedError
from secure_bloom.kms import OpenBaoTransitKms
from secure_bloom.parquet import KeyAccess, PruneCache, write_table
from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
from secure_bloom.parquet.read.prune import FilePrune, prune_files
from support.openbao_server import OpenBaoServer

pytestmark = pytest.mark.kms

READ_BOTH = ('path "transit/decrypt/footer_key" { capabilities = ["update"] }\n'
             'path "transit/decrypt/pii_key" { capabilities = ["update"] }\n')
READ_FOOTER_ONLY = 'path "transit/decrypt/footer_key" { capabilities = ["update"] }\n'
ABSENT_EMAIL = [("email", "==", "8888888888888888@example.com")]  # within every row group's min/max
ABSENT_ID = [("id", "==", 10_000)]


@pytest.fixture(scope="module")
def lake(openbao: OpenBaoServer, tmp_path_factory: pytest.TempPathFactory) -> list[str]:  # noqa: F811
    root = OpenBaoTransitKms(openbao.url, openbao.token)
    for name in ("footer_key", "pii_key"):
        root.create_key(name)
    table = pa.table({"id": pa.array(range(400), pa.int64()),
                      "email": [f"{random.Random(i).getrandbits(64):016x}@example.com" for i in range(400)]})
    d = tmp_path_factory.mktemp("revocation")
    paths = []
    for i in range(2):
        path = d / f"part-{i}.parquet"
        write_table(table, path, encryption=pe.EncryptionConfiguration(footer_key="footer_key",
                                                                       column_keys={"pii_key": ["email"]}),
                    kms=root, bloom_filter_options={"email": True}, row_group_size=100)
        paths.append(str(path))
    return paths


def _prune(paths: list[str], filters: Any, keys: KeyAccess, cache: PruneCache | None) -> list[FilePrune]:
    return prune_files(paths, predicate_tree(to_expression(filters)), keys=keys, cache=cache, threads=1)


def _reader(server: OpenBaoServer, name: str, hcl: str) -> str:
    server.put_policy(name, hcl)
    return server.create_token([name])


def test_no_cached_answer_after_the_kms_revokes_access(openbao: OpenBaoServer, lake: list[str]) -> None:  # noqa: F811
    token = _reader(openbao, "revocable-reader", READ_BOTH)
    keys = KeyAccess(kms=OpenBaoTransitKms(openbao.url, token), cache_lifetime_s=0)
    cache = PruneCache()
    for _ in range(2):  # cold, then warm: every row group ruled out by the encrypted filters
        results = _prune(lake, ABSENT_EMAIL, keys, cache)
        assert all(r.row_groups == () and r.pruned_by_bloom for r in results)
    assert [r.from_cache for r in results] == [True, True]
    assert [r.metadata_requests for r in results] == [0, 0]  # answered without opening the files

    # The KMS stops decrypting under pii_key for this token (the footer key stays readable).
    openbao.put_policy("revocable-reader", READ_FOOTER_ONLY)
    with pytest.raises(KeyAccessDeniedError, match="pii_key"):
        _prune(lake, ABSENT_EMAIL, keys, None)  # the uncached read refuses ...
    with pytest.raises(KeyAccessDeniedError, match="pii_key"):
        _prune(lake, ABSENT_EMAIL, keys, cache)  # ... and so does the warm cache: no membership oracle
    # facts of the plaintext column need the footer key only: still answered from the cache
    plain = _prune(lake, ABSENT_ID, keys, cache)
    assert [r.from_cache for r in plain] == [True, True] and all(r.row_groups == () for r in plain)
    assert [r.row_groups for r in _prune(lake, ABSENT_ID, keys, None)] == [(), ()]

    # Access given back: the cache answers again.
    openbao.put_policy("revocable-reader", READ_BOTH)
    assert all(r.row_groups == () for r in _prune(lake, ABSENT_EMAIL, keys, cache))

    # The token itself revoked: the footer key goes too; even plaintext-column facts are refused.
    status, _ = openbao.request("POST", "auth/token/revoke", {"token": token})
    assert status in (200, 204)
    for filters in (ABSENT_EMAIL, ABSENT_ID):
        with pytest.raises(KeyAccessDeniedError):
            _prune(lake, filters, keys, None)
        with pytest.raises(KeyAccessDeniedError):
            _prune(lake, filters, keys, cache)


def test_cached_answers_live_as_long_as_the_kek_cache(openbao: OpenBaoServer, lake: list[str]) -> None:  # noqa: F811
    """With the default lifetime a read uses a KEK unwrapped in the last 600 s without asking the
    KMS: cached and uncached reads both still answer right after the revocation, and both refuse
    once the KEK cache is dropped (KeyUnwrapper.clear_caches, or its lifetime passing)."""
    token = _reader(openbao, "kek-cache-reader", READ_BOTH)
    keys = KeyAccess(kms=OpenBaoTransitKms(openbao.url, token))
    cache = PruneCache()
    _prune(lake, ABSENT_EMAIL, keys, cache)
    openbao.put_policy("kek-cache-reader", READ_FOOTER_ONLY)
    assert all(r.row_groups == () for r in _prune(lake, ABSENT_EMAIL, keys, None))
    assert [r.from_cache for r in _prune(lake, ABSENT_EMAIL, keys, cache)] == [True, True]
    keys.unwrapper.clear_caches()
    with pytest.raises(KeyAccessDeniedError, match="pii_key"):
        _prune(lake, ABSENT_EMAIL, keys, None)
    with pytest.raises(KeyAccessDeniedError, match="pii_key"):
        _prune(lake, ABSENT_EMAIL, keys, cache)
