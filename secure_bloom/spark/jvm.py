"""Compile and run Java against the parquet-java that pyspark ships.

The production jar holds only what Spark needs on its class path: the ``.java`` files under
``secure_bloom/spark/java/`` (package ``io.securebloom``: the KMS clients parquet-java loads by
class name). Other source trees (the reference harnesses of the checkout's ``benchmarks/parquet_java.py``)
compile into jars of their own with :func:`compiled_jar` and never reach Spark's class path.

A jar is cached by content at ``<cache root>/jars/<sha256>.jar``. The digest covers the sources,
the Spark version, the names of the parquet/hadoop jars compiled against and the jars on the extra
class path, so a new pyspark or an edited source gives a new jar.
Cache root: ``$SECURE_BLOOM_CACHE``, else ``$XDG_CACHE_HOME/secure-bloom``, else
``~/.cache/secure-bloom``. A build happens in a temporary directory beside the cache entry and is
renamed into place, under a file lock, so concurrent processes never see a half-written jar.

Secrets (key lists, tokens) go to the JVM on standard input (``--conf-stdin``), never on the
command line, where process listings and ``CompletedProcess.args`` would show them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from secure_bloom.errors import JavaNotFoundError, JvmError

__all__ = [
    "JAVA_RELEASE",
    "cache_root",
    "classpath",
    "compiled_jar",
    "find_java",
    "java_sources",
    "run_java",
    "run_json",
    "secure_bloom_jar",
    "spark_jars_dir",
    "spark_version",
]

JAVA_RELEASE = "17"
"""The --release the jar is compiled for (Spark 4 needs Java 17+)."""

_SOURCES = Path(__file__).parent / "java"
_DEFAULT_JVM_ARGS = ("-XX:+UseSerialGC", "-Xss4m")


def cache_root() -> Path:
    """$SECURE_BLOOM_CACHE, else $XDG_CACHE_HOME/secure-bloom, else ~/.cache/secure-bloom.

    Returns
    -------
    pathlib.Path
        Where jars and harness binaries are cached.

    Raises
    ------
    None
        Nothing of its own.
    """
    explicit = os.environ.get("SECURE_BLOOM_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "secure-bloom"


def spark_jars_dir() -> Path:
    """The directory of Spark's jars: $SPARK_HOME/jars if it exists, else pyspark's bundled jars.

    Returns
    -------
    pathlib.Path
        The directory.

    Raises
    ------
    secure_bloom.errors.JavaNotFoundError
        No JDK (java / javac 17+) or no pyspark.
    """
    home = os.environ.get("SPARK_HOME")
    if home and (Path(home) / "jars").is_dir():
        return Path(home) / "jars"
    try:
        import pyspark
    except ImportError as e:
        raise JavaNotFoundError("pyspark is not installed (pip install 'secure-bloom[spark]')") from e
    jars = Path(pyspark.__file__).parent / "jars"
    if not jars.is_dir():
        raise JavaNotFoundError(f"pyspark has no jars directory at {jars}")
    return jars


def spark_version() -> str:
    """Spark's version, read from the spark-core jar's name (pyspark's version as a fallback).

    Returns
    -------
    str
        Spark's version.

    Raises
    ------
    secure_bloom.errors.JavaNotFoundError
        No JDK (java / javac 17+) or no pyspark.
    """
    for jar in sorted(spark_jars_dir().glob("spark-core_*.jar")):
        return jar.stem.split("-", 2)[-1]
    import pyspark

    return str(pyspark.__version__)


def find_java(tool: str = "java") -> Path:
    """``tool`` (java or javac) from $JAVA_HOME/bin, else from PATH.

    Parameters
    ----------
    tool : str, default "java"
        ``java`` or ``javac``.

    Returns
    -------
    pathlib.Path
        The executable.

    Raises
    ------
    secure_bloom.errors.JavaNotFoundError
        Neither $JAVA_HOME/bin nor PATH has it.
    """
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / tool
        if candidate.is_file():
            return candidate
    found = shutil.which(tool)
    if found is None:
        raise JavaNotFoundError(
            f"{tool} not found: install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless) "
            "or set JAVA_HOME"
        )
    return Path(found)


def java_sources(source_root: Path = _SOURCES) -> list[Path]:
    """The ``.java`` files under ``source_root`` (default: the production KMS clients), sorted.

    Parameters
    ----------
    source_root : pathlib.Path
        Where to look (default: the production KMS clients).

    Returns
    -------
    list of pathlib.Path
        The ``.java`` files, sorted.

    Raises
    ------
    None
        Nothing of its own.
    """
    sources = sorted(Path(source_root).rglob("*.java"))
    if not sources:
        raise JavaNotFoundError(f"no Java sources under {source_root} (broken installation?)")
    return sources


def _digest(source_root: Path, extra_classpath: Sequence[Path]) -> str:
    h = hashlib.sha256()
    h.update(f"release={JAVA_RELEASE}\0spark={spark_version()}\0".encode())
    for jar in sorted(spark_jars_dir().glob("*.jar")):
        if jar.name.startswith(("parquet-", "hadoop-client-api")):
            h.update(f"jar={jar.name}\0".encode())
    for extra in extra_classpath:  # our own jars are named by their content digest
        h.update(f"extra={Path(extra).name}\0".encode())
    for src in java_sources(source_root):
        h.update(src.relative_to(source_root).as_posix().encode() + b"\0")
        h.update(src.read_bytes() + b"\0")
    return h.hexdigest()


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """An exclusive advisory lock (POSIX). Without fcntl, correctness rests on the atomic rename."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lock_path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _write_jar(classes: Path, jar: Path) -> None:
    """A reproducible jar: sorted entries, fixed timestamps, a minimal manifest."""
    stamp = (1980, 1, 1, 0, 0, 0)
    with zipfile.ZipFile(jar, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", stamp),
                   "Manifest-Version: 1.0\r\nCreated-By: secure_bloom\r\n\r\n")
        for path in sorted(classes.rglob("*.class")):
            info = zipfile.ZipInfo(path.relative_to(classes).as_posix(), stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, path.read_bytes())


def secure_bloom_jar(cache_dir: Path | None = None) -> Path:
    """The production jar (the KMS clients Spark loads), compiled on first use and cached by
    content.

    ``cache_dir`` overrides ``cache_root() / "jars"``. Raises JavaNotFoundError without javac or
    pyspark, JvmError if compilation fails.

    Parameters
    ----------
    cache_dir : pathlib.Path, optional
        Overrides ``cache_root() / "jars"``.

    Returns
    -------
    pathlib.Path
        The jar.

    Raises
    ------
    secure_bloom.errors.JavaNotFoundError
        No JDK (java / javac 17+) or no pyspark.
    secure_bloom.errors.JvmError
        Compilation failed.
    """
    return compiled_jar(_SOURCES, cache_dir=cache_dir)


def compiled_jar(source_root: Path, *, cache_dir: Path | None = None,
                 extra_classpath: Sequence[Path] = ()) -> Path:
    """The ``.java`` files under ``source_root`` compiled against Spark's jars (and
    ``extra_classpath``) into a jar cached by content; built under a file lock, renamed into
    place, so concurrent processes never see a half-written jar.

    Parameters
    ----------
    source_root : pathlib.Path
        Where the ``.java`` files are.
    cache_dir : pathlib.Path, optional
        Overrides ``cache_root() / "jars"``.
    extra_classpath : sequence of pathlib.Path
        More jars to compile against.

    Returns
    -------
    pathlib.Path
        The cached jar.

    Raises
    ------
    secure_bloom.errors.JavaNotFoundError
        No JDK (java / javac 17+) or no pyspark.
    secure_bloom.errors.JvmError
        javac failed (its output in the message).
    """
    jars_dir = Path(cache_dir) if cache_dir is not None else cache_root() / "jars"
    digest = _digest(Path(source_root), extra_classpath)
    final = jars_dir / f"{digest}.jar"
    if final.is_file():
        return final
    javac = find_java("javac")
    jars_dir.mkdir(parents=True, exist_ok=True)
    with _locked(jars_dir / f".{digest}.lock"):
        if final.is_file():  # another process built it while we waited
            return final
        build = Path(tempfile.mkdtemp(prefix=".build-", dir=jars_dir))
        try:
            classes = build / "classes"
            compile_cp = os.pathsep.join([*map(str, extra_classpath), str(spark_jars_dir() / "*")])
            cmd = [str(javac), "--release", JAVA_RELEASE, "-encoding", "UTF-8", "-nowarn",
                   "-d", str(classes), "-cp", compile_cp, *map(str, java_sources(source_root))]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
            if proc.returncode != 0:
                raise JvmError(f"javac failed ({proc.returncode}): {proc.stderr.strip()[-4000:]}")
            tmp_jar = build / "secure-bloom.jar"
            _write_jar(classes, tmp_jar)
            os.replace(tmp_jar, final)
        finally:
            shutil.rmtree(build, ignore_errors=True)
    return final


def classpath(jars: Sequence[Path] | None = None) -> str:
    """``jars`` (default: the production jar), then every jar of Spark (parquet-java, hadoop,
    slf4j/log4j).

    Parameters
    ----------
    jars : sequence of pathlib.Path, optional
        Jars first on the class path (default: the production jar).

    Returns
    -------
    str
        The class path, ``os.pathsep``-separated.

    Raises
    ------
    secure_bloom.errors.JavaNotFoundError
        No JDK (java / javac 17+) or no pyspark.
    """
    ours = list(jars) if jars is not None else [secure_bloom_jar()]
    return os.pathsep.join([*map(str, ours), str(spark_jars_dir() / "*")])


def run_java(
    main_class: str,
    args: Sequence[str] = (),
    timeout: float = 120.0,
    *,
    stdin: str | None = None,
    jvm_args: Sequence[str] = _DEFAULT_JVM_ARGS,
    jars: Sequence[Path] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``main_class`` on the JVM with Spark's jars and ``jars`` (default: the production jar);
    text output captured, not checked.

    Pass secrets through ``stdin`` (with the harness's --conf-stdin), never in ``args``.

    Parameters
    ----------
    main_class : str
        The fully qualified class with a ``main`` (e.g. ``io.securebloom.SigV4Tool``).
    args : sequence of str, default ()
        Its arguments (no secrets: they show in the process list).
    timeout : float, default 120.0
        Seconds before the JVM is killed.
    stdin : str, optional
        Text sent to its standard input (empty when None).
    jvm_args : sequence of str
        JVM options before ``-cp`` (default: ``-XX:+UseSerialGC -Xss4m``).
    jars : sequence of pathlib.Path, optional
        Jars first on the class path (default: the production jar, built if stale).

    Returns
    -------
    subprocess.CompletedProcess
        Exit code, stdout and stderr as text; a non-zero exit is not raised.

    Raises
    ------
    secure_bloom.errors.JavaNotFoundError
        No JDK (java / javac 17+) or no pyspark.
    secure_bloom.errors.JvmError
        The production jar had to be compiled and compiling failed.
    subprocess.TimeoutExpired
        The JVM ran longer than ``timeout`` seconds (it is killed).
    """
    cmd = [str(find_java("java")), *jvm_args, "-cp", classpath(jars), main_class, *args]
    return subprocess.run(cmd, input=stdin if stdin is not None else "", capture_output=True,
                          text=True, timeout=timeout, check=False)


def _conf_lines(conf: Mapping[str, str]) -> str:
    lines = []
    for key, value in conf.items():
        if "\n" in key or "\n" in str(value) or "=" in key:
            raise ValueError(f"Hadoop property {key!r}: names may not contain '=' or newlines, "
                             "values may not contain newlines")
        lines.append(f"{key}={value}\n")
    return "".join(lines)


def run_json(
    main_class: str,
    args: Sequence[str] = (),
    conf: Mapping[str, str] | None = None,
    timeout: float = 120.0,
    *,
    jvm_args: Sequence[str] = _DEFAULT_JVM_ARGS,
    jars: Sequence[Path] | None = None,
) -> dict[str, Any]:
    """Run a main class that prints one JSON object (on the class path of :func:`run_java`) and
    return that object.

    ``conf`` (Hadoop properties, secrets included) is sent on stdin with ``--conf-stdin``.

    Parameters
    ----------
    main_class : str
        The fully qualified class with a ``main``.
    args : sequence of str, default ()
        Its arguments (no secrets).
    conf : mapping of str to str, optional
        Hadoop properties, one ``key=value`` line each on stdin.
    timeout : float, default 120.0
        Seconds before the JVM is killed.
    jvm_args : sequence of str
        JVM options before ``-cp``.
    jars : sequence of pathlib.Path, optional
        Jars first on the class path (default: the production jar).

    Returns
    -------
    dict
        The last line of stdout that starts with ``{``, parsed.

    Raises
    ------
    ValueError
        A ``conf`` name holding ``=`` or a newline, or a value holding a newline.
    secure_bloom.errors.JvmError
        A non-zero exit (carrying the harness's one-line error message), no JSON printed, or
        the production jar failed to compile.
    secure_bloom.errors.JavaNotFoundError
        No JDK or no pyspark.
    subprocess.TimeoutExpired
        The JVM ran longer than ``timeout`` seconds.
    json.JSONDecodeError
        The JSON line does not parse.
    """

    full_args = [*args, "--conf-stdin"] if conf is not None else list(args)
    proc = run_java(main_class, full_args, timeout, stdin=_conf_lines(conf or {}),
                    jvm_args=jvm_args, jars=jars)
    if proc.returncode != 0:
        raise JvmError(f"{main_class} exited with {proc.returncode}: {_jvm_error(proc.stderr)}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise JvmError(f"{main_class} printed no JSON (stderr: {proc.stderr.strip()[-500:]})")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _jvm_error(stderr: str) -> str:
    """The harness's JSON error line, or the tail of stderr."""
    for line in reversed(stderr.strip().splitlines()):
        if line.startswith('{"error"'):
            err = json.loads(line)
            causes = "; caused by " + " <- ".join(err["causes"]) if err.get("causes") else ""
            return f"{err['type']}: {err['error']}{causes}"
    return stderr.strip()[-2000:] or "(no output)"
