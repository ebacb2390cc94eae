"""The README's and the documentation site's code runs as written (issues 24, 31): a reader can
copy-paste every block.

Every ```python block of README.md and of the Markdown pages under docs/ runs in a fresh
interpreter with its own empty working directory holding only ``keys/dev-key-list.txt`` (the
blocks make their own throwaway keys or name paths relative to the repository root, and write
their outputs there): blocks using Spark under the ``interop`` marker, blocks using S3 against the
local moto S3-API server (``s3`` marker, ``$S3_ENDPOINT``). Every ``secure-bloom`` command of a
```bash block must parse with the real CLI parser, and every ``python -m benchmarks COMMAND``
must name a command of the checkout's benchmarks/ that answers ``--help``. Every
``examples/*.py`` is run, here or by tests/interop/test_examples.py (which also checks what each
prints).
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.paths import REPO_DIR

README = REPO_DIR / "README.md"
DOCS = REPO_DIR / "docs"
EXAMPLES = REPO_DIR / "examples"


def _pages() -> list[Path]:
    """README.md and the site's hand-written pages (not the generated API pages or the build)."""
    pages = sorted(p for p in DOCS.rglob("*.md") if not {"_build", "api"} & set(p.relative_to(DOCS).parts))
    return [README, *pages]


def _blocks(language: str, pages: list[Path] | None = None) -> list[tuple[str, str]]:
    """(``page:first line``, code) of every fenced block of ``language`` in the pages."""
    found = []
    for page in pages or _pages():
        text = page.read_text(encoding="utf-8")
        found += [(f"{page.relative_to(REPO_DIR)}:{text.count(chr(10), 0, m.start()) + 2}", m.group(1))
                  for m in re.finditer(rf"^```{language}\n(.*?)^```", text, re.S | re.M)]
    return found


def _marks(code: str) -> list[Any]:
    if "spark" in code:
        return [pytest.mark.interop]
    if "S3FileSystem" in code or "s3://" in code:
        return [pytest.mark.s3]
    return []


PYTHON_BLOCKS = [pytest.param(code, id=where, marks=_marks(code)) for where, code in _blocks("python")]


def _run_python(code: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _workdir(tmp_path: Path) -> Path:
    """An empty directory with only the development key list, where the README says it is."""
    (tmp_path / "keys").mkdir()
    shutil.copy(REPO_DIR / "keys" / "dev-key-list.txt", tmp_path / "keys" / "dev-key-list.txt")
    return tmp_path


def test_the_pages_have_blocks_of_each_kind() -> None:
    """The extraction finds the blocks (a changed fence syntax must not make the test vacuous)."""
    kinds = [tuple(m.mark.name for m in p.marks) for p in PYTHON_BLOCKS]
    assert len(PYTHON_BLOCKS) >= 8 and ("interop",) in kinds and ("s3",) in kinds and () in kinds
    assert len(_commands()) >= 15
    assert _blocks("python", [README]) and [c for c in _commands() if c.startswith("python -m benchmarks")]


@pytest.mark.parametrize("code", PYTHON_BLOCKS)
def test_python_block_runs_as_written(code: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    env: dict[str, str] = {}
    if request.node.get_closest_marker("s3"):
        s3 = request.getfixturevalue("s3")
        env = {"S3_ENDPOINT": s3.server_endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    _run_python(code, _workdir(tmp_path), env)


def _commands() -> list[str]:
    """Every ``secure-bloom ...`` and ``python -m benchmarks ...`` command of the pages' bash
    blocks, continuation lines joined (a ``.venv/bin/`` prefix dropped)."""
    commands = []
    for _, code in _blocks("bash"):
        joined = re.sub(r"\\\n\s*", " ", code)
        for line in joined.splitlines():
            line = line.split(" # ")[0].strip().removeprefix(".venv/bin/")  # a trailing comment
            if line.startswith(("secure-bloom", "python -m benchmarks")):
                commands.append(line)
    return sorted(set(commands))


@pytest.mark.parametrize("command", _commands())
def test_cli_command_parses(command: str) -> None:
    """The real parser accepts it (a usage error raises ``CliError``); a benchmarks command must
    exist and answer ``--help``."""
    from secure_bloom.cli.parser import build_parser, parse_args

    argv = shlex.split(command)
    if argv[:3] == ["python", "-m", "benchmarks"]:
        from benchmarks.__main__ import COMMANDS

        if len(argv) == 3:  # the bare command lists the commands
            return
        with pytest.raises(SystemExit) as exited:
            importlib.import_module(COMMANDS[argv[3]]).main([*argv[4:], "--help"])
        assert exited.value.code == 0
        return
    args = parse_args(build_parser(), argv[1:])
    assert args.command == argv[1:][next(i for i, a in enumerate(argv[1:]) if not a.startswith("-"))]


def test_every_example_runs(tmp_path: Path) -> None:
    """Examples that tests/interop/test_examples.py does not run (with its checks of their output)
    run here, so a new example cannot go untested."""
    covered = (REPO_DIR / "tests" / "interop" / "test_examples.py").read_text(encoding="utf-8")
    examples = sorted(EXAMPLES.glob("*.py"))
    assert examples
    for example in examples:
        if f'"{example.name}"' not in covered:
            _run_python(example.read_text(encoding="utf-8"), _workdir(tmp_path / example.stem))
