"""What installing secure-bloom costs and promises (issue 24): ``import secure_bloom`` loads its public
names on first use, the OpenBao and AWS KMS clients' dependencies are extras that a missing install names, and
the distribution carries its licence. (The plugin's import cost: test_pytest_plugin.py.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from secure_bloom import extensions
from support.paths import REPO_DIR

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10: the tomli backport (a dependency there)
    import tomli as tomllib


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


def test_aws_kms_without_boto3_names_the_extra() -> None:
    """boto3 comes with the ``aws`` extra: the kms package imports without it, and making an
    AwsKms says which extra to install. (Not isolated: runs the secure_bloom on sys.path.)"""
    proc = subprocess.run([sys.executable, "-c",
                           "import sys\n"
                           "sys.modules['boto3'] = None\n"
                           "from secure_bloom.kms import AwsKms\n"
                           "from secure_bloom.errors import MissingDependencyError\n"
                           "try:\n"
                           "    AwsKms('us-east-1')\n"
                           "except MissingDependencyError as e:\n"
                           "    print(type(e).__name__, e)\n"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("MissingDependencyError AwsKms needs boto3, which is not installed (boto3): "
                                   "pip install 'secure-bloom[aws]'")


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


def test_classifiers_and_readme_promise_exactly_the_wheels_built() -> None:
    """pyproject.toml's Python classifiers and README's Install section name exactly the wheels
    scripts/wheel builds and tests (secure_bloom.extensions.WHEEL_PYTHONS, WHEEL_PLATFORM), and no
    platform that nothing builds or tests (issue 30: the README promised aarch64)."""
    project = tomllib.loads((REPO_DIR / "pyproject.toml").read_text())["project"]
    pythons = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
               if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    assert pythons == set(extensions.WHEEL_PYTHONS)
    assert project["requires-python"] == f">={min(extensions.WHEEL_PYTHONS, key=lambda v: tuple(map(int, v.split('.'))))}"
    assert [c for c in project["classifiers"] if c.startswith("Operating System")] == ["Operating System :: POSIX :: Linux"]
    readme = (REPO_DIR / "README.md").read_text()
    install = readme[readme.index("## Install"):readme.index("\n## ", readme.index("## Install") + 1)]
    assert all(f"`{tag}`" in install for tag in extensions.wheel_tags()), install
    assert len(re.findall(r"`cp3\d+-cp3\d+-[a-z0-9_.]+`", install)) == len(extensions.WHEEL_PYTHONS)
    for promise in ("Linux x86-64 or aarch64", "aarch64 wheel", "manylinux_2_17_aarch64"):
        assert promise not in install


def _installed_build_in(site: Path, *wheel_tags: str) -> str:
    """installed_build() in a process whose first sys.path entry is ``site``: the package (a copy
    of this one) and, when ``wheel_tags`` are given, a dist-info whose WHEEL file names them, as pip
    writes it for a wheel it installs."""
    shutil.copytree(Path(extensions.__file__).resolve().parent, site / "secure_bloom",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if wheel_tags:
        info = site / "secure_bloom-0.1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.4\nName: secure-bloom\nVersion: 0.1.0\n")
        (info / "WHEEL").write_text("Wheel-Version: 1.0\nGenerator: setuptools\nRoot-Is-Purelib: false\n"
                                    + "".join(f"Tag: {t}\n" for t in wheel_tags))
    proc = subprocess.run([sys.executable, "-c", "from secure_bloom import extensions as e; print(e.installed_build())"],
                          capture_output=True, text=True, timeout=120, cwd=site,
                          env={**os.environ, "PYTHONPATH": str(site)}, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_installed_build_names_the_wheel_and_tells_a_source_build(tmp_path: Path) -> None:
    """``secure-bloom --version`` says which wheel is installed (its tags, as in its file name), a
    wheel pip built on the machine, or a source tree no installed distribution owns (this test's own
    package may be installed: the copy without a dist-info is still a source tree)."""
    tag = extensions.wheel_tags()[-1]
    py = tag.rsplit("-", 1)[0]
    for name, tags, expected in [
        ("shipped", (tag, f"{py}-manylinux2014_x86_64"), f"wheel {py}-manylinux2014_x86_64.{tag.rsplit('-', 1)[1]}"),
        ("local", (f"{py}-linux_x86_64",), f"built from source ({py}-linux_x86_64)"),
        ("tree", (), "source tree"),
    ]:
        (tmp_path / name).mkdir()
        assert _installed_build_in(tmp_path / name, *tags) == expected


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
