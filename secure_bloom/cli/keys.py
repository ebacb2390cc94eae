"""Key options shared by every ``secure-bloom`` command, and the redaction that keeps them secret.

The options map onto :mod:`secure_bloom.kms` (SPEC_NOTES 7 and 9)::

    --key-list 'id:BASE64, ...'   --key-list-file PATH     key-list KMS master keys (KeyListKms)
    --key ID=base64:...|hex:...|text:...  (repeatable)     explicit keys for key ids (ExplicitKeys)
    --aad-prefix TEXT                                     AAD prefix a file does not store
    --kms-url URL --kms-token-env VAR [--kms-mount M]      OpenBao / Vault transit (OpenBaoTransitKms)
    --kms aws [--kms-region R] [--kms-endpoint URL] [--kms-profile P]
                                                          AWS KMS (AwsKms; boto3's credential chain)

Without a key-list option, ``--kms-url`` or ``--kms aws``, ``SECURE_BLOOM_KEY_LIST`` and then
``SECURE_BLOOM_KEY_LIST_FILE`` are used.

:class:`Redactor` collects every secret the process was given (key specs, key lists, the KMS token)
in the forms it could be printed in (the text given, raw bytes, hex, Base64) *before* the command
line is parsed, so that even argparse's own messages are scrubbed before they reach stderr.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..display import uri_secrets
from .exits import UsageError

__all__ = ["ENV_KEY_LIST", "ENV_KEY_LIST_FILE", "key_options_parent", "key_access_from_args",
           "Redactor", "REDACTED", "looks_like_key_material", "argv_key_options", "argv_key_warning"]

ENV_KEY_LIST = "SECURE_BLOOM_KEY_LIST"          # = secure_bloom.parquet.file.keys.ENV_KEY_LIST (no import: kept light)
ENV_KEY_LIST_FILE = "SECURE_BLOOM_KEY_LIST_FILE"
REDACTED = "<redacted>"

_KEY_SPEC = re.compile(r"^[^=\s]+=(base64|hex|text):(.*)\Z", re.DOTALL)
# Options whose *value* is secret. "--key-list-file" and "--kms-token-env" name places, not secrets.
_SECRET_OPTIONS = ("--key", "--key-list")
_KNOWN_OPTIONS = ("--key", "--key-list", "--key-list-file", "--kms-token-env", "--kms-url", "--kms-mount", "--kms",
                  "--kms-region", "--kms-endpoint", "--kms-profile")
# AWS credentials boto3 reads from the environment (the CLI never prints them).
_AWS_SECRET_VARIABLES = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ACCESS_KEY_ID")
_TRUNCATED = "..."  # how messages mark a value they shortened (e.g. values._fail)
_MIN_SECRET_CHARS = 4  # shorter strings would redact ordinary words; AES keys are >= 16 bytes
_AES_KEY_BYTES = (16, 24, 32)
# Shapes of secrets on a command line: a key-list entry ``id:BASE64``, bare Base64 or hex of an AES
# key, a Vault/OpenBao token (``hvs.``, ``s.``, ...). Used where the CLI cannot know what a word
# means (an unknown option's value, a stray positional) to treat it as secret.
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}\Z")
_HEX = re.compile(r"(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{48}|[0-9a-fA-F]{64})\Z")
_TOKEN = re.compile(r"(?:hv[sbr]|[sbr])\.[A-Za-z0-9_.-]{16,}\Z")
# An unknown option whose name says its value is secret (e.g. a hoped-for --kms-token).
_SECRET_OPTION_WORDS = ("key", "token", "secret", "password", "passwd", "credential")


def argv_key_options(args: argparse.Namespace) -> list[str]:
    """The key options that carried key material on the command line (``--key-list``, ``--key``).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    list of str
        The option names.

    Raises
    ------
    None
        Nothing of its own.
    """
    given = (("--key-list", getattr(args, "key_list", None) is not None), ("--key", bool(getattr(args, "key", None))))
    return [option for option, present in given if present]


def argv_key_warning(options: Sequence[str]) -> str:
    """The one-line warning printed whenever key material arrives in argv: it names the options,
    never their values. Always printed, as scripts and CI are where argv is most exposed (``ps``,
    logs, shell history).

    Parameters
    ----------
    options : sequence of str
        The option names.

    Returns
    -------
    str
        The warning.

    Raises
    ------
    None
        Nothing of its own.
    """
    return (f"key material given on the command line ({', '.join(options)}) is visible to other local users "
            f"(ps) and may be kept in shell history and CI logs; prefer --key-list-file PATH or ${ENV_KEY_LIST_FILE}")


def _is_key_bytes_text(text: str) -> bool:
    if _HEX.match(text):
        return True
    if not _BASE64.match(text):
        return False
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            if len(decode(text + "=" * (-len(text) % 4))) in _AES_KEY_BYTES:
                return True
        except (binascii.Error, ValueError):
            pass
    return False


def looks_like_key_material(text: str) -> bool:
    """True for a word shaped like a key spec, a key list (entry), AES key bytes or a KMS token.
    (Bare Base64 counts only with upper case, lower case and digits, as random keys have.)

    Parameters
    ----------
    text : str
        A word from the command line.

    Returns
    -------
    bool
        Whether to treat it as secret.

    Raises
    ------
    None
        Nothing of its own.
    """
    text = text.strip()
    mixed = all(any(test(c) for c in text) for test in (str.isupper, str.islower, str.isdigit))
    if _KEY_SPEC.match(text) or _TOKEN.match(text) or _HEX.match(text) or (mixed and _is_key_bytes_text(text)):
        return True
    entries = [e.strip() for line in text.splitlines() for e in line.split(",") if e.strip()]
    return any(":" in e and _is_key_bytes_text(e.partition(":")[2].strip()) for e in entries)


def key_options_parent() -> argparse.ArgumentParser:
    """The argparse parent that gives every command the same key options.

    Returns
    -------
    argparse.ArgumentParser
        A parent parser (``add_help=False``).

    Raises
    ------
    None
        Nothing of its own.
    """
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group(
        "keys", "How to decrypt encrypted files. Key material given here is never printed.")
    group.add_argument("--key-list", metavar="'ID:BASE64, ...'",
                       help="key-list KMS master keys, as in parquet.encryption.key.list "
                            f"(default: ${ENV_KEY_LIST})")
    group.add_argument("--key-list-file", metavar="PATH",
                       help=f"read the key list from a file (default: ${ENV_KEY_LIST_FILE})")
    group.add_argument("--key", action="append", default=[], metavar="ID=base64:..|hex:..|text:..",
                       help="explicit key for files whose key_metadata is a plain key id; repeatable")
    group.add_argument("--aad-prefix", metavar="TEXT",
                       help="AAD prefix for files written with supply_aad_prefix (not stored in the file)")
    group.add_argument("--kms-url", metavar="URL", help="OpenBao/Vault server with a transit engine")
    group.add_argument("--kms-token-env", metavar="VAR",
                       help="environment variable holding the OpenBao/Vault token "
                            "(default: VAULT_TOKEN, then BAO_TOKEN)")
    group.add_argument("--kms-mount", metavar="MOUNT", default="transit",
                       help="transit engine mount path (default: %(default)s)")
    group.add_argument("--kms", choices=[k.value for k in _kms_services()], default=None,
                       help="the KMS holding the master keys: transit (with --kms-url) or aws (AWS KMS; "
                            "credentials from boto3's chain: environment, profile, role)")
    group.add_argument("--kms-region", metavar="REGION", help="AWS region of --kms aws (default: $AWS_REGION)")
    group.add_argument("--kms-endpoint", metavar="URL",
                       help="another AWS KMS endpoint for --kms aws (a VPC or FIPS endpoint)")
    group.add_argument("--kms-profile", metavar="PROFILE", help="AWS profile for --kms aws")
    return parent


def _kms_services() -> Any:
    from ..parquet.file.keys import KmsService

    return KmsService


def key_access_from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Any:
    """A :class:`secure_bloom.parquet.KeyAccess` from the parsed key options
    (:func:`secure_bloom.parquet.file.keys.key_access_from_sources`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    environ : mapping, optional
        The environment (default: ``os.environ``).

    Returns
    -------
    KeyAccess
        The caller's keys.

    Raises
    ------
    secure_bloom.cli.exits.UsageError
        Conflicting or invalid key options (values never shown).
    secure_bloom.errors.MalformedKeyMaterialError
        A key list or key spec that does not parse.
    OSError
        ``--key-list-file`` cannot be read.
    """
    from ..errors import ConfigurationError
    from ..parquet.file.keys import key_access_from_sources

    try:
        return key_access_from_sources(
            key_list=None if args.key_list is None else str(args.key_list), key_list_file=args.key_list_file,
            key_specs=args.key or (), aad_prefix=args.aad_prefix, kms_url=args.kms_url,
            kms_token_env=args.kms_token_env, kms_mount=args.kms_mount, kms=getattr(args, "kms", None),
            kms_region=getattr(args, "kms_region", None), kms_endpoint=getattr(args, "kms_endpoint", None),
            kms_profile=getattr(args, "kms_profile", None), environ=environ)
    except ConfigurationError as e:
        raise _usage(str(e)) from None


def _usage(message: str) -> UsageError:
    return UsageError(message)


# --- redaction -------------------------------------------------------------------------------


def _forms_of_bytes(raw: bytes) -> set[str]:
    forms = {raw.hex(), raw.hex().upper(), base64.b64encode(raw).decode("ascii"),
             base64.urlsafe_b64encode(raw).decode("ascii")}
    forms |= {f.rstrip("=") for f in forms}
    try:
        forms.add(raw.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    forms.add(repr(raw)[2:-1])  # how bytes print inside a repr: b'...'
    return forms


def _decode_any(text: str) -> Iterable[bytes]:
    text = text.strip()
    yield text.encode("utf-8", errors="ignore")
    try:
        yield bytes.fromhex(text)
    except ValueError:
        pass
    try:
        yield base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        pass


class Redactor:
    """Replaces every known secret (and its raw, hex and Base64 forms) in text with ``<redacted>``.

    Parameters
    ----------
    secrets : iterable of str, optional
        Secrets to start with (:meth:`from_invocation` collects an invocation's).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        for s in secrets:
            self.add_text(s)

    def add_text(self, secret: str) -> None:
        """A secret given as text: it, and every byte string it may encode, in every form.

        Parameters
        ----------
        secret : str
            A secret, in the form given.

        Raises
        ------
        None
            Nothing of its own.
        """
        if not secret:
            return
        self._add(secret)
        self._add(secret.strip())
        for raw in _decode_any(secret):
            if raw:
                for form in _forms_of_bytes(raw):
                    self._add(form)

    def add_key_spec(self, spec: str) -> None:
        """``ID=enc:VALUE`` (or anything that might be one): the spec, its value and the key.

        Parameters
        ----------
        spec : str
            An ``ID=base64:...|hex:...|text:...`` spec.

        Raises
        ------
        None
            Nothing of its own.
        """
        self.add_text(spec)
        match = _KEY_SPEC.match(spec.strip())
        if match:
            self.add_text(match.group(2))
        elif "=" in spec:
            self.add_text(spec.split("=", 1)[1])

    def add_key_list(self, key_list: str) -> None:
        """``id:base64, ...``: the whole text and each entry's key part.

        Parameters
        ----------
        key_list : str
            A key list (``id:base64, ...``).

        Raises
        ------
        None
            Nothing of its own.
        """
        self.add_text(key_list)
        for line in key_list.splitlines():
            for entry in line.split(","):
                _, _, value = entry.partition(":")
                self.add_text(value)
                self.add_text(entry)

    def _add(self, form: str) -> None:
        if len(form) >= _MIN_SECRET_CHARS:
            self._secrets.add(form)

    def __call__(self, text: str) -> str:
        # Longest first, so a secret's prefix never leaves its tail behind.
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
        if _TRUNCATED in text:  # a message that cut an echoed value short can end in part of a secret
            for secret in sorted(self._secrets, key=len, reverse=True):
                for n in range(len(secret) - 1, _MIN_SECRET_CHARS - 1, -1):
                    cut = secret[:n] + _TRUNCATED
                    if cut in text:
                        text = text.replace(cut, REDACTED + _TRUNCATED)
        return text

    def __len__(self) -> int:
        return len(self._secrets)

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secret forms)"

    @classmethod
    def from_invocation(cls, argv: Sequence[str], environ: Mapping[str, str]) -> Redactor:
        """Every secret the command line and environment can carry, found before parsing.

        Catches the values of ``--key`` and ``--key-list`` (``--opt VALUE`` and ``--opt=VALUE``),
        any argument shaped like a key spec (also a misspelt option's value), the credentials of
        any URI argument (user info, ``secret_key=``-like options), the key-list environment
        variable and file, and the KMS token variable.

        Parameters
        ----------
        argv : sequence of str
            The command line.
        environ : mapping
            The environment.

        Returns
        -------
        Redactor
            Every secret of the invocation.

        Raises
        ------
        None
            Nothing of its own.
        """
        red = cls()
        argv = list(argv)
        token_vars = ["VAULT_TOKEN", "BAO_TOKEN"]
        key_list_files = [environ.get(ENV_KEY_LIST_FILE, "")]
        for i, arg in enumerate(argv):
            nxt = argv[i + 1] if i + 1 < len(argv) else ""
            name, eq, inline = arg.partition("=")
            if name.startswith("--") and eq:
                value: str | None = inline
            elif arg.startswith("--"):
                value = nxt
            else:
                value = None
            if name == "--key" and value is not None:
                red.add_key_spec(value)
            elif name == "--key-list" and value is not None:
                red.add_key_list(value)
            elif name == "--key-list-file" and value is not None:
                key_list_files.append(value)
            elif name == "--kms-token-env" and value is not None:
                token_vars.append(value)
            if _KEY_SPEC.match(arg) or (arg.startswith("--") and _KEY_SPEC.match(inline)):
                red.add_key_spec(inline if arg.startswith("--") else arg)
            word = inline if name.startswith("--") and eq else arg
            if looks_like_key_material(word) and not os.path.lexists(word):  # e.g. after a misspelt option
                red.add_key_list(word)
            if name.startswith("-") and value is not None and name not in _KNOWN_OPTIONS \
                    and any(w in name.lower() for w in _SECRET_OPTION_WORDS):
                red.add_text(value)  # --kms-token VALUE, --password=VALUE: not ours, but secret
            for secret in uri_secrets(word):  # s3://KEY:SECRET@bucket/..., ?secret_key=...
                red.add_text(secret)
        if environ.get(ENV_KEY_LIST):
            red.add_key_list(environ[ENV_KEY_LIST])
        for var in [*token_vars, *_AWS_SECRET_VARIABLES]:
            if environ.get(var):
                red.add_text(environ[var])
        for path in key_list_files:
            if path:
                try:
                    with open(path, encoding="utf-8", errors="replace") as f:
                        red.add_key_list(f.read(1 << 20))
                except OSError:
                    pass
        return red
