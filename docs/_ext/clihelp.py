"""``{cli-help}``: the ``secure-bloom`` command reference, rendered from the real argparse parser.

The directive emits one section per subcommand holding its ``--help`` text exactly as the
installed command prints it (80 columns), so the page cannot drift from the parser.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser: argparse.ArgumentParser) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        return parser.format_help()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


class CliHelp(Directive):
    has_content = False

    def run(self) -> list[nodes.Node]:
        from secure_bloom.cli.parser import build_parser

        parser = build_parser()
        out: list[nodes.Node] = [nodes.literal_block(text=_help(parser), language="text")]
        for name, sub in _subcommands(parser).items():
            section = nodes.section(ids=[f"cli-{name}"], names=[f"secure-bloom {name}"])
            section += nodes.title(text=f"secure-bloom {name}")
            section += nodes.literal_block(text=_help(sub), language="text")
            out.append(section)
        return out


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("cli-help", CliHelp)
    return {"parallel_read_safe": True, "version": "1"}
