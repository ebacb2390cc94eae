"""The JVM side: our jar, KMS clients and harnesses, and Spark writing encrypted Bloom filters that
parquet-java reads back through its own decryption (SPEC_NOTES 4-7)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import xxhash
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from support.openbao_server import OpenBaoServer
from secure_bloom.errors import JavaNotFoundError, JvmError
from secure_bloom.spark.jvm import run_java, secure_bloom_jar, spark_version
from benchmarks.parquet_java import (
    ColumnProbe,
    bloom_bench,
    bloom_probe,
    format_value,
    harness_jar,
    java_hashes,
    run_harness,
    write_int64_values,
    write_string_values,
)
from secure_bloom.spark.policy import KeyListKmsConfig, TransitKmsConfig
from secure_bloom.spark.session import applied_policy, configure_spark
from support.spark_bloom_data import (
    ExpectedColumn,
    SparkBloomFiles,
    make_policy,
    random_key_list,
    standard_dataframe,
    write_parquet,
)
from support.parquet_java_checks import checks_jar, kms_unwrap, kms_wrap
from support.paths import VECTORS_DIR

pytestmark = pytest.mark.interop

DATA = VECTORS_DIR
TESTING_KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}
TESTING_KEY_LIST = ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in TESTING_KEYS.items())
KEY_LIST_CONF = {"parquet.encryption.kms.client.class": "io.securebloom.KeyListKmsClient"}


# --- the jar -------------------------------------------------------------------------------------


def _classes(jar: Path) -> set[str]:
    with zipfile.ZipFile(jar) as z:
        return {n for n in z.namelist() if n.endswith(".class") and "$" not in n}


def test_production_jar_holds_only_the_kms_clients(tmp_path: Path) -> None:
    """What configure_spark puts on Spark's class path: the KMS clients and their shared HTTP
    exchange (JSON by parquet-java's own shaded Jackson, no parser of ours), never a test harness."""
    assert _classes(secure_bloom_jar(tmp_path / "jars")) == {
        "io/securebloom/KeyListKmsClient.class", "io/securebloom/VaultTransitKmsClient.class",
        "io/securebloom/AwsKmsClient.class", "io/securebloom/AwsSigV4.class",
        "io/securebloom/KmsKeyDisabledException.class", "io/securebloom/KmsHttp.class"}


def test_harness_jar_is_separate(tmp_path: Path) -> None:
    cache = tmp_path / "jars"
    harness = harness_jar(cache)
    assert harness != secure_bloom_jar(cache)
    assert _classes(harness) == {"io/securebloom/BloomProbe.class", "io/securebloom/BloomBench.class",
                                 "io/securebloom/Cli.class"}
    assert not _classes(harness) & _classes(secure_bloom_jar(cache))
    # the checks only the tests run (tests/support/java) compile into a third jar, never shipped
    assert _classes(checks_jar(cache)) == {"io/securebloom/BloomVerify.class", "io/securebloom/KmsTool.class",
                                           "io/securebloom/SigV4Tool.class"}


def test_jar_is_built_once_and_cached(tmp_path: Path) -> None:
    cache = tmp_path / "jars"
    jar = secure_bloom_jar(cache)
    assert jar.parent == cache and len(jar.stem) == 64
    before = jar.stat()
    again = secure_bloom_jar(cache)
    after = again.stat()
    assert again == jar
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) == [jar.name]
    assert not list(cache.glob(".build-*"))


def test_concurrent_builds_share_one_jar(tmp_path: Path) -> None:
    cache = tmp_path / "jars"
    code = ("import sys; from pathlib import Path; from secure_bloom.spark.jvm import secure_bloom_jar;"
            "print(secure_bloom_jar(Path(sys.argv[1])))")
    import secure_bloom  # the subprocesses import the very same copy

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(secure_bloom.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(cache)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    paths = {o[0].strip() for o in outs}
    assert len(paths) == 1
    with zipfile.ZipFile(paths.pop()) as z:
        assert z.testzip() is None
    assert not list(cache.glob(".build-*"))


def test_run_java_reports_harness_errors() -> None:
    proc = run_harness("BloomProbe", ["x.parquet", "--bogus", "1"], timeout=60)
    assert proc.returncode == 2
    err = json.loads(proc.stderr.strip().splitlines()[-1])
    assert "unknown option --bogus" in err["error"]


def test_missing_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match="java not found.*JAVA_HOME"):
        run_java("io.securebloom.KeyListKmsClient", [])
    with pytest.raises(FileNotFoundError, match="javac not found"):
        secure_bloom_jar(tmp_path / "jars")


def test_configure_spark_sets_class_path_and_non_secret_policy() -> None:
    from pyspark.sql import SparkSession

    policy = make_policy(KeyListKmsConfig(random_key_list()), ("s",))
    builder = configure_spark(SparkSession.Builder().config("spark.driver.extraClassPath", "/x.jar"),
                              policy)
    options = dict(builder._options)
    jar = str(secure_bloom_jar())
    assert options["spark.driver.extraClassPath"] == os.pathsep.join([jar, "/x.jar"])
    assert options["spark.executor.extraClassPath"] == jar
    assert options["spark.jars"] == jar
    assert options["spark.hadoop.parquet.encryption.column.keys"] == "kc2:s"
    assert options["spark.hadoop.parquet.bloom.filter.enabled#s"] == "true"
    assert options["spark.hadoop.parquet.encryption.kms.client.class"] == "io.securebloom.KeyListKmsClient"
    assert not any("key.list" in k or "token" in k for k in options)


def test_spark_version_is_what_pyspark_ships() -> None:
    import pyspark

    assert spark_version() == pyspark.__version__


# --- hashing and the key-list KMS -----------------------------------------------------------------


def test_java_hashes_match_spec_vectors() -> None:
    """SPEC_NOTES 2: parquet-java's BloomFilter.hash == XXH64 seed 0 of the plain encoding."""
    assert java_hashes("string", ["", "hello", "a", "abc"]) == {
        "": 0xEF46DB3751D8E999, "hello": 0x26C7827D889F6DA3,
        "a": 0xD24EC4F1A98C6E5B, "abc": 0x44BC2CF5AD770999}
    assert java_hashes("int64", [0, 1, -1]) == {
        "0": 0x34C96ACDCADB1BBB, "1": 0x9F29CB17A2A49995, "-1": 0x85D136ADB773C6C9}
    assert java_hashes("int32", [0, 42]) == {"0": 0x3AEFA6FD5CF2DEB4, "42": 0xD756D7B62FC50BF1}
    assert java_hashes("double", [1.5]) == {"1.5": 0x49F7B96B6B5CCAF9}
    assert java_hashes("float", [1.5]) == {"1.5": 0x4F2D82595C483A0D}
    assert java_hashes("binary-hex", [b"hello"]) == {"68656c6c6f": 0x26C7827D889F6DA3}
    special = java_hashes("double", [float("nan"), float("inf"), -0.0, 0.0])
    assert set(special) == {"NaN", "Infinity", "-0.0", "0.0"}
    assert special["-0.0"] != special["0.0"]  # hashed by bit pattern (SPEC_NOTES 2)
    for text, value in (("NaN", float("nan")), ("Infinity", float("inf")), ("-0.0", -0.0)):
        assert special[text] == xxhash.xxh64_intdigest(struct.pack("<d", value))


def test_key_list_client_wraps_like_parquet_java() -> None:
    """wrap = Base64(nonce 12 | AES-GCM ciphertext | tag 16), AAD = master key id (SPEC_NOTES 7),
    checked against an independent AES-GCM in both directions."""
    master = os.urandom(32)
    conf = dict(KEY_LIST_CONF, **{"parquet.encryption.key.list":
                                  f"mk.1:{base64.b64encode(master).decode()}"})
    dek = os.urandom(16)
    wrapped = base64.b64decode(kms_wrap("KeyListKmsClient", "mk.1", dek, conf))
    assert len(wrapped) == 12 + 16 + 16
    assert AESGCM(master).decrypt(wrapped[:12], wrapped[12:], b"mk.1") == dek

    other = os.urandom(24)
    nonce = os.urandom(12)
    ours = base64.b64encode(nonce + AESGCM(master).encrypt(nonce, other, b"mk.1")).decode()
    assert kms_unwrap("KeyListKmsClient", "mk.1", ours, conf) == (24, hashlib.sha256(other).hexdigest())


def test_key_list_client_refuses_wrong_id_and_unknown_id() -> None:
    master = os.urandom(16)
    b64 = base64.b64encode(master).decode()
    conf = dict(KEY_LIST_CONF, **{"parquet.encryption.key.list": f"a:{b64}, b:{b64}"})
    wrapped = kms_wrap("KeyListKmsClient", "a", os.urandom(16), conf)
    with pytest.raises(JvmError, match="master key 'b'.*failed authentication") as err:
        kms_unwrap("KeyListKmsClient", "b", wrapped, conf)  # same key bytes, other AAD
    assert b64 not in str(err.value)
    with pytest.raises(JvmError, match="KeyAccessDeniedException.*'zz'") as err:
        kms_wrap("KeyListKmsClient", "zz", os.urandom(16), conf)
    assert b64 not in str(err.value)


def test_key_list_client_reads_parquet_java_key_material() -> None:
    """A file parquet-java wrote with its own key-list KMS (external key material, double
    wrapping) opens through KeyListKmsClient: footer and column keys unwrap."""
    conf = {"parquet.crypto.factory.class":
            "org.apache.parquet.crypto.keytools.PropertiesDrivenCryptoFactory",
            **KEY_LIST_CONF, "parquet.encryption.key.list": TESTING_KEY_LIST}
    result = bloom_probe(DATA / "external_key_material_java.parquet.encrypted", (), conf,
                         all_columns=True)
    assert result["encryption"] == "ENCRYPTED_FOOTER"
    assert result["num_row_groups"] >= 1
    encrypted = {c for c, v in result["columns"].items() if v["encrypted"]}
    assert encrypted  # column metadata decrypted with unwrapped column keys
    wrong = dict(conf, **{"parquet.encryption.key.list": random_key_list()})
    with pytest.raises(JvmError, match="BloomProbe exited with 1: .*ParquetCryptoRuntimeException: Unwrapping with "
                       "master key '(kf|kc1|kc2)' failed authentication"):
        bloom_probe(DATA / "external_key_material_java.parquet.encrypted", (), wrong)


def test_bloom_probe_reads_parquet_testing_encrypted_filters() -> None:
    """The harness against a known file: parquet-java 1.14, explicit keys, double_field = i + 0.5
    and float_field = float32(i + 0.25) for i < 2000 in encrypted filters (SPEC_NOTES 10)."""
    conf = {"secure_bloom.probe.explicit.keys": TESTING_KEY_LIST}
    present = [float(i) + 0.5 for i in range(0, 2000, 7)]
    absent = [float(i) + 0.5 for i in range(2000, 2200)]
    result = bloom_probe(
        DATA / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted",
        [ColumnProbe("double_field", "double", tuple(present + absent)),
         ColumnProbe("float_field", "float", tuple(i + 0.25 for i in range(0, 2000, 7)))],
        conf, bitset_sha256=True)
    assert result["encryption"] == "ENCRYPTED_FOOTER"
    double = result["columns"]["double_field"]
    assert double["encrypted"] and double["physical_type"] == "DOUBLE"
    (rg,) = double["row_groups"]
    assert rg["has_bloom_filter"] and rg["num_bytes"] == 2048
    assert all(rg["found"][format_value(v, "double")] for v in present)
    assert sum(rg["found"][format_value(v, "double")] for v in absent) <= len(absent) // 20
    assert all(result["columns"]["float_field"]["row_groups"][0]["found"].values())
    assert len(rg["bitset_sha256"]) == 64


# --- Spark writes, parquet-java reads ---------------------------------------------------------------


def _probes(columns: dict[str, ExpectedColumn], step: int = 10) -> list[ColumnProbe]:
    """Every ``step``-th value of each row group, plus the absent ones."""
    probes = []
    for col in columns.values():
        values = [v for group in col.row_groups for v in group[::step]]
        probes.append(ColumnProbe(col.path, col.value_type, tuple(values) + col.absent))  # type: ignore[arg-type]
    return probes


def _check_probe(result: dict[str, Any], columns: dict[str, ExpectedColumn], step: int = 10) -> None:
    for col in columns.values():
        got = result["columns"][col.path]
        assert got["physical_type"] == col.physical_type, col.path
        assert got["encrypted"] == (col.master_key is not None), col.path
        assert len(got["row_groups"]) == len(col.row_groups)
        for g, (rg, values) in enumerate(zip(got["row_groups"], col.row_groups)):
            assert rg["num_rows"] == len(values)
            assert rg["has_bloom_filter"] == col.has_filter, (col.path, g)
            found = rg["found"]
            if not col.has_filter:
                assert set(found.values()) == {None}
                continue
            assert rg["num_bytes"] == 2048  # ndv 1000, fpp 0.01
            here = [format_value(v, col.value_type) for v in values[::step]]  # type: ignore[arg-type]
            assert all(found[k] for k in here), (col.path, g)  # no false negatives
            others = [format_value(v, col.value_type)  # type: ignore[arg-type]
                      for h, other in enumerate(col.row_groups) if h != g for v in other[::step]]
            others += [format_value(v, col.value_type) for v in col.absent]  # type: ignore[arg-type]
            false_positives = sum(bool(found[k]) for k in others)
            assert false_positives <= len(others) * 0.05, (col.path, g, false_positives)


@pytest.fixture(scope="module")
def bitset_digests() -> dict[str, list[str]]:
    """Decrypted bitset digests of the variants probed so far (module scope)."""
    return {}


@pytest.mark.parametrize("variant", ["gcm_footer", "gcm_plaintext_footer", "ctr_footer",
                                     "ctr_plaintext_footer"])
def test_parquet_java_reads_spark_encrypted_filters(spark_bloom_files: SparkBloomFiles, variant: str,
                                                    bitset_digests: dict[str, list[str]]) -> None:
    f = spark_bloom_files.files[variant]
    result = bloom_probe(f.path, _probes(dict(spark_bloom_files.columns)), f.hadoop_conf(),
                         bitset_sha256=True)
    assert result["encryption"] == ("PLAINTEXT_FOOTER" if f.plaintext_footer else "ENCRYPTED_FOOTER")
    assert result["num_row_groups"] == 3
    _check_probe(result, dict(spark_bloom_files.columns))
    # Encryption wraps a filter and leaves its bitset alone: every variant decrypts to the same.
    digests = [rg.get("bitset_sha256", "") for c in result["columns"].values() for rg in c["row_groups"]]
    for other, seen in bitset_digests.items():
        assert digests == seen, (variant, other)
    bitset_digests[variant] = digests


def test_spark_reads_back_only_with_the_keys(spark: Any, spark_bloom_files: SparkBloomFiles) -> None:
    from py4j.protocol import Py4JJavaError  # pyspark's JVM bridge, present with the spark fixture

    f = spark_bloom_files.files["gcm_footer"]
    with applied_policy(spark, f.policy):
        rows = spark.read.parquet(str(f.path)).orderBy("i32").collect()
    assert len(rows) == spark_bloom_files.num_rows
    col = spark_bloom_files.columns
    assert [r["s"] for r in rows[:3]] == list(col["s"].row_groups[0][:3])
    assert rows[2999]["nested"]["x"] == col["nested.x"].row_groups[2][-1]
    with pytest.raises(Py4JJavaError, match="Caused by: org.apache.parquet.crypto.ParquetCryptoRuntimeException: "
                       "Trying to read file with encrypted footer. No keys available"):
        spark.read.parquet(str(f.path)).collect()  # no policy: the footer is encrypted
    wrong = make_policy(KeyListKmsConfig(random_key_list()))
    with applied_policy(spark, wrong), pytest.raises(
            Py4JJavaError, match="Caused by: org.apache.parquet.crypto.ParquetCryptoRuntimeException: Unwrapping "
                                 "with master key 'kf' failed authentication"):
        spark.read.parquet(str(f.path)).collect()


def test_writer_options_and_int96(spark: Any, tmp_path: Path) -> None:
    """Bloom filter settings given only as DataFrameWriter options (the session holding the keys)
    take effect. The INT96 timestamp (Spark's default type) gets no filter here because its 1,000
    distinct values stay all dictionary-encoded (parquet-java skips such chunks, SPEC_NOTES 6); a
    high-cardinality INT96 column does get filters (tests/interop/test_spark_int96.py)."""
    with_blooms = make_policy(KeyListKmsConfig(random_key_list()), ("i64", "s", "ts"))
    session_policy = type(with_blooms)(footer_key="kf", kms=with_blooms.kms,
                                       column_keys=with_blooms.column_keys)
    assert not any("bloom" in k for k in session_policy.hadoop_conf())
    df = standard_dataframe(spark).select("i64", "s", "ts").limit(1000)
    out = tmp_path / "opts"
    assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "INT96"
    with applied_policy(spark, session_policy):
        df.write.options(**with_blooms.write_options()).parquet(str(out))
    (path,) = out.glob("part-*.parquet")
    result = bloom_probe(path, [ColumnProbe("i64", "int64", (3,)), ColumnProbe("s", "string", ("user-00000-\u00e9",)),
                                ColumnProbe("ts", "binary-hex")], with_blooms.hadoop_conf())
    cols = result["columns"]
    assert cols["i64"]["row_groups"][0]["found"] == {"3": True}
    assert cols["s"]["row_groups"][0]["found"] == {"user-00000-\u00e9": True}
    assert cols["ts"]["physical_type"] == "INT96" and cols["ts"]["encrypted"]
    assert [rg["has_bloom_filter"] for rg in cols["ts"]["row_groups"]] == [False]


# --- OpenBao / Vault transit --------------------------------------------------------------------


def _transit_conf(server: OpenBaoServer, token: str | None = None) -> dict[str, str]:
    return {"parquet.encryption.kms.instance.url": server.url,
            "parquet.encryption.key.access.token": token or server.token}


def _create_keys(server: OpenBaoServer, *names: str) -> None:
    for name in names:
        status, _ = server.request("POST", f"transit/keys/{name}", {})
        assert status in (200, 204), status


@pytest.mark.kms
def test_transit_client_wire_format_both_ways(openbao: OpenBaoServer) -> None:
    """Keys wrapped by the JVM client unwrap through the plain HTTP API and vice versa."""
    _create_keys(openbao, "wire")
    conf = _transit_conf(openbao)
    dek = os.urandom(16)
    wrapped = kms_wrap("VaultTransitKmsClient", "wire", dek, conf)
    assert wrapped.startswith("vault:v1:")
    status, body = openbao.request("POST", "transit/decrypt/wire", {"ciphertext": wrapped})
    assert status == 200 and base64.b64decode(body["data"]["plaintext"]) == dek  # type: ignore[index]

    other = os.urandom(32)
    status, body = openbao.request("POST", "transit/encrypt/wire",
                                   {"plaintext": base64.b64encode(other).decode()})
    assert status == 200
    theirs = body["data"]["ciphertext"]  # type: ignore[index]
    assert kms_unwrap("VaultTransitKmsClient", "wire", theirs, conf) == (32, hashlib.sha256(other).hexdigest())


@pytest.mark.kms
def test_transit_client_errors(openbao: OpenBaoServer) -> None:
    _create_keys(openbao, "errs")
    openbao.put_policy("nothing", 'path "sys/nothing" { capabilities = ["read"] }')
    weak = openbao.create_token(["nothing"])
    with pytest.raises(JvmError, match="KeyAccessDeniedException.*'errs'.*403") as err:
        kms_wrap("VaultTransitKmsClient", "errs", os.urandom(16), _transit_conf(openbao, weak))
    assert weak not in str(err.value) and openbao.token not in str(err.value)
    wrapped = kms_wrap("VaultTransitKmsClient", "errs", os.urandom(16), _transit_conf(openbao))
    with pytest.raises(JvmError, match="'no-such-key'.*HTTP 400"):
        kms_unwrap("VaultTransitKmsClient", "no-such-key", wrapped, _transit_conf(openbao))
    with pytest.raises(JvmError, match="mount path"):
        kms_wrap("VaultTransitKmsClient", "errs", os.urandom(16),
                 dict(_transit_conf(openbao), **{"secure_bloom.kms.transit.mount": "a b"}))
    with pytest.raises(JvmError, match="set parquet.encryption.kms.instance.url"):
        kms_wrap("VaultTransitKmsClient", "errs", os.urandom(16),
                 {"parquet.encryption.key.access.token": openbao.token})


@pytest.mark.kms
def test_spark_writes_and_reads_with_openbao_transit(spark: Any, openbao: OpenBaoServer,
                                                     tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _create_keys(openbao, "kf", "kc1", "kc2")
    monkeypatch.setenv("SB_TEST_BAO_TOKEN", openbao.token)
    policy = make_policy(TransitKmsConfig(openbao.url, token_env="SB_TEST_BAO_TOKEN"),
                         ("i32", "s", "pub"))
    df = standard_dataframe(spark).select("i32", "s", "pub").limit(2000)
    path = write_parquet(spark, df, tmp_path / "transit", policy)
    with applied_policy(spark, policy):
        assert spark.read.parquet(str(path)).count() == 2000
    result = bloom_probe(path, [ColumnProbe("i32", "int32", (-10_000, 1_000 * 7 - 10_000)),
                                ColumnProbe("s", "string", ("user-01999-\u00e9",))],
                         policy.hadoop_conf())
    assert result["encryption"] == "ENCRYPTED_FOOTER"
    i32 = result["columns"]["i32"]
    assert i32["encrypted"]
    assert [rg["found"]["-10000"] for rg in i32["row_groups"]] == [True, False]
    assert [rg["found"]["-3000"] for rg in i32["row_groups"]] == [False, True]
    assert result["columns"]["s"]["row_groups"][1]["found"]["user-01999-\u00e9"] is True
    # The data keys are wrapped by OpenBao: without a valid token nothing opens.
    revoked = dict(policy.hadoop_conf(), **{"parquet.encryption.key.access.token": "not-a-token"})
    with pytest.raises(JvmError, match="KeyAccessDenied|403"):
        bloom_probe(path, [], revoked)


# --- the benchmark harness ----------------------------------------------------------------------


def test_bloom_bench_does_the_work(tmp_path: Path) -> None:
    ints = tmp_path / "ints.bin"
    n = write_int64_values(ints, (i * 2_654_435_761 for i in range(20_000)))
    out = bloom_bench("int64", ints, num_bytes=1 << 15, warmup=1, reps=2)
    assert out["impl"] == "parquet-java" and out["kind"] == "int64"
    assert out["n"] == n and out["found"] == n and out["found_hash_check"] == n
    assert out["num_bytes"] == 1 << 15
    assert set(out["ns_per_value"]) == {"hash", "insert", "hash_insert", "check", "hash_check"}
    assert all(v > 0 for v in out["ns_per_value"].values())

    strings = tmp_path / "strings.bin"
    write_string_values(strings, (f"value-{i}-\u00e9" for i in range(5_000)))
    out = bloom_bench("string", strings, n=4_000, num_bytes=1 << 12, warmup=0, reps=1)
    assert out["n"] == 4_000 and out["found"] == 4_000 and out["num_bytes"] == 1 << 12
    with pytest.raises(JvmError, match="exceeds"):
        bloom_bench("string", strings, n=6_000, warmup=0, reps=1)
