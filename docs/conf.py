"""Sphinx configuration of the secure_bloom documentation site (scripts/docs builds it).

Markdown pages (MyST), an API reference generated from the docstrings of every public module
(``_ext/apigen.py``), the CLI reference generated from the real argparse parser
(``_ext/clihelp.py``). No network is needed: no intersphinx, references to other projects'
names are not checked (``nitpick_ignore_regex``); references to our own names are (nitpicky).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import secure_bloom  # noqa: E402  (the installed package scripts/docs documents)

project = "secure_bloom"
author = "the secure-bloom authors"
copyright = "the secure-bloom authors, Apache-2.0"
release = version = secure_bloom.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.viewcode",
    "apigen",
    "clihelp",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# API reference: the defining module documents each object once; every other spelling of its
# name (a package re-export such as secure_bloom.parquet.read_table) resolves to it (apigen).
autodoc_default_options = {"show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# Warnings are errors (scripts/docs runs sphinx -W); every reference to a secure_bloom name must
# resolve. Names of other projects (pyarrow, numpy, the standard library...) are not checked:
# intersphinx would need the network.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(?!secure_bloom\b).*"),          # other projects' names
    (r"py:.*", r"secure_bloom\..*\._\w+.*"),       # private helpers named in a public signature
    (r"py:.*", r"secure_bloom\..*\.[A-Z]"),        # TypeVars (T, K, V)
    (r"py:class", r"secure_bloom\.parquet\.file\.sources\.Resolved"),  # internal, outside __all__
]
autodoc_inherit_docstrings = False  # pytest's own docstrings (the plugin's Items) refer to pytest's docs

# The guides/ and security-model/ toctrees end with a catch-all glob for pages other authors add;
# it matches nothing while every page is listed by name.
suppress_warnings = ["toctree.empty_glob"]

html_theme = "furo"
html_title = f"secure_bloom {release}"
html_static_path: list[str] = []
