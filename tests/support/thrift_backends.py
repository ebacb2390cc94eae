"""The two Thrift decoders of secure_bloom.thrift_codec side by side (registered as a plugin in
tests/conftest.py).

``thrift_backend``: a module-scoped fixture that runs a test once with the native C decoder
(marker ``native``; a missing extension fails unless SECURE_BLOOM_ALLOW_SKIP names ``native``,
see support.components) and once with the Python one. ``outcomes`` / ``assert_decoders_agree``
parse the same bytes with both and compare everything: the object (repr, so str vs bytes, bool vs
int and NaN payloads count), the bytes consumed, or the error class and message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from secure_bloom import thrift_codec
from secure_bloom.errors import MalformedInputError
from support.components import missing



def _built() -> bool:
    try:
        from secure_bloom import native_thrift  # noqa: F401
    except ImportError:
        return False
    return True


NATIVE_THRIFT_BUILT = _built()

Outcome = tuple[Any, ...]


def require_native_thrift() -> None:
    if not NATIVE_THRIFT_BUILT:
        missing("native", "secure_bloom.native_thrift is not built in this environment")


@pytest.fixture(scope="module", params=[pytest.param("native", marks=pytest.mark.native), "python"])
def thrift_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The decoder thrift_codec.parse uses for the whole test: ``"native"`` or ``"python"``."""
    if request.param == "native":
        require_native_thrift()
    with thrift_codec.forced_backend(request.param):
        yield request.param


def outcome(backend: str, cls: type, data: Any, error: type[MalformedInputError] | None = None) -> Outcome:
    """``("ok", repr, consumed, obj)`` or ``("error", class, message)`` of one parse."""
    with thrift_codec.forced_backend(backend):
        try:
            obj, used = thrift_codec.parse(cls, data, error=error)
        except MalformedInputError as e:
            return ("error", type(e), str(e))
    return ("ok", repr(obj), used, obj)


def assert_decoders_agree(cls: type, data: Any, error: type[MalformedInputError] | None = None) -> Outcome:
    """Parse with both decoders; they must return equal objects and counts or raise alike."""
    require_native_thrift()
    python = outcome("python", cls, data, error)
    native = outcome("native", cls, data, error)
    assert native[:3] == python[:3], f"native {native[:3]!r} != python {python[:3]!r}"
    if python[0] == "ok" and "nan" not in python[1]:  # NaN != NaN; the reprs matched above
        assert native[3] == python[3]
    return python
