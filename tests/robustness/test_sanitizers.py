"""The C extensions under AddressSanitizer and UndefinedBehaviorSanitizer (marker ``sanitizer``).

tests/support/sanitizer.py builds kernels.c, thrift_compact.c and gcm.c with ``-fsanitize=address,undefined
-fno-omit-frame-pointer -g`` into a copy of the installed package; a fresh interpreter with the ASan
runtime preloaded imports that copy and runs the kernel, Thrift decoder and native pruning tests
(the extension's own, and the fast pruning path's over real files) and the mutation cases (tests/robustness/test_native_mutation.py, whose processes inherit the environment). Any
sanitizer report, or any failure, fails the test. A missing gcc or libasan fails it too, unless
SECURE_BLOOM_ALLOW_SKIP names ``sanitizer``.

First, a planted heap overflow and a planted signed overflow in a throwaway extension built the
same way must be reported: the harness is shown to see what it looks for. Against the kernels.c of
before the single-load fix, the run reported heap-buffer-overflow READs (xxh64 via source_hash).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import REPO_DIR, TESTS_DIR
from support.sanitizer import (build_sanitized_package, compile_extension, compiler, sanitizer_env,
                               sanitizer_reports)

pytestmark = pytest.mark.sanitizer

#: What runs sanitized: the tests of the native kernels and decoder (their ``native`` halves; the
#: numpy / thriftpy2 halves run no C of ours) and every mutation case.
SANITIZED_TESTS = ["unit/test_kernels.py", "unit/test_thrift_codec.py", "robustness/test_robustness_thrift.py",
                   "robustness/test_native_mutation.py", "unit/test_native_gcm.py"]
#: Run whole (no marker): the one reader's batches over real files, through native_gcm.
SANITIZED_WHOLE = ["unit/parquet/file/test_reader_batches.py"]
#: The two 2-3 million value count_distinct cases take most of a run's time in np.unique (not ours);
#: the 100,000-value case and the property test keep count_distinct in the run.
DESELECT = "not (test_count_distinct_large_and_skewed and (random or one_bucket))"

CANARY = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static PyObject *heap_overflow(PyObject *self, PyObject *arg)
{
    Py_ssize_t at = PyLong_AsSsize_t(arg);
    char *p = malloc(16), c = 0;
    __asm__ volatile("" : "+r"(p)); /* size unknown to UBSan's object-size check: ASan's turn */
    memcpy(&c, p + at, 1);          /* at = 16: one byte past the block */
    free(p);
    return PyLong_FromLong(c);
}

static PyObject *signed_overflow(PyObject *self, PyObject *arg)
{
    int x = (int)PyLong_AsLong(arg);
    x += INT_MAX;                   /* x = 1: signed overflow */
    return PyLong_FromLong(x);
}

static PyMethodDef methods[] = {
    {"heap_overflow", heap_overflow, METH_O, NULL},
    {"signed_overflow", signed_overflow, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "sb_canary", NULL, -1, methods};
PyMODINIT_FUNC PyInit_sb_canary(void) { return PyModule_Create(&module); }
"""


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the sanitized copy of the package."""
    return build_sanitized_package(tmp_path_factory.mktemp("sanitized"))


def _run(cmd: list[str], root: Path, **env: str) -> tuple[int, str]:
    result = subprocess.run(cmd, cwd=root, env=sanitizer_env(root, **env), capture_output=True, text=True,
                            timeout=900)
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize(("call", "report"), [
    ("heap_overflow(16)", "ERROR: AddressSanitizer: heap-buffer-overflow"),
    ("signed_overflow(1)", "runtime error: signed integer overflow"),
])
def test_a_planted_fault_is_reported(sanitized: Path, tmp_path: Path, call: str, report: str) -> None:
    source = tmp_path / "sb_canary.c"
    source.write_text(CANARY)
    compile_extension(compiler(), source, "sb_canary", tmp_path)
    code, output = _run([sys.executable, "-c", f"import sb_canary; sb_canary.{call}"], sanitized,
                        PYTHONPATH=f"{sanitized}:{tmp_path}")
    assert code != 0 and report in output, output[-4000:]
    assert sanitizer_reports(output)


def test_the_sanitized_build_is_what_the_process_imports(sanitized: Path) -> None:
    code, output = _run([sys.executable, "-c", "import secure_bloom.kernels as k, secure_bloom.thrift_codec as t; "
                         "import secure_bloom.native_kernels as nk, secure_bloom.native_thrift as nt; "
                         "import secure_bloom.native_gcm as npr; "
                         "print(k.BACKEND, t.BACKEND, nk.__file__, nt.__file__, npr.__file__, npr.info()['flags'], "
                         "k.kernel_info()['flags'])"],
                        sanitized)
    assert code == 0, output[-4000:]
    backend, thrift_backend, kernels_file, thrift_file, prune_file, *flags = output.split()
    assert (backend, thrift_backend) == ("native", "native")
    assert Path(kernels_file).parent == Path(thrift_file).parent == Path(prune_file).parent == sanitized / "secure_bloom"
    assert flags.count("-fsanitize=address,undefined") == 2


def test_kernel_and_decoder_tests_pass_under_asan_and_ubsan(sanitized: Path) -> None:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(REPO_DIR),
           "-c", str(REPO_DIR / "pyproject.toml"), "-q", "--no-header", "-m", "native", "-k", DESELECT,
           *(str(TESTS_DIR / t) for t in SANITIZED_TESTS)]
    whole = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(REPO_DIR),
             "-c", str(REPO_DIR / "pyproject.toml"), "-q", "--no-header", *(str(TESTS_DIR / t) for t in SANITIZED_WHOLE)]
    for run in (cmd, whole):
        code, output = _run(run, sanitized, HYPOTHESIS_PROFILE="sanitizer")
        reports = sanitizer_reports(output)
        assert not reports, "sanitizer reports:\n" + "\n".join(reports[:20]) + "\n" + output[-8000:]
        assert code == 0, output[-8000:]
        assert " passed" in output and " failed" not in output


def _pytest_without_gcc(*extra: str, allow: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "SECURE_BLOOM_ALLOW_SKIP")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-ra", "--no-header",
                           "robustness/test_sanitizers.py::test_the_sanitized_build_is_what_the_process_imports",
                           *extra], cwd=TESTS_DIR, env={**env, "CC": "/nonexistent/gcc", "SECURE_BLOOM_ALLOW_SKIP": allow},
                          capture_output=True, text=True, timeout=300)


def test_a_missing_compiler_fails_unless_named_in_allow_skip() -> None:
    """Not skipped silently: without a compiler the sanitizer tests fail; they skip, saying why,
    only when SECURE_BLOOM_ALLOW_SKIP names ``sanitizer`` (support.components)."""
    failed = _pytest_without_gcc(allow="native")
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "sanitizer missing: C compiler '/nonexistent/gcc' not found (set CC or install gcc)" in failed.stdout
    assert "1 error" in failed.stdout
    skipped = _pytest_without_gcc(allow="spark,sanitizer")
    assert skipped.returncode == 0, skipped.stdout[-3000:]
    assert "skipped because SECURE_BLOOM_ALLOW_SKIP names it" in skipped.stdout and "1 skipped" in skipped.stdout
