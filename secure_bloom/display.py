"""Text that is safe to show: control characters and undecodable bytes made visible.

File names, column names and values come from files and directories an attacker may control.
Printed raw, an ANSI escape in a column name recolours or rewrites the terminal, a newline forges
a report line, and a file name holding bytes that are not UTF-8 (Python keeps them as
``surrogateescape`` code points) cannot be encoded at all. :func:`visible` renders each such
character as a backslash escape: ``\\x1b``, ``\\n``, ``\\u202e``; an undecodable byte 0xff as
``\\xff``. The result is printable, valid UTF-8 and valid XML 1.0 character data.

:func:`display_uri` is the one way every report, message, log line and repr names an object given
by URI: ``s3://KEY:SECRET@bucket/key?secret_key=...`` is shown as ``s3://bucket/key`` (no user
info, no query options or fragment, which may carry credentials).
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["visible", "visible_lines", "json_safe", "display_uri", "is_uri", "uri_secrets"]

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Schemes whose authority is a bucket or container name, which never holds ':': a ':' there is
# the rest of user info whose secret held an unescaped '/' (s3://KEY:SE/CRET@bucket/key).
_SECRET_OPTION = re.compile(r"(?i)secret|key|token|pass|cred|session|sig|auth")
_BUCKET_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "az", "wasb", "wasbs"})

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
    """``text`` with every control, bidi-override and undecodable character escaped.

    Parameters
    ----------
    text : str
        Text from a file or a user.

    Returns
    -------
    str
        The text, safe to show on a terminal.

    Raises
    ------
    None
        Nothing of its own.
    """
    return _UNSAFE.sub(_escape, text)


def visible_lines(text: str) -> str:
    """:func:`visible` line by line: the newlines of ``text`` are kept, nothing else is.

    Parameters
    ----------
    text : str
        Lines of text.

    Returns
    -------
    str
        The lines, each made :func:`visible`.

    Raises
    ------
    None
        Nothing of its own.
    """
    return "\n".join(visible(line) for line in text.split("\n"))


def json_safe(json_text: str) -> str:
    """JSON text with the characters of ``_JSON_UNSAFE`` written as ``\\uXXXX`` escapes: the same
    JSON value, printable and encodable (such characters can only occur inside JSON strings).

    Parameters
    ----------
    json_text : str
        A JSON document.

    Returns
    -------
    str
        The same JSON value, printable.

    Raises
    ------
    None
        Nothing of its own.
    """
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def is_uri(text: str) -> bool:
    """True for ``scheme://...`` text (``s3://``, ``gs://``, ``file://``, ``hdfs://``...).

    Parameters
    ----------
    text : str
        A path or URI.

    Returns
    -------
    bool
        Whether it is a URI.

    Raises
    ------
    None
        Nothing of its own.
    """
    return bool(_URI.match(text))


def display_uri(text: str) -> str:
    """How ``text`` (a path or URI) is shown anywhere: a URI without user info or query options
    (``s3://KEY:SECRET@bucket/key?endpoint_override=...&secret_key=...`` is
    ``s3://bucket/key``); scheme, host or bucket and path are kept. A local path, or a
    ``file://`` URI, is shown as it is (a local name may hold '?' or '@').

    Parameters
    ----------
    text : str
        A path or URI.

    Returns
    -------
    str
        What may be shown (no credentials, no options).

    Raises
    ------
    None
        Nothing of its own.
    """
    if not is_uri(text) or text[:7].lower() == "file://":
        return text
    scheme, rest = text.split("://", 1)
    rest = re.split(r"[?#]", rest, maxsplit=1)[0]
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = authority.rpartition("@")[2]
    elif scheme.lower() in _BUCKET_SCHEMES and ":" in authority and "@" in path:
        # KEY:SE/CRET@bucket/key: the secret's '/' was not escaped; the bucket follows the '@'
        authority, slash, path = path.partition("@")[2].partition("/")
    return f"{scheme}://{authority}{slash}{path}"


def uri_secrets(text: str) -> list[str]:
    """What of a URI may be secret, longest first: its user info (whole, and the part after the
    ':') and the value of every option named like a credential (``secret_key=``, ``access_key=``,
    ``session_token=``, ``password=``...), each also percent-decoded. What a message quoting the
    URI (or a parser's complaint about it) must not repeat; empty for anything but a URI.

    Parameters
    ----------
    text : str
        A path or URI.

    Returns
    -------
    list of str
        The secrets a message must not repeat.

    Raises
    ------
    None
        Nothing of its own.
    """
    if not is_uri(text):
        return []
    rest = text.split("://", 1)[1]
    found: list[str] = []
    scheme = text.split("://", 1)[0].lower()
    authority, _, path = re.split(r"[?#]", rest, maxsplit=1)[0].partition("/")
    if "@" in authority:
        userinfo = authority.rpartition("@")[0]
        found += [userinfo, userinfo.partition(":")[2]]
    elif scheme in _BUCKET_SCHEMES and ":" in authority and "@" in path:  # as display_uri
        userinfo = f"{authority}/{path.partition('@')[0]}"
        found += [userinfo, userinfo.partition(":")[2]]
    query = rest.partition("?")[2].partition("#")[0]
    found += [value for name, _, value in (item.partition("=") for item in query.split("&"))
              if _SECRET_OPTION.search(name)]
    forms = {form for value in found for form in (value, urllib.parse.unquote_plus(value)) if len(form) >= 4}
    return sorted(forms, key=len, reverse=True)
