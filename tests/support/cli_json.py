"""Test helper: the ``--json`` envelope of the CLI (README "JSON output")."""

from __future__ import annotations

import json
from typing import Any

from secure_bloom import __version__

#: Commands whose result is a list with one item per file, also for a single file.
FILE_COMMANDS = ("inspect", "probe", "encrypt")


def cli_result(text: str, command: str | None = None) -> Any:
    """The ``result`` of one ``--json`` document, its envelope checked."""
    doc = json.loads(text)
    assert set(doc) == {"version", "command", "secure_bloom", "result"}, doc.keys()
    assert doc["version"] == 1 and doc["secure_bloom"] == __version__
    if command is not None:
        assert doc["command"] == command
    if doc["command"] in FILE_COMMANDS:
        assert isinstance(doc["result"], list)
    return doc["result"]


def cli_one(text: str) -> Any:
    """The only item of a file command's result (one file given)."""
    (item,) = cli_result(text)
    return item
