"""The API reference, generated at every build from the package itself.

One page per public module (no ``_`` in its dotted name) under ``api/`` (not committed): a leaf
module documents the names of its ``__all__`` it defines; a package lists what it re-exports,
linked to the defining module. A reference to any spelling of a public name
(``secure_bloom.parquet.read_table``, ``secure_bloom.parquet.read.api.read_table``) resolves to
the one place it is documented (:func:`resolve_alias`), so docstrings keep the names users import.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # scripts/docstrings imports this module without Sphinx
    from docutils import nodes
    from sphinx.addnodes import pending_xref
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

PACKAGE = "secure_bloom"


def public_modules() -> list[str]:
    """Every importable public module of the package, sorted (packages before their modules)."""
    root = importlib.import_module(PACKAGE)
    names = [PACKAGE]
    for info in pkgutil.walk_packages(root.__path__, prefix=PACKAGE + "."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        names.append(info.name)
    return sorted(names)


def _is_alias(obj: Any) -> bool:
    """A type alias (``Identity = tuple[Any, ...]``): documented as data, not as a class."""
    return isinstance(obj, types.GenericAlias) or type(obj).__module__ == "typing" and not inspect.isclass(obj) \
        or typing.get_origin(obj) is not None


def _alias_text(obj: Any) -> str:
    return repr(obj).replace("typing.", "").replace("collections.abc.", "")


def _defined_here(module: Any, name: str) -> bool:
    obj = getattr(module, name, None)
    if _is_alias(obj):
        return True
    home = getattr(obj, "__module__", None)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        return home == module.__name__
    return True  # constants, type aliases: documented where __all__ names them


def public_names(module: Any) -> list[str]:
    """``__all__`` of the module (the names it promises), else its non-underscore globals it defines."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_")
                 and (inspect.isclass(v) or inspect.isfunction(v)) and v.__module__ == module.__name__]
    return list(names)


def _summary(obj: Any) -> str:
    """The first sentence of an object's docstring, as plain text for a list item."""
    doc = inspect.getdoc(obj) if (inspect.isclass(obj) or inspect.isfunction(obj)) else None
    first = (doc or "").strip().split("\n\n")[0].replace("\n", " ")
    at = 0
    while (at := first.find(". ", at)) != -1:
        if first[:at].count("``") % 2 == 0 and first[:at].count("`") % 2 == 0:  # not inside a literal
            return first[:at + 1]
        at += 2
    return first.rstrip(":") + ("" if first.endswith(".") else ".")


def _made_of_parts(cls: type) -> bool:
    """Whether ``cls`` is built on classes of the package alone (``ParquetBloomReader`` on its
    parts): its page then shows their members too, so every method is documented where users
    call it. A class with a builtin base (an exception) shows only its own."""
    bases = cls.__mro__[1:-1]
    return bool(bases) and all(getattr(b, "__module__", "").split(".")[0] == PACKAGE for b in bases)


def _page(modname: str) -> str:
    module = importlib.import_module(modname)
    title = f"``{modname}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {modname}", "   :no-members:", ""]
    names = public_names(module)
    local = [n for n in names if _defined_here(module, n)]
    exported = [n for n in names if not _defined_here(module, n)]
    if exported:
        lines += ["Re-exported here (each documented where it is defined):", ""]
        lines += [f"* :py:obj:`{n} <{modname}.{n}>` - {_summary(getattr(module, n))}" for n in exported] + [""]
    for name in local:
        obj = getattr(module, name)
        if _is_alias(obj):
            lines += [f".. py:data:: {modname}.{name}", "", f"   Type alias: ``{_alias_text(obj)}``.", ""]
        elif inspect.isclass(obj):
            kind = "exception" if issubclass(obj, BaseException) else "class"
            lines += [f".. auto{kind}:: {modname}.{name}", "   :members:", "   :show-inheritance:"]
            lines += ["   :inherited-members:", ""] if _made_of_parts(obj) else [""]
        elif inspect.isfunction(obj):
            lines += [f".. autofunction:: {modname}.{name}", ""]
        elif inspect.ismodule(obj):
            continue
        else:
            lines += [f".. autodata:: {modname}.{name}", "   :no-value:", ""]
    return "\n".join(lines)


def generate(app: Sphinx) -> None:
    out = Path(app.srcdir) / "api"
    out.mkdir(exist_ok=True)
    modules = public_modules()
    wanted = {f"{m}.rst" for m in modules} | {"index.rst"}
    for stale in out.glob("*.rst"):
        if stale.name not in wanted:
            stale.unlink()
    index = ["API reference", "=============", "",
             "Every public module of the package, generated from its docstrings. Import the names from",
             "the package a page lists them under (``from secure_bloom.parquet import read_table``).", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {m}" for m in modules]
    _write(out / "index.rst", "\n".join(index) + "\n")
    for modname in modules:
        _write(out / f"{modname}.rst", _page(modname) + "\n")


def _write(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:  # unchanged pages stay unchanged
        path.write_text(text, encoding="utf-8")


def _canonical(target: str) -> str | None:
    """The dotted name under which ``target`` (any public spelling of an object) is documented."""
    parts = target.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        if inspect.ismodule(obj):
            return obj.__name__
        home, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if home and qual and home.startswith(PACKAGE):
            return f"{home}.{qual}"
        return None
    return None


def resolve_alias(app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element) -> Any:
    """``missing-reference``: a secure_bloom name documented under another dotted name."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    modname = node.get("py:module")
    candidates = [target] + ([f"{modname}.{target}"] if modname else [])
    domain = env.get_domain("py")
    for candidate in candidates:
        if not candidate.startswith(PACKAGE):
            continue
        canonical = _canonical(candidate)
        if canonical and canonical != candidate:
            new = node.deepcopy()
            new["reftarget"] = canonical
            new["refspecific"] = False
            found = domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], canonical, new, contnode)
            if found is None and node["reftype"] != "obj":
                found = domain.resolve_xref(env, node["refdoc"], app.builder, "obj", canonical, new, contnode)
            if found is not None:
                return found
    return None


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", generate)
    app.connect("missing-reference", resolve_alias)
    return {"parallel_read_safe": True, "version": "1"}
