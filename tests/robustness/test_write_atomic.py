"""write_table never leaves a partial file or a file without its filters: real process kills and a
real file size limit (EFBIG from RLIMIT_FSIZE, as a full disk) in a child process.

After every fault the directory holds nothing but what was there before (the O_TMPFILE output
has no name until it is published). The KMS failing at each of its calls is tested in
tests/unit/parquet/write/test_parquet_write.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.parquet_files import TESTING_KEY_LIST, read_encrypted
from support.paths import REPO_DIR

from secure_bloom.kms import KeyListKms
from secure_bloom.kms.sidecar import sidecar_path
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.parquet.file.leftovers import clean_leftovers, find_leftovers

CHILD = textwrap.dedent("""
    import os, resource, signal, sys
    import pyarrow.parquet.encryption as pe
    from secure_bloom.fileio import AtomicOutput
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet.write import writer as write_module
    from support.parquet_files import sample_table

    dst, stage, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if limit:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    def die_at(name):
        if name == stage:
            os.kill(os.getpid(), signal.SIGKILL)

    real = {name: getattr(write_module.ParquetWriter, name) for name in ("_write_row_group", "_finish", "_publish")}
    real_truncate, real_publish = AtomicOutput.truncate, AtomicOutput.publish

    def wrap(name):
        def run(self, *args):
            die_at("before" + name)
            result = real[name](self, *args)
            die_at("after" + name)
            return result
        return run

    for name in real:
        setattr(write_module.ParquetWriter, name, wrap(name))

    def truncate(self, size):
        real_truncate(self, size)
        die_at("truncated")

    def publish(self, target, **kwargs):
        die_at("before_link")
        real_publish(self, target, **kwargs)
        die_at("after_link")

    AtomicOutput.truncate, AtomicOutput.publish = truncate, publish
    config = pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["ssn"], "kc2": ["ts"]},
                                        internal_key_material=os.environ.get("EXTERNAL") != "1")
    write_module.write_table(sample_table(20_000), dst, encryption=config, kms=KeyListKms(os.environ["KEYS"]),
                             bloom_filter_options={"ssn": True, "id": True}, row_group_size=5000)
    print("finished")
""")

STAGES = ["before_write_row_group", "after_write_row_group", "before_finish", "truncated", "before_publish",
          "before_link"]


def _run(dst: Path, stage: str, limit: int = 0, external: bool = False,
         tmpdir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KEYS": TESTING_KEY_LIST, "EXTERNAL": "1" if external else "0",
           "PYTHONPATH": os.pathsep.join([str(REPO_DIR), str(REPO_DIR / "tests")])}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run([sys.executable, "-c", CHILD, str(dst), stage, str(limit)], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.parametrize("external", [False, True], ids=["internal-key-material", "external-key-material"])
@pytest.mark.parametrize("stage", STAGES)
def test_sigkill_at_every_stage_leaves_nothing(tmp_path: Path, stage: str, external: bool) -> None:
    """Nothing beside the destination (external key material: at most the publication journal
    of a kill as the key material is linked in, which doctor --fix removes), nothing in the
    system's temporary folder."""
    folder, temp = tmp_path / "dst", tmp_path / "tmp"
    folder.mkdir()
    temp.mkdir()
    result = _run(folder / "out.parquet", stage, external=external, tmpdir=temp)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert list(temp.iterdir()) == []
    left = [p.name for p in folder.iterdir()]
    if external and stage == "before_link":
        assert [leftover.kind for leftover in find_leftovers(folder)] == ["journal"]
        clean_leftovers(folder)
        left = [p.name for p in folder.iterdir()]
    assert left == []


def _doctor(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_DIR), str(REPO_DIR / "tests")])}
    return subprocess.run([sys.executable, "-m", "secure_bloom.cli", "doctor", str(folder), *options],
                          capture_output=True, text=True, timeout=120, env=env)


def test_external_key_material_is_never_left_in_the_temp_folder(tmp_path: Path) -> None:
    """Issue 20 item 6: a writer killed mid-write left secure-bloom-keys-*/_KEY_MATERIAL_FOR_<name>.json
    (wrapped keys, master key ids) in the system's temporary folder, where doctor never looks. The
    key material is now spooled in memory until it is published."""
    folder, temp = tmp_path / "dst", tmp_path / "tmp"
    folder.mkdir()
    temp.mkdir()
    for stage in ("after_write_row_group", "before_publish"):
        result = _run(folder / "out.parquet", stage, external=True, tmpdir=temp)
        assert result.returncode == -signal.SIGKILL, result.stderr
        assert [p.relative_to(temp) for p in temp.rglob("*")] == []
        assert list(folder.iterdir()) == []


def test_sigkill_between_key_material_and_data_is_recovered_by_doctor(tmp_path: Path) -> None:
    """An overwrite killed after its key material replaced the old file's sidecar, before the new
    data file was linked in: the old file would be unreadable. The journal makes doctor list it
    and --fix restore the old sidecar; a fresh destination's orphaned sidecar is removed."""
    folder, temp = tmp_path / "dst", tmp_path / "tmp"
    folder.mkdir()
    temp.mkdir()
    dst = folder / "out.parquet"
    assert _run(dst, "none", external=True, tmpdir=temp).returncode == 0
    keys = KeyAccess(kms=KeyListKms(TESTING_KEY_LIST))
    old_sidecar = sidecar_path(dst).read_bytes()
    result = _run(dst, "after_link", external=True, tmpdir=temp)  # the first link: the key material
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert sidecar_path(dst).read_bytes() != old_sidecar  # the old file's key material was replaced
    listed = _doctor(folder)
    assert listed.returncode == 1 and "journal" in listed.stdout, listed.stdout + listed.stderr
    fixed = _doctor(folder, "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["_KEY_MATERIAL_FOR_out.parquet.json", "out.parquet"]
    assert sidecar_path(dst).read_bytes() == old_sidecar
    with ParquetBloomReader(dst, keys) as reader:
        assert all(bf is not None for _, bf in reader.iter_filters("ssn"))
    assert list(temp.iterdir()) == []

    fresh = folder / "new.parquet"
    result = _run(fresh, "after_link", external=True, tmpdir=temp)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert sidecar_path(fresh).exists() and not fresh.exists()
    assert _doctor(folder).returncode == 1
    assert _doctor(folder, "--fix").returncode == 0
    assert sorted(p.name for p in folder.iterdir()) == ["_KEY_MATERIAL_FOR_out.parquet.json", "out.parquet"]


def test_sigkill_after_publishing_leaves_a_complete_file(tmp_path: Path) -> None:
    result = _run(tmp_path / "out.parquet", "after_link")
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]
    assert read_encrypted(tmp_path / "out.parquet").num_rows == 20_000
    with ParquetBloomReader(tmp_path / "out.parquet", KeyAccess(kms=KeyListKms(TESTING_KEY_LIST))) as reader:
        assert all(bf is not None for _, bf in reader.iter_filters("ssn"))


@pytest.mark.parametrize("limit", [4096, 400_000, 900_000])
def test_file_size_limit_leaves_nothing(tmp_path: Path, limit: int) -> None:
    """EFBIG while pyarrow writes pages (small limits) or while the filters and footer are appended
    (a limit just under the final size): an error, and no file."""
    complete = _run(tmp_path / "probe.parquet", "none")
    assert complete.returncode == 0, complete.stderr
    size = (tmp_path / "probe.parquet").stat().st_size
    (tmp_path / "probe.parquet").unlink()
    folder = tmp_path / "limited"
    folder.mkdir()
    result = _run(folder / "out.parquet", "none", limit=min(limit, size - 16))
    assert result.returncode == 1 and "finished" not in result.stdout
    assert "File too large" in result.stderr or "EFBIG" in result.stderr or "error" in result.stderr.lower()
    assert list(folder.iterdir()) == []
