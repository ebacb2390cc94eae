"""What a shared object needs from the dynamic linker, read from its ELF file: the libraries it names
(DT_NEEDED) and the symbol versions it requires from each (.gnu.version_r). Enough of ELF for the
extension tests (tests/unit/test_native_gcm.py), without readelf or pyelftools: 32- and 64-bit,
either byte order; a file that is not ELF raises ValueError.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

_SHT_DYNAMIC = 6
_SHT_GNU_VERNEED = 0x6FFFFFFE
_DT_NULL, _DT_NEEDED = 0, 1


@dataclass
class DynamicNeeds:
    """The DT_NEEDED sonames, in order, and the versions required per soname (e.g. GLIBC_2.14)."""

    needed: list[str] = field(default_factory=list)
    versions: dict[str, list[str]] = field(default_factory=dict)


def _cstr(data: bytes, offset: int) -> str:
    end = data.index(b"\0", offset)
    return data[offset:end].decode("ascii", "replace")


def dynamic_needs(path: Path) -> DynamicNeeds:
    """The DT_NEEDED entries and required symbol versions of the ELF file at ``path``."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise ValueError(f"{path.name} is not an ELF file")
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        shoff, = struct.unpack_from(order + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
        section = struct.Struct(order + "IIQQQQIIQQ")  # name type flags addr offset size link info align entsize
        dyn = struct.Struct(order + "qQ")
    else:
        shoff, = struct.unpack_from(order + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 0x2E)
        section = struct.Struct(order + "IIIIIIIIII")
        dyn = struct.Struct(order + "iI")
    sections = [section.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]

    def strtab(link: int) -> bytes:
        s = sections[link]
        return data[s[4]:s[4] + s[5]]

    needs = DynamicNeeds()
    for s in sections:
        if s[1] == _SHT_DYNAMIC:
            names = strtab(s[6])
            for at in range(s[4], s[4] + s[5], dyn.size):
                tag, value = dyn.unpack_from(data, at)
                if tag == _DT_NULL:
                    break
                if tag == _DT_NEEDED:
                    needs.needed.append(_cstr(names, value))
        elif s[1] == _SHT_GNU_VERNEED:
            names, at = strtab(s[6]), s[4]
            for _ in range(s[7]):  # sh_info: the number of Verneed entries
                _version, count, file_name, aux, following = struct.unpack_from(order + "HHIII", data, at)
                versions = needs.versions.setdefault(_cstr(names, file_name), [])
                entry = at + aux
                for _ in range(count):
                    _hash, _flags, _other, name, next_aux = struct.unpack_from(order + "IHHII", data, entry)
                    versions.append(_cstr(names, name))
                    entry += next_aux
                at += following
    return needs


def glibc_floor(needs: DynamicNeeds) -> tuple[int, ...]:
    """The newest GLIBC_x.y version required (from any library), as a tuple; (0,) when none."""
    found = [tuple(int(p) for p in v.removeprefix("GLIBC_").split("."))
             for versions in needs.versions.values() for v in versions
             if v.startswith("GLIBC_") and v.removeprefix("GLIBC_").replace(".", "").isdigit()]
    return max(found, default=(0,))
