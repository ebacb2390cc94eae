"""What installing secure-bloom costs and promises (issue 24): ``import secure_bloom`` loads its public
names on first use, the OpenBao client's dependencies are an extra that a missing install names, and
the distribution carries its licence. (The plugin's import cost: test_pytest_plugin.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env}, check=False)


def test_public_names_load_on_first_use() -> None:
    proc = _python("import secure_bloom, sys\n"
                   "f = secure_bloom.SplitBlockBloomFilter.for_ndv(10)\n"
                   "assert 'numpy' in sys.modules and secure_bloom.SplitBlockBloomFilter is type(f)\n"
                   "from secure_bloom import hash_value, SecureBloomError, ModuleType\n"
                   "assert set(secure_bloom.__all__) <= set(dir(secure_bloom))\n"
                   "try:\n    secure_bloom.no_such_name\nexcept AttributeError as e:\n    print(e)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "module 'secure_bloom' has no attribute 'no_such_name'"


def test_openbao_without_hvac_names_the_extra() -> None:
    """hvac and requests come with the ``vault`` extra: the library imports without them, and making
    an OpenBaoTransitKms says which extra to install."""
    proc = _python("import sys\n"
                   "sys.modules['hvac'] = None\n"
                   "from secure_bloom.kms import OpenBaoTransitKms, KeyListKms\n"
                   "from secure_bloom.errors import MissingDependencyError\n"
                   "try:\n"
                   "    OpenBaoTransitKms('http://127.0.0.1:1', token='t')\n"
                   "except MissingDependencyError as e:\n"
                   "    print(type(e).__name__, isinstance(e, ImportError), e)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "MissingDependencyError True OpenBaoTransitKms needs hvac and requests, which are not installed "
        "(hvac): pip install 'secure-bloom[vault]'")


def test_installed_metadata_carries_licence_extras_and_typing() -> None:
    """The installed distribution (scripts/setup installs the package non-editable) ships LICENSE and
    NOTICE, says Typing :: Typed, and keeps hvac out of the core requirements."""
    meta = metadata.metadata("secure-bloom")
    assert meta["License-Expression"] == "Apache-2.0"
    assert sorted(meta.get_all("License-File") or []) == ["LICENSE", "NOTICE"]
    assert "Typing :: Typed" in (meta.get_all("Classifier") or [])
    assert {"vault", "spark", "s3", "polars", "duckdb", "test"} <= set(meta.get_all("Provides-Extra") or [])
    core = [r for r in metadata.requires("secure-bloom") or [] if "extra ==" not in r]
    assert not [r for r in core if r.startswith(("hvac", "requests", "pandas", "pyspark"))], core
    files = {str(f) for f in metadata.files("secure-bloom") or []}
    licences = {f.rsplit("/", 1)[-1] for f in files if ".dist-info/licenses/" in f}
    assert licences == {"LICENSE", "NOTICE"}
    assert "secure_bloom/py.typed" in files


def test_the_wheel_ships_no_developer_tooling() -> None:
    """Benchmarks, the demo, the vectors generator and the Java / C++ reference harnesses live in the
    checkout's benchmarks/ folder (issue 31): the installed distribution carries none of them, and the
    CLI has no command that would need them."""
    files = {str(f) for f in metadata.files("secure-bloom") or []}
    assert files and not [f for f in files if f.startswith(("benchmarks/", "secure_bloom/tools/"))]
    assert not [f for f in files if f.endswith((".java", ".cc")) and not f.startswith("secure_bloom/spark/java/")]
    proc = _python("from secure_bloom.cli.parser import build_parser\n"
                   "import argparse\n"
                   "sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))\n"
                   "print(' '.join(sub.choices))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["inspect", "probe", "attach", "encrypt", "audit", "query", "doctor", "dev-keys"]
