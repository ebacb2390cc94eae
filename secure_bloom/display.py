"""Text that is safe to show: control characters and undecodable bytes made visible.

File names, column names and values come from files and directories an attacker may control.
Printed raw, an ANSI escape in a column name recolours or rewrites the terminal, a newline forges
a report line, and a file name holding bytes that are not UTF-8 (Python keeps them as
``surrogateescape`` code points) cannot be encoded at all. :func:`visible` renders each such
character as a backslash escape: ``\\x1b``, ``\\n``, ``\\u202e``; an undecodable byte 0xff as
``\\xff``. The result is printable, valid UTF-8 and valid XML 1.0 character data.
"""

from __future__ import annotations

import re

__all__ = ["visible", "visible_lines", "json_safe"]

# C0 and C1 controls, DEL, bidirectional overrides and isolates, lone surrogates (undecodable
# bytes), and the non-characters U+FFFE/U+FFFF (not allowed in XML).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# What json.dumps(ensure_ascii=False) leaves raw in a string although a terminal or an encoder
# chokes on it: DEL, C1 controls, bidi controls, line/paragraph separators, lone surrogates.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's surrogateescape of the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control, bidi-override and undecodable character escaped."""
    return _UNSAFE.sub(_escape, text)


def visible_lines(text: str) -> str:
    """:func:`visible` line by line: the newlines of ``text`` are kept, nothing else is."""
    return "\n".join(visible(line) for line in text.split("\n"))


def json_safe(json_text: str) -> str:
    """JSON text with the characters of ``_JSON_UNSAFE`` written as ``\\uXXXX`` escapes: the same
    JSON value, printable and encodable (such characters can only occur inside JSON strings)."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)
