"""Generate the conformance vectors of specs/vectors: encrypted Parquet files with Bloom filters,
their manifest (keys, layout, EXACT expected probe answers) and negative vectors.

``python -m benchmarks.vectors OUT_DIR [--no-spark]`` (or ``python -m benchmarks vectors``).

* Data: one table from a fixed seed (96 rows, two row groups of 48): INT32, INT64, FLOAT,
  DOUBLE, BYTE_ARRAY (string), FIXED_LEN_BYTE_ARRAY (decimal(30,0), 13 bytes) and INT96
  (timestamp) columns. Master keys are the parquet-testing test keys ``kf`` (footer), ``kc1``
  (i32, i64, f32, f64), ``kc2`` (s, dec, ts), wrapped with the key-list KMS (SPEC_NOTES 7).
  Filters are sized (parquet-java's sizing, 48 distinct values) for fpp 0.3 (i32, f32, s, ts: one
  block, many false positives) or 0.05 (i64, f64, dec: four blocks).
* Positive vectors written by US: pyarrow writes the encrypted file, ``attach_bloom_filters``
  adds the filters, for every footer mode x
  algorithm x wrapping x key-material storage (16 files). Written by PARQUET-JAVA (through
  PySpark; dictionary off so every chunk gets a filter): both footer modes x both algorithms,
  plus single wrapping and external key material (6 files).
* Negative vectors, derived from ``ours_encrypted_gcm_double_internal`` by byte surgery, each
  with the outcome a conforming reader must produce (an authentication error or a named refusal).
* The manifest's expected answers are read from each filter with our reader and checked at
  generation: every stored value must be found. The suite (tests/interop/test_vectors.py) checks
  the COMMITTED files against our reader and parquet-java. AES-GCM nonces are random, so a
  regenerated vector differs byte-wise while its manifest entry (and every answer) is the same.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import hashlib
import json
import re
import shutil
import struct
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["main", "generate", "MASTER_KEYS", "COLUMNS", "NEGATIVE"]

SEED = 20240614
ROWS, ROWS_PER_GROUP = 96, 48
#: Per column: 0.3 gives one 32-byte block (about 14 % false positives among absent values),
#: 0.05 four blocks (the block index formula at work); both are parquet-java's sizing.
FPP = {"i32": 0.3, "i64": 0.05, "f32": 0.3, "f64": 0.05, "s": 0.3, "dec": 0.05, "ts": 0.3}
#: The parquet-testing test keys (SPEC_NOTES 10): for tests only, never for production.
MASTER_KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}
COLUMN_KEYS = {"kc1": ["i32", "i64", "f32", "f64"], "kc2": ["s", "dec", "ts"]}
#: column -> (physical type, BloomProbe value type)
COLUMNS = {"i32": ("INT32", "int32"), "i64": ("INT64", "int64"), "f32": ("FLOAT", "float"),
           "f64": ("DOUBLE", "double"), "s": ("BYTE_ARRAY", "string"),
           "dec": ("FIXED_LEN_BYTE_ARRAY", "binary-hex"), "ts": ("INT96", "binary-hex")}
#: name -> (what is wrong, expected outcome, the secure_bloom error a reader raises)
NEGATIVE = {
    "neg_tampered_header": ("one ciphertext byte of the i32 row group 0 header module (type 8) flipped",
                            "authentication_error", "ModuleAuthenticationError"),
    "neg_tampered_bitset": ("one ciphertext byte of the i32 row group 0 bitset module (type 9) flipped",
                            "authentication_error", "ModuleAuthenticationError"),
    "neg_swapped_row_groups": ("the i32 filters of row groups 0 and 1 exchanged (AAD row-group ordinals differ)",
                               "authentication_error", "ModuleAuthenticationError"),
    "neg_swapped_columns": ("the row group 0 filters of i32 and f32 (same key kc1, same size) exchanged (AAD "
                            "column ordinals differ)", "authentication_error", "ModuleAuthenticationError"),
    "neg_header_bitset_swapped": ("the i32 row group 0 bitset module written before its header module",
                                  "authentication_error", "ModuleAuthenticationError"),
    "neg_truncated_module": ("the i32 row group 0 bitset module's length prefix one byte short (the module "
                             "appears truncated)", "malformed", "MalformedInputError"),
    "neg_wrong_aad_prefix": ("the i32 row group 0 filter encrypted with file AAD 'wrong' | aad_file_unique "
                             "(a wrong AAD prefix)", "authentication_error", "ModuleAuthenticationError"),
    "neg_plaintext_filter": ("plaintext-footer file: the i32 row group 0 filter stored as a PLAINTEXT header + "
                             "bitset although the column is encrypted", "refused_plaintext_filter",
                             "PlaintextFilterOnEncryptedColumnError"),
}


def key_list() -> str:
    return ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in MASTER_KEYS.items())


def _table() -> Any:
    import pyarrow as pa

    rng = np.random.default_rng(SEED)
    i32 = rng.choice(np.arange(-(2**31), 2**31 - 1, 7919, dtype=np.int64), ROWS, replace=False).astype(np.int32)
    i64 = rng.integers(-(2**62), 2**62, ROWS, dtype=np.int64)
    f32 = (rng.standard_normal(ROWS) * 1000).astype(np.float32)
    f64 = rng.standard_normal(ROWS) * 1e6
    strings = [f"user{int(v):08d}@example.com" for v in rng.integers(0, 10**8, ROWS)]
    decimals = [decimal.Decimal(int(v)) * 10**12 + i for i, v in enumerate(rng.integers(-(10**12), 10**12, ROWS))]
    base = dt.datetime(2001, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc)
    ts = [base + dt.timedelta(seconds=int(s), microseconds=int(u))
          for s, u in zip(rng.integers(0, 10**9, ROWS), rng.integers(0, 10**6, ROWS))]
    return pa.table({"i32": pa.array(i32), "i64": pa.array(i64), "f32": pa.array(f32), "f64": pa.array(f64),
                     "s": pa.array(strings), "dec": pa.array(decimals, pa.decimal128(30, 0)),
                     "ts": pa.array(ts, pa.timestamp("us", tz="UTC"))})


def _absent(table: Any) -> dict[str, list[Any]]:
    """Values not in the table, from another seed: 40 per column."""
    rng = np.random.default_rng(SEED + 1)
    present = {name: set(table.column(name).to_pylist()) for name in table.column_names}
    out: dict[str, list[Any]] = {}
    candidates: dict[str, list[Any]] = {
        "i32": [int(v) for v in rng.integers(-(2**31), 2**31, 64)],
        "i64": [int(v) for v in rng.integers(-(2**62), 2**62, 64)],
        "f32": [float(np.float32(v)) for v in rng.standard_normal(64) * 1000],
        "f64": [float(v) for v in rng.standard_normal(64) * 1e6],
        "s": [f"absent{int(v):08d}@example.org" for v in rng.integers(0, 10**8, 64)],  # 64 drawn, 40 kept
        "dec": [decimal.Decimal(int(v)) for v in rng.integers(-(10**15), 10**15, 64)],
        "ts": [dt.datetime(1990, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=int(s))
               for s in rng.integers(0, 10**9, 64)],
    }
    for name, values in candidates.items():
        out[name] = [v for v in values if v not in present[name]][:40]
    return out


def _write_ours(path: Path, table: Any, *, plaintext_footer: bool, algorithm: str, double: bool,
                internal: bool) -> None:
    import pyarrow.parquet as pq
    import pyarrow.parquet.encryption as pe

    from secure_bloom.kms import KeyListKms, pyarrow_kms_client_factory
    from secure_bloom.parquet import KeyAccess, attach_bloom_filters

    tmp = path.with_name("src-" + path.name)
    factory = pe.CryptoFactory(pyarrow_kms_client_factory(KeyListKms(key_list())))
    config = pe.EncryptionConfiguration(footer_key="kf", column_keys=COLUMN_KEYS, plaintext_footer=plaintext_footer,
                                        encryption_algorithm=algorithm, double_wrapping=double,
                                        internal_key_material=internal)
    props = factory.file_encryption_properties(pe.KmsConnectionConfig(), config, parquet_file_path=str(tmp))
    pq.write_table(table, tmp, encryption_properties=props, row_group_size=ROWS_PER_GROUP,
                   use_deprecated_int96_timestamps=True, use_dictionary=False)
    keys = KeyAccess(kms=KeyListKms(key_list()))
    attach_bloom_filters(tmp, path, list(COLUMNS), keys, fpp=dict(FPP))
    tmp.unlink()
    from secure_bloom.kms.sidecar import sidecar_path

    sidecar_path(tmp).unlink(missing_ok=True)


def _write_java(spark: Any, path: Path, table: Any, *, plaintext_footer: bool, algorithm: str, double: bool,
                internal: bool) -> None:
    from secure_bloom.kms.sidecar import sidecar_path
    from secure_bloom.spark.policy import BloomFilterSpec, EncryptionPolicy, KeyListKmsConfig
    from secure_bloom.spark.session import applied_policy

    policy = EncryptionPolicy(
        footer_key="kf", kms=KeyListKmsConfig(key_list()),
        column_keys=COLUMN_KEYS,
        bloom_filters={c: BloomFilterSpec(ndv=ROWS_PER_GROUP, fpp=FPP[c]) for c in COLUMNS},
        plaintext_footer=plaintext_footer, algorithm=algorithm, double_wrapping=double)  # type: ignore[arg-type]
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("i32", T.IntegerType()), T.StructField("i64", T.LongType()),
                           T.StructField("f32", T.FloatType()), T.StructField("f64", T.DoubleType()),
                           T.StructField("s", T.StringType()), T.StructField("dec", T.DecimalType(30, 0)),
                           T.StructField("ts", T.TimestampType())])
    rows = [tuple(row[name] for name in COLUMNS) for row in table.to_pylist()]
    df = spark.createDataFrame(rows, schema).coalesce(1)
    out = path.parent / f"spark-{path.name}"
    with applied_policy(spark, policy):
        (df.write.mode("overwrite")
         .option("parquet.block.row.count.limit", str(ROWS_PER_GROUP))
         .option("parquet.enable.dictionary", "false")
         .option("parquet.encryption.key.material.store.internally", "true" if internal else "false")
         .parquet(str(out)))
    parts = sorted(out.glob("part-*.parquet"))
    if len(parts) != 1:
        raise RuntimeError(f"expected one part file in {out}, found {len(parts)}")
    shutil.copyfile(parts[0], path)
    if not internal:
        shutil.copyfile(sidecar_path(parts[0]), sidecar_path(path))
    shutil.rmtree(out)


PRESENT_PER_ROW_GROUP = 8


def probe_values(table: Any, absent: dict[str, list[Any]]) -> dict[str, list[dict[str, Any]]]:
    """column -> the values every vector is probed with, in order: the first
    PRESENT_PER_ROW_GROUP stored values of each row group (``row_group`` says where), then the
    absent ones (``row_group`` null). Each with its probe text, plain bytes and XXH64."""
    import pyarrow as pa

    from secure_bloom.values import encode_value
    from secure_bloom.values.physical import hash_value, plain_bytes

    out: dict[str, list[dict[str, Any]]] = {}
    schema = pa.schema([table.schema.field(name) for name in COLUMNS])
    infos = _column_infos(schema)
    for name, (_, value_type) in COLUMNS.items():
        values: list[tuple[Any, int | None]] = []
        for rg in range(ROWS // ROWS_PER_GROUP):
            start = rg * ROWS_PER_GROUP
            values += [(v, rg) for v in table.column(name).to_pylist()[start:start + PRESENT_PER_ROW_GROUP]]
        values += [(v, None) for v in absent[name]]
        info = infos[name]
        rows = []
        for value, where in values:
            raw = plain_bytes(encode_value(value, info), info.physical_type, type_length=info.type_length)
            rows.append({"value": _probe_text(value, raw, value_type), "plain_hex": raw.hex(),
                         "xxh64": f"{hash_value(raw, 'BYTE_ARRAY'):016x}", "row_group": where})
        out[name] = rows
    return out


def _column_infos(schema: Any) -> dict[str, Any]:
    """ColumnInfo of each column as our writers store it (from a throwaway plaintext file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from secure_bloom.parquet import ParquetBloomReader

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "schema.parquet"
        pq.write_table(pa.Table.from_pylist([], schema=schema), path, use_deprecated_int96_timestamps=True)
        with ParquetBloomReader(path) as reader:
            return {c.path: c for c in reader.columns}


def _entry(path: Path, writer: str, variant: dict[str, Any], probes: dict[str, list[dict[str, Any]]]
           ) -> dict[str, Any]:
    """The manifest entry of one positive vector, read back with our reader: per row group and
    column the filter's storage, size, bitset digest and the expected answer of every probe
    value ("1" maybe, "0" absent; aligned with ``probe_values[column]``)."""
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader

    keys = KeyAccess(kms=KeyListKms(key_list()))
    entry: dict[str, Any] = {"file": path.name, "writer": writer, **variant, "row_groups": []}
    with ParquetBloomReader(path, keys=keys) as reader:
        entry["footer_mode"] = str(reader.footer.mode)
        entry["algorithm"] = reader.footer.params.algorithm if reader.footer.params else None
        entry["num_rows"] = reader.num_rows
        entry["footer_master_key"] = reader.footer_key_id
        entry["column_master_keys"] = {c.path: c.key_id for c in reader.columns}
        for rg in range(reader.num_row_groups):
            columns = {}
            for name, (ptype, _) in COLUMNS.items():
                chunk = reader.chunk(rg, name)
                bf = reader.bloom_filter(rg, name)
                if bf is None:
                    columns[name] = {"has_filter": False, "stored": "none"}
                    continue
                answers = ""
                for p in probes[name]:
                    found = bf.check_hash(int(p["xxh64"], 16))
                    if p["row_group"] == rg and not found:
                        raise AssertionError(f"{path.name}: rg {rg} {name}: stored value {p['value']!r} not in its filter")
                    answers += "1" if found else "0"
                columns[name] = {
                    "has_filter": True,
                    "stored": ("encrypted_column_key" if chunk.encryption.value == "column_key" else
                               "encrypted_footer_key" if chunk.encrypted else "plaintext"),
                    "num_bytes": bf.num_bytes, "bitset_sha256": hashlib.sha256(bf.bitset).hexdigest(),
                    "expected": answers,
                    "false_positives": sum(a == "1" and p["row_group"] is None for a, p in zip(answers, probes[name]))}
            entry["row_groups"].append({"row_group": rg, "columns": columns})
    return entry


def _probe_text(value: Any, raw: bytes, value_type: str) -> Any:
    if value_type in ("int32", "int64"):
        return int(value)
    if value_type in ("float", "double"):
        return repr(float(value))
    if value_type == "string":
        return str(value)
    return raw.hex()


# --- negative vectors ------------------------------------------------------------------------


def _regions(path: Path) -> dict[tuple[int, str], tuple[int, int]]:
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader

    with ParquetBloomReader(path, keys=KeyAccess(kms=KeyListKms(key_list()))) as reader:
        out = {}
        for chunk in reader.chunks(with_sizes=False):
            assert chunk.bloom_filter_offset is not None and chunk.bloom_filter_length is not None
            out[(chunk.row_group, chunk.column)] = (chunk.bloom_filter_offset, chunk.bloom_filter_length)
        return out


def _flip(data: bytearray, at: int) -> None:
    data[at] ^= 0x01


def _make_negative(name: str, base: Path, plaintext_base: Path) -> bytes:
    from secure_bloom.encrypted_filter import encrypt_bloom_filter
    from secure_bloom.header import serialize_header
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader

    source = plaintext_base if name == "neg_plaintext_filter" else base
    data = bytearray(source.read_bytes())
    regions = _regions(source)
    off, length = regions[(0, "i32")]
    header_len = struct.unpack_from("<I", data, off)[0]
    bitset_at = off + 4 + header_len
    bitset_len = struct.unpack_from("<I", data, bitset_at)[0]
    region = bytes(data[off:off + length])
    if name == "neg_tampered_header":
        _flip(data, off + 4 + 12)
    elif name == "neg_tampered_bitset":
        _flip(data, bitset_at + 4 + 12)
    elif name in ("neg_swapped_row_groups", "neg_swapped_columns"):
        other = regions[(1, "i32")] if name == "neg_swapped_row_groups" else regions[(0, "f32")]
        if other[1] != length:
            raise AssertionError(f"{name}: the two filters differ in size ({length} vs {other[1]})")
        data[off:off + length], data[other[0]:other[0] + length] = \
            data[other[0]:other[0] + length], region
    elif name == "neg_header_bitset_swapped":
        header_module, bitset_module = region[:4 + header_len], region[4 + header_len:]
        data[off:off + length] = bitset_module + header_module
    elif name == "neg_truncated_module":
        struct.pack_into("<I", data, bitset_at, bitset_len - 1)
    elif name in ("neg_wrong_aad_prefix", "neg_plaintext_filter"):
        keys = KeyAccess(kms=KeyListKms(key_list()))
        with ParquetBloomReader(source, keys=keys) as reader:
            bf = reader.bloom_filter(0, "i32")
            chunk = reader.chunk(0, "i32")
            key = reader.key_for(chunk)
            unique = reader.footer.params.aad_file_unique  # type: ignore[union-attr]
        assert bf is not None
        if name == "neg_wrong_aad_prefix":
            blob = encrypt_bloom_filter(bf, key, b"wrong" + unique, 0, chunk.column_ordinal)
        else:  # a plaintext filter filling the encrypted filter's bytes exactly (numBytes need not be k*32)
            total = next(n for n in range(length, 0, -1) if len(serialize_header(n)) + n == length)
            blob = serialize_header(total) + bf.bitset + bytes(total - bf.num_bytes)
        if len(blob) != length:
            raise AssertionError(f"{name}: {len(blob)} bytes replace {length}")
        data[off:off + length] = blob
    else:
        raise ValueError(name)
    return bytes(data)


def _negative_entry(name: str, path: Path, base: Path, plaintext_base: Path) -> dict[str, Any]:
    from secure_bloom import errors
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader

    what, outcome, error_name = NEGATIVE[name]
    try:
        with ParquetBloomReader(path, keys=KeyAccess(kms=KeyListKms(key_list()))) as reader:
            reader.bloom_filter(0, "i32")
    except errors.SecureBloomError as e:
        if not isinstance(e, getattr(errors, error_name)):
            raise AssertionError(f"{name}: our reader raised {type(e).__name__}, expected {error_name}") from e
    else:
        raise AssertionError(f"{name}: our reader read the filter")
    derived = plaintext_base if name == "neg_plaintext_filter" else base
    return {"file": path.name, "derived_from": derived.name, "what": what, "row_group": 0, "column": "i32",
            "expected_outcome": outcome, "secure_bloom_error": error_name}


# --- driver ----------------------------------------------------------------------------------


def _variants() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for footer in ("encrypted", "plaintext"):
        for algorithm in ("AES_GCM_V1", "AES_GCM_CTR_V1"):
            for double in (True, False):
                for internal in (True, False):
                    name = (f"{'enc' if footer == 'encrypted' else 'pf'}_{'gcm' if algorithm == 'AES_GCM_V1' else 'ctr'}"
                            f"_{'double' if double else 'single'}_{'internal' if internal else 'external'}")
                    out.append((name, {"plaintext_footer": footer == "plaintext", "algorithm_requested": algorithm,
                                       "double_wrapping": double, "internal_key_material": internal}))
    return out


JAVA_VARIANTS = ["enc_gcm_double_internal", "enc_ctr_double_internal", "pf_gcm_double_internal",
                 "pf_ctr_double_internal", "enc_gcm_single_internal", "enc_gcm_double_external"]


def generate(out: Path, *, spark: bool = True, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Write every vector and ``manifest.json`` into ``out`` (created empty)."""
    out.mkdir(parents=True, exist_ok=True)
    table = _table()
    absent = _absent(table)
    manifest: dict[str, Any] = {
        "format": "secure-bloom conformance vectors", "version": 1,
        "generator": "python -m benchmarks.vectors (seed %d)" % SEED,
        "license": "Apache-2.0", "keys": {
            "note": "parquet-testing test keys: for tests only, never for production",
            "master_keys_utf8": {k: v.decode() for k, v in MASTER_KEYS.items()},
            "key_list": key_list(),
            "kms": "parquet-java key-list KMS (wrap = AES-GCM under the master key, AAD = master key id)",
            "column_keys": COLUMN_KEYS, "footer_key": "kf"},
        "rows": ROWS, "rows_per_row_group": ROWS_PER_GROUP, "fpp": FPP,
        "columns": {name: {"physical_type": ptype, "value_type": value_type}
                    for name, (ptype, value_type) in COLUMNS.items()},
        "probe_values": probe_values(table, absent), "positive": [], "negative": []}
    variants = dict(_variants())
    for name, variant in variants.items():
        path = out / f"ours_{name}.parquet.encrypted"
        _write_ours(path, table, plaintext_footer=variant["plaintext_footer"], algorithm=variant["algorithm_requested"],
                    double=variant["double_wrapping"], internal=variant["internal_key_material"])
        manifest["positive"].append(_entry(path, "secure_bloom attach (data: pyarrow)", variant, manifest["probe_values"]))
        log(f"wrote {path.name}")
    if spark:
        from secure_bloom.spark.session import local_spark

        session = local_spark("secure-bloom-vectors", cores=1)
        try:
            session.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
            session.conf.set("spark.sql.session.timeZone", "UTC")
            for name in JAVA_VARIANTS:
                variant = variants[name]
                path = out / f"java_{name}.parquet.encrypted"
                _write_java(session, path, table, plaintext_footer=variant["plaintext_footer"],
                            algorithm=variant["algorithm_requested"], double=variant["double_wrapping"],
                            internal=variant["internal_key_material"])
                manifest["positive"].append(_entry(path, "parquet-java (Spark)", variant, manifest["probe_values"]))
                log(f"wrote {path.name}")
        finally:
            session.stop()
    base = out / "ours_enc_gcm_double_internal.parquet.encrypted"
    plaintext_base = out / "ours_pf_gcm_double_internal.parquet.encrypted"
    for name in NEGATIVE:
        path = out / f"{name}.parquet.encrypted"
        path.write_bytes(_make_negative(name, base, plaintext_base))
        manifest["negative"].append(_negative_entry(name, path, base, plaintext_base))
        log(f"wrote {path.name}")
    files = sorted(p for p in out.iterdir() if p.is_file() and p.name != "manifest.json")
    manifest["total_bytes"] = sum(p.stat().st_size for p in files)
    (out / "manifest.json").write_text(_dumps(manifest) + "\n")
    return manifest


def _dumps(manifest: dict[str, Any]) -> str:
    """Indented JSON with each innermost object on one line (small, yet diffable)."""
    text = json.dumps(manifest, indent=1)
    return re.sub(r"\{\n\s*([^{}\[\]]*?)\n\s*\}", lambda m: "{" + " ".join(m.group(1).split()) + "}", text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks vectors", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory to write (its vectors are replaced)")
    parser.add_argument("--no-spark", action="store_true", help="skip the parquet-java (PySpark) vectors")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.out.parent if args.out.parent.exists() else None) as tmp:
        work = Path(tmp) / "vectors"
        manifest = generate(work, spark=not args.no_spark)
        args.out.mkdir(parents=True, exist_ok=True)
        for old in args.out.glob("*.parquet.encrypted"):
            old.unlink()
        for old in args.out.glob("_KEY_MATERIAL_FOR_*.json"):
            old.unlink()
        for p in work.iterdir():
            shutil.copyfile(p, args.out / p.name)
    print(f"{len(manifest['positive'])} positive and {len(manifest['negative'])} negative vectors, "
          f"{manifest['total_bytes']} bytes, in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
