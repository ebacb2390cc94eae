"""Secret hygiene with canary keys: every CLI command and the file-layer API entry points, on their
success and failure paths, keep key bytes out of stdout, stderr, logs (DEBUG), exception
messages, tracebacks and reprs.

Secrets watched, each in raw, hex (both cases) and Base64 (padded, unpadded, URL-safe) form:
the canary master keys of the key-list KMS, the data keys and KEKs they protect (unwrapped here
from the files' key material), explicit keys given on the command line, and a KMS token. The
failure message reports how many forms leaked, never the secret. (tests/robustness/test_kms_canary.py
covers the objects of secure_bloom.kms one by one.)
"""

from __future__ import annotations

import base64
import logging
import os
import subprocess
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest
from support.parquet_files import COLUMN_KEYS, crypto_factory, sample_table
from support.robustness_support import DATA
from support.paths import CLI_PROCESS

from secure_bloom import cli
from secure_bloom.errors import SecureBloomError
from secure_bloom.kms import KeyUnwrapper, KeyListKms, KeyMaterialStore, KeyMetadata, sidecar_path
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, PruneCache
from secure_bloom.parquet.write.attach import attach_bloom_filters
from secure_bloom.parquet.audit.auditor import audit
from secure_bloom.parquet.read.api import dataset, scan

MASTER = {"kf": b"CANARY-footer-k1", "kc1": b"CANARY-column-k2", "kc2": b"CANARY-column-k3"}
KEY_LIST = ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in MASTER.items())
VECTOR_KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}
TOKEN = "s.CANARYtoken7f3e9a1b2c4d"
BLOOM_VECTOR = DATA / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
UNIFORM_VECTOR = DATA / "uniform_encryption.parquet.encrypted"


def forms(secret: bytes) -> set[str]:
    b64 = base64.b64encode(secret).decode()
    out = {secret.hex(), secret.hex().upper(), b64, b64.rstrip("="), base64.urlsafe_b64encode(secret).decode()}
    try:
        out.add(secret.decode("ascii"))
    except UnicodeDecodeError:
        pass
    return out | {f[:12] for f in out if len(f) >= 12}


class Secrets:
    def __init__(self) -> None:
        self.all: set[str] = {TOKEN, TOKEN[:12]}
        for key in (*MASTER.values(), *VECTOR_KEYS.values()):
            self.add(key)

    def add(self, key: bytes) -> None:
        self.all |= forms(key)

    def check(self, text: str, where: str) -> None:
        leaked = sum(1 for f in self.all if f in text)
        if leaked:
            pytest.fail(f"{where}: {leaked} forms of secret material leaked", pytrace=False)


def _write(path: Path, *, plaintext_footer: bool, external: bool) -> Path:
    config = pe.EncryptionConfiguration(footer_key="kf", column_keys=COLUMN_KEYS, plaintext_footer=plaintext_footer,
                                        double_wrapping=True, internal_key_material=not external)
    props = crypto_factory(KeyListKms(MASTER)).file_encryption_properties(
        pe.KmsConnectionConfig(), config, parquet_file_path=str(path))
    pq.write_table(sample_table(2000), path, encryption_properties=props, row_group_size=1000)
    return path


def _data_keys(path: Path) -> Iterator[bytes]:
    """The DEKs of a file (what the canary master keys protect), via its key material."""
    retriever = KeyUnwrapper(KeyListKms(MASTER)).for_file(path)
    metadata = [bytes(m) for m in _key_metadata(path)]
    for kmd in metadata:
        yield retriever(kmd)
    store_path = sidecar_path(path)
    materials = KeyMaterialStore.load(store_path).items() if store_path.exists() else []
    kms = KeyListKms(MASTER)
    for _, material in materials:
        if material.double_wrapping:
            yield kms.unwrap_key(str(material.wrapped_kek), material.master_key_id)
    for kmd in metadata:
        md = KeyMetadata.from_bytes(kmd)
        if md.material is not None and md.material.double_wrapping:
            yield kms.unwrap_key(str(md.material.wrapped_kek), md.material.master_key_id)  # the KEKs


def _key_metadata(path: Path) -> Iterator[bytes]:
    with ParquetBloomReader(path, KeyAccess(kms=KeyListKms(MASTER))) as reader:
        if reader.footer.footer_key_metadata is not None:
            yield reader.footer.footer_key_metadata
        for chunk in reader.column_chunks():
            if chunk.key_metadata is not None:
                yield chunk.key_metadata


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("hygiene")
    secrets = Secrets()
    keys = KeyAccess(kms=KeyListKms(MASTER))
    files = {}
    for name, plaintext_footer, external in (("enc", False, False), ("signed", True, True)):
        src = _write(root / f"{name}-src.parquet", plaintext_footer=plaintext_footer, external=external)
        for key in _data_keys(src):
            secrets.add(key)
        files[name] = src
        files[f"{name}-bloom"] = root / f"{name}.parquet"
        attach_bloom_filters(src, files[f"{name}-bloom"], ["ssn", "id"], keys)
    key_list_file = root / "keys.txt"
    key_list_file.write_text(KEY_LIST)
    return {"root": root, "secrets": secrets, "files": files, "key_list_file": key_list_file}


def _vector_key_args() -> list[str]:
    kf, kc1, kc2 = VECTOR_KEYS.values()
    return ["--key", f"kf=text:{kf.decode()}", "--key", f"kc1=hex:{kc1.hex()}",
            "--key", f"kc2=base64:{base64.b64encode(kc2).decode()}"]


def _commands(w: dict[str, Any]) -> Iterator[tuple[str, list[str], dict[str, str]]]:
    """(label, argv, extra environment) for every command, key source and failure path."""
    f, root = w["files"], w["root"]
    kl = ["--key-list", KEY_LIST]
    klf = ["--key-list-file", str(w["key_list_file"])]
    env_kl = {"SECURE_BLOOM_KEY_LIST": KEY_LIST}
    for name in ("enc-bloom", "signed-bloom"):
        yield f"inspect {name}", ["inspect", str(f[name]), *kl], {}
        yield f"inspect --json {name}", ["inspect", "--json", str(f[name]), *klf], {}
        yield f"probe {name}", ["probe", str(f[name]), "--column", "ssn", "--value", "000-00-0000", "--json"], env_kl
        yield f"probe id {name}", ["probe", str(f[name]), "--column", "id", "--value", "7", *kl], {}
        yield f"audit {name}", ["audit", str(f[name]), "--sensitive", "ssn,amount", "--json", *kl], {}
        yield f"attach {name}", ["attach", str(f[name.replace("-bloom", "")]), str(root / f"cli-{name}.parquet"),
                                 "--bloom", "amount", "--overwrite", "--json", *kl], {}
    yield "inspect vector", ["inspect", str(BLOOM_VECTOR), *_vector_key_args()], {}
    yield "probe vector", ["probe", str(BLOOM_VECTOR), "--column", "double_field", "--value", "0.5",
                           *_vector_key_args()], {}
    yield "audit directory", ["audit", str(root), "--sensitive", "ssn", *kl], {}
    yield "query uniform vector", ["query", str(UNIFORM_VECTOR), "--where", "double_field < 5", "--format", "json",
                                   "--explain", *_vector_key_args()], {}
    # failures
    yield "query per-column vector", ["query", str(BLOOM_VECTOR), "--where", "double_field = 0.5",
                                      *_vector_key_args()], {}
    wrong = base64.b64encode(b"CANARY-wrong-key").decode()
    yield "wrong key list", ["inspect", str(f["enc-bloom"]), "--key-list", f"kf:{wrong}, kc1:{wrong}"], {}
    yield "wrong explicit key", ["probe", str(BLOOM_VECTOR), "--column", "double_field", "--value", "1",
                                 "--key", "kf=text:CANARY-wrong-key", "--key", f"kc1=text:{VECTOR_KEYS['kc1'].decode()}"], {}
    yield "bad hex", ["inspect", str(BLOOM_VECTOR), "--key", f"kf=hex:{VECTOR_KEYS['kf'].hex()}zz"], {}
    yield "bad length", ["inspect", str(BLOOM_VECTOR), "--key",
                         f"kf=base64:{base64.b64encode(VECTOR_KEYS['kf'] + b'xy').decode()}"], {}
    yield "swapped key list", ["inspect", str(f["enc-bloom"]), "--key-list",
                               f"{base64.b64encode(MASTER['kf']).decode()}:kf"], {}
    yield "broken key list", ["inspect", str(f["enc-bloom"]), "--key-list", KEY_LIST + ", kx:" + KEY_LIST[4:30]], {}
    yield "unknown column", ["probe", str(f["enc-bloom"]), "--column", "nope", "--value", "1", *kl], {}
    yield "bad value", ["probe", str(f["enc-bloom"]), "--column", "id", "--value", "x" + KEY_LIST, *kl], {}
    yield "kms unreachable", ["inspect", str(f["enc-bloom"]), "--kms-url", "http://127.0.0.1:9"], {"VAULT_TOKEN": TOKEN}
    yield "debug traceback", ["--debug", "inspect", str(f["enc-bloom"]), "--key-list", f"kf:{wrong}"], {}
    yield "debug ok", ["--debug", "probe", str(f["enc-bloom"]), "--column", "ssn", "--value", "a", *kl], {}


def _expected(label: str) -> tuple[int, str]:
    """(exit code, text the output must hold) for a command of :func:`_commands`: proof that it ran
    and did its work (or refused for the reason it should), not merely that nothing leaked."""
    name = label.rsplit(" ", 1)[-1]
    for prefix, outcome in (("inspect --json ", (0, '"num_rows": 2000')), ("inspect ", (0, "2000 rows, 2 row groups")),
                            ("probe id ", (0, "value 7: may be in row group 0")),
                            ("probe ", (0, '"value": "000-00-0000", "answer": "maybe"')),
                            ("audit ", (0, '"compliant": true')),
                            ("attach ", (0, '"column": "amount"'))):
        if label.startswith(prefix) and name in ("enc-bloom", "signed-bloom"):
            return outcome
    return {
        "inspect vector": (0, "2000 rows, 1 row group"),
        "probe vector": (0, "maybe"),
        "audit directory": (0, "audit of 6 files"),
        "query uniform vector": (0, '"row_groups_read": 1, "metadata_bytes_read"'),
        "query per-column vector": (3, "need keys of their own ('kc1', 'kc2'), which pyarrow cannot be given"),
        "wrong key list": (2, "authentication failed"),
        "wrong explicit key": (2, "authentication failed"),
        "bad hex": (2, "key 'kf' is not valid hex"),
        "bad length": (2, "key 'kf' is 18 bytes"),
        "swapped key list": (2, "AES keys are 16, 24 or 32 bytes"),
        "broken key list": (2, "is not valid Base64"),
        "unknown column": (2, "no leaf column 'nope'"),
        "bad value": (2, "is not an integer"),
        "kms unreachable": (3, "OpenBao transit decrypt with key 'kf' at http://127.0.0.1:9"),
        "debug traceback": (2, "Traceback (most recent call last)"),
        "debug ok": (0, "column: ssn"),
    }[label]


def _check_outcome(label: str, argv: list[str], code: int, text: str) -> None:
    expected_code, expected_text = _expected(label)
    assert (code, expected_text in " ".join(text.split())) == (expected_code, True), (label, code, text[-600:])
    # key material in argv: always one warning line naming the options (the values are checked above)
    options = [o for o in ("--key-list", "--key") if o in argv]
    warning = f"secure-bloom: warning: key material given on the command line ({', '.join(options)}) is visible"
    assert text.count("secure-bloom: warning: key material") == (1 if options else 0), (label, text[-600:])
    assert not options or warning in text, (label, text[-600:])


def _run_in_process(argv: list[str], env: dict[str, str], capsys: Any, caplog: Any,
                    monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    caplog.clear()
    try:
        code = cli.main(argv)
    finally:
        for name in env:
            monkeypatch.delenv(name)
    captured = capsys.readouterr()
    return code, "\n".join([captured.out, captured.err, caplog.text,
                            *(r.getMessage() for r in caplog.records)])


def test_every_cli_command_in_process(world: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                      caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.DEBUG)
    labels = []
    for label, argv, env in _commands(world):
        code, text = _run_in_process(argv, env, capsys, caplog, monkeypatch)
        world["secrets"].check(text, label)
        _check_outcome(label, argv, code, text)   # the exit code, and the work done or the refusal
        labels.append(label)
    assert len(labels) == len(set(labels)) == 28


def test_cli_as_a_process(world: dict[str, Any]) -> None:
    """The real console process: stdout, stderr (also what pyarrow's C++ might print)."""
    for label, argv, env in list(_commands(world))[::3]:
        result = subprocess.run([*CLI_PROCESS, *argv], capture_output=True, text=True,
                                env={**os.environ, **env}, timeout=300)
        world["secrets"].check(result.stdout + result.stderr, f"process {label}")
        _check_outcome(label, argv, result.returncode, result.stdout + result.stderr)


def _rendered(error: BaseException) -> str:
    return "\n".join([str(error), repr(error), *traceback.format_exception(error)])


def _api_texts(w: dict[str, Any]) -> Iterable[tuple[str, str]]:
    f = w["files"]
    keys = KeyAccess(kms=KeyListKms(MASTER), explicit=VECTOR_KEYS)
    yield "KeyAccess", repr(keys) + str(keys)
    for name in ("enc-bloom", "signed-bloom"):
        with ParquetBloomReader(f[name], keys) as reader:
            yield name, "\n".join([repr(reader), repr(reader.footer), str(reader.footer), repr(reader.tail),
                                   repr(reader.columns), repr(reader.chunks()), str(reader.describe()),
                                   reader.probe("ssn", ["000-00-0000", "x"]).to_json(),
                                   repr(reader.bloom_filter(0, "ssn")), repr(reader.footer.params)])
        report = audit([f[name]], ["ssn", "amount"], keys)
        yield f"audit {name}", repr(report) + str(report.to_dict())
    report = attach_bloom_filters(f["enc"], w["root"] / "api-attach.parquet", ["amount"], keys, overwrite=True)
    yield "attach report", repr(report) + str(report.to_dict())
    explicit = KeyAccess(explicit=VECTOR_KEYS)
    pruned = scan(UNIFORM_VECTOR, keys=explicit, filters=[("double_field", "<", 5.0)])
    rows = pruned.to_table().num_rows
    restricted = dataset(UNIFORM_VECTOR, keys=explicit, filters=[("double_field", "<", 5.0)])
    fragments = list(pruned.dataset.get_fragments())
    yield "scan with the footer key", "\n".join([
        repr(pruned), repr(pruned.dataset), repr(restricted), str(pruned.report.to_dict()), pruned.report.summary(),
        *(f"{f!r} {f.format!r} {f.format.default_fragment_scan_options!r}" for f in fragments)])
    assert rows == 5 and len(fragments) == 1  # the scan did its work
    cache = PruneCache()
    for _ in range(2):  # filled, then answered from it: decrypted filters and statistics inside
        cached = scan(f["enc-bloom"], keys=keys, filters=[("ssn", "==", "000-00-0000")], cache=cache)
    yield "scan with a prune cache", "\n".join([repr(cache), str(cache), str(cache.stats), cached.report.summary(),
                                                str(cached.report.to_dict())])
    assert cached.report.cache_hits == 1
    for path, scan_keys in ((BLOOM_VECTOR, explicit), (UNIFORM_VECTOR, KeyAccess(explicit={"kf": b"CANARY-wrong-key"}))):
        try:
            scan(path, keys=scan_keys).to_table()
        except SecureBloomError as e:
            yield f"scan error {path.name}", _rendered(e)
        else:
            pytest.fail(f"{path.name} scanned")
    bad_keys = KeyAccess(kms=KeyListKms({k: b"CANARY-wrong-key" for k in MASTER}),
                         explicit={k: b"CANARY-wrong-key" for k in VECTOR_KEYS})
    for path in (f["enc-bloom"], f["signed-bloom"], BLOOM_VECTOR):
        try:
            with ParquetBloomReader(path, bad_keys) as reader:
                reader.describe()
                for rg in range(reader.num_row_groups):
                    for column in reader.columns:
                        reader.bloom_filter(rg, column.ordinal)
        except SecureBloomError as e:
            yield f"error {path.name}", _rendered(e)
        else:
            pytest.fail(f"{path.name} opened with wrong keys")
    for call in (lambda: attach_bloom_filters(f["enc"], w["root"] / "x.parquet", ["ssn"], bad_keys),
                 lambda: attach_bloom_filters(f["enc"], w["root"] / "y.parquet", ["ssn"], KeyAccess())):
        try:
            call()
        except SecureBloomError as e:
            yield "attach error", _rendered(e)
    assert not (w["root"] / "x.parquet").exists()


def test_api_entry_points(world: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    texts = list(_api_texts(world))
    assert len(texts) >= 10
    for label, text in texts:
        world["secrets"].check(text, label)
    world["secrets"].check(caplog.text, "logs")


def test_the_canaries_would_be_caught(world: dict[str, Any]) -> None:
    """The check is able to fail: each kind of secret, in each form, is found."""
    secrets: Secrets = world["secrets"]
    for key in (MASTER["kf"], VECTOR_KEYS["kc2"]):
        for text in forms(key):
            with pytest.raises(pytest.fail.Exception):
                secrets.check(f"... {text} ...", "self-test")
    with pytest.raises(pytest.fail.Exception):
        secrets.check(TOKEN, "self-test")
    assert len(secrets.all) > 60  # master keys, DEKs and KEKs of both files, explicit keys, token
