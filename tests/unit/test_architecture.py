"""The package's floor plan, read from its own imports (module-level and function-local alike).

Floors, bottom up (arrows only down): foundation (spec, types, errors) < hashing < kernels < values <
Thrift and the plaintext filter < GCM modules < encrypted filter < kms < the Parquet layer (``file/``,
then the rooms, then its public face and the Polars / DuckDB adapters) < Spark < CLI. Inside the Parquet layer, ``file/`` is the floor the three
rooms stand on: ``write/``, ``read/`` and ``audit/`` use ``file/`` and never each other, and ``file/``
imports none of them. No import cycles; no module imports another module's private name.

The modules checked are those of the INSTALLED package (what users get).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path


import secure_bloom

PACKAGE_DIR = Path(secure_bloom.__file__).parent
ROOMS = ("write", "read", "audit")

# (floor, module prefixes); the longest matching prefix decides a module's floor.
FLOORS: list[tuple[int, tuple[str, ...]]] = [
    (0, ("secure_bloom.spec", "secure_bloom.types", "secure_bloom.errors", "secure_bloom.display",
         "secure_bloom.extensions", "secure_bloom.fileio")),
    (1, ("secure_bloom.xxh64", "secure_bloom.sbbf_numpy", "secure_bloom.native_kernels",
         "secure_bloom.native_thrift", "secure_bloom.native_gcm")),
    (2, ("secure_bloom.kernels",)),
    (3, ("secure_bloom.values",)),
    (4, ("secure_bloom.thrift_codec", "secure_bloom.header", "secure_bloom.filter")),
    (5, ("secure_bloom.crypto",)),
    (6, ("secure_bloom.encrypted_filter",)),
    (7, ("secure_bloom.kms",)),
    (8, ("secure_bloom.parquet.file",)),
    (9, ("secure_bloom.parquet.write", "secure_bloom.parquet.read", "secure_bloom.parquet.audit")),
    (10, ("secure_bloom.parquet",)),  # the public face and the engine adapters (polars, duckdb)
    (11, ("secure_bloom.spark",)),
    (12, ("secure_bloom.cli", "secure_bloom.testing", "secure_bloom.pytest_plugin",
          "secure_bloom")),
]


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for path in [*PACKAGE_DIR.rglob("*.py"), *PACKAGE_DIR.rglob("*.so"), *PACKAGE_DIR.rglob("*.pyd")]:
        rel = path.relative_to(PACKAGE_DIR)
        parts = ("secure_bloom", *rel.parent.parts, rel.name.split(".")[0])
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def floor_of(module: str) -> int:
    best = max((p for _, ps in FLOORS for p in ps if module == p or module.startswith(p + ".")), key=len)
    return next(f for f, ps in FLOORS if best in ps)


def room_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["secure_bloom", "parquet"] and len(parts) > 2 and parts[2] in ("file", *ROOMS):
        return parts[2]
    return None


def _resolve(module: str, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")
    if not MODULES[module].name == "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _known(target: str) -> str | None:
    while target and target not in MODULES:
        if "." not in target:
            return None
        target = target.rsplit(".", 1)[0]
    return target or None


def imports() -> Iterator[tuple[str, str, str | None]]:
    """(importer, imported module, imported name or None) for every import in the package."""
    for module, path in MODULES.items():
        if path.suffix != ".py":
            continue  # a compiled extension
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("secure_bloom"):
                        yield module, alias.name, None
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(module, node.level, node.module)
                if not base.startswith("secure_bloom"):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    yield module, sub if sub in MODULES else base, None if sub in MODULES else alias.name


def _edges() -> set[tuple[str, str]]:
    edges = set()
    for importer, imported, _ in imports():
        target = _known(imported)
        if target is None or target == importer:
            continue
        if MODULES[importer].name == "__init__.py" and target.startswith(importer + "."):
            continue  # a package re-exporting its own modules
        edges.add((importer, target))
    return edges


EDGES = _edges()


def test_the_floor_plan_covers_every_module() -> None:
    assert len(MODULES) > 60
    assert {room_of(m) for m in MODULES} >= {"file", "write", "read", "audit"}


def upward(edges: set[tuple[str, str]]) -> list[str]:
    return sorted(f"{a} (floor {floor_of(a)}) -> {b} (floor {floor_of(b)})" for a, b in edges
                  if floor_of(b) > floor_of(a))


def crossings(edges: set[tuple[str, str]]) -> list[str]:
    """Imports between two rooms of the Parquet layer, or from ``file/`` up into one."""
    out = []
    for importer, imported in edges:
        a, b = room_of(importer), room_of(imported)
        if a and b and a != b and (a == "file" or b != "file"):
            out.append(f"{importer} -> {imported}")
    return sorted(out)


def test_arrows_point_only_down() -> None:
    assert upward(EDGES) == []


def test_the_parquet_rooms_never_import_each_other() -> None:
    assert crossings(EDGES) == []


def test_no_module_imports_another_modules_private_name() -> None:
    private = [f"{importer} imports {imported}.{name}" for importer, imported, name in imports()
               if name and name.startswith("_") and not name.startswith("__") and _known(imported) != importer]
    assert private == []


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for a, b in EDGES:
        graph.setdefault(a, set()).add(b)
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]) if nxt in path else nxt)
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_the_checks_see_what_they_forbid() -> None:
    """The rules are live: made-up imports across rooms, from file/ up, or from a lower floor
    up are reported; the package's real imports down are not."""
    made_up = {("secure_bloom.parquet.read.prune", "secure_bloom.parquet.write.writer"),
               ("secure_bloom.parquet.audit.auditor", "secure_bloom.parquet.read.api"),
               ("secure_bloom.parquet.file.reader", "secure_bloom.parquet.read.prune"),
               ("secure_bloom.parquet.read.prune", "secure_bloom.parquet.file.reader")}
    assert crossings(made_up) == ["secure_bloom.parquet.audit.auditor -> secure_bloom.parquet.read.api",
                                  "secure_bloom.parquet.file.reader -> secure_bloom.parquet.read.prune",
                                  "secure_bloom.parquet.read.prune -> secure_bloom.parquet.write.writer"]
    assert len(upward({("secure_bloom.kernels", "secure_bloom.values.arrow"),
                       ("secure_bloom.kms.client", "secure_bloom.parquet.file.keys"),
                       ("secure_bloom.parquet.file.keys", "secure_bloom.kms.client")})) == 2
    assert ("secure_bloom.parquet.read.prune", "secure_bloom.parquet.file.reader") in EDGES
