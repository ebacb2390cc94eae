"""pytest plugin: compliance audits of Parquet files as test items, and fixtures for your own tests.

Registered through the ``pytest11`` entry point, so installing secure-bloom is enough; it does
nothing (and imports nothing heavy: no pyarrow, no pyspark) unless its options are given::

    pytest --secure-bloom-audit warehouse/ --secure-bloom-audit extra.parquet \\
           --secure-bloom-policy compliance.toml --secure-bloom-key-list-file keys.txt

collects one test item per Parquet file (directories searched as ``secure-bloom audit``
searches them, :func:`secure_bloom.parquet.audit.discover.discover`) plus one item per path that cannot
be searched. Each violation of the policy (:mod:`secure_bloom.parquet.audit.policy`) fails its file's
item with file, row group, column and code; a file that could not be checked (missing key,
damaged, unreadable) FAILS too, never skips. One more item, ``policy-coverage``, fails when a
rule matches no column in any of the files (a misspelt path must not pass).
``--secure-bloom-sensitive a,b`` adds sensitive columns (with or without a policy);
``--secure-bloom-hide-filter-sizes`` makes those columns' filters have one size per file (as a
policy rule's ``hide_filter_sizes``: ``FILTER_SIZES_VARY`` fails the file otherwise).

Keys: the CLI's options under the ``--secure-bloom-`` prefix (``key-list-file``, ``key``,
``aad-prefix``, ``kms-url``, ``kms-token-env``, ``kms-mount``), else ``SECURE_BLOOM_KEY_LIST`` /
``SECURE_BLOOM_KEY_LIST_FILE`` (:func:`secure_bloom.parquet.file.keys.key_access_from_sources`).
Key lists are deliberately not taken on the command line.

Object-store URIs (``s3://bucket/prefix?endpoint_override=...``) are searched like directories:
the prefix is listed and its objects recognised by content with range reads; items are named
by the URI without its options (which may hold credentials). A store that cannot be reached is
one failing item (``STORAGE_UNAVAILABLE``), never a skip.

Fixture ``secure_bloom_audit``: ``secure_bloom_audit(paths, policy=None, sensitive=())`` returns
the :class:`~secure_bloom.parquet.audit.report.AuditReport` (keys from the options above), and
``secure_bloom_audit.assert_compliant(paths, ...)`` fails with every violation. Helpers for
hand-written tests: :mod:`secure_bloom.testing` (``assert_compliant``, ``assert_filter_encrypted``,
``assert_probe``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .parquet.audit.report import AuditReport
    from .parquet.file.keys import KeyAccess
    from .parquet.audit.policy import Policy

__all__ = ["SecureBloomAuditItem", "AuditFixture", "pytest_addoption", "pytest_configure",
           "pytest_collection_modifyitems"]

MARKER = "secure_bloom_audit"
_KEYS = ("key_list_file", "key", "aad_prefix", "kms_url", "kms_token_env", "kms_mount", "kms", "kms_region",
         "kms_endpoint", "kms_profile")


def pytest_addoption(parser: pytest.Parser) -> None:
    """pytest hook: the plugin's command-line options (``--secure-bloom-audit``, ``--secure-bloom-policy``, key options).

    Parameters
    ----------
    parser : pytest.Parser
        pytest's option parser.

    Raises
    ------
    None
        Nothing of its own.
    """
    group = parser.getgroup("secure-bloom", "secure-bloom compliance audit of Parquet files")
    group.addoption("--secure-bloom-audit", action="append", default=[], metavar="PATH",
                    help="audit the Parquet files at PATH (a file, a directory searched recursively, or an "
                         "object-store URI where the reader supports it); repeatable: one test per file")
    group.addoption("--secure-bloom-policy", metavar="FILE", help="the TOML compliance policy to audit against")
    group.addoption("--secure-bloom-sensitive", action="append", default=[], metavar="COL[,COL...]",
                    help="sensitive column paths (as audit --sensitive); repeatable")
    group.addoption("--secure-bloom-allow-footer-key", action="store_true",
                    help="accept filters encrypted with the footer key")
    group.addoption("--secure-bloom-hide-filter-sizes", action="store_true",
                    help="the --secure-bloom-sensitive columns' filters must have one size per file (sizes are "
                         "visible without a key and reveal per-row-group cardinality)")
    group.addoption("--secure-bloom-key-list-file", metavar="PATH",
                    help="key-list KMS master keys (default: $SECURE_BLOOM_KEY_LIST, $SECURE_BLOOM_KEY_LIST_FILE)")
    group.addoption("--secure-bloom-key", action="append", default=[], metavar="ID=base64:..|hex:..|text:..",
                    help="explicit key for files whose key_metadata is a plain key id; repeatable")
    group.addoption("--secure-bloom-aad-prefix", metavar="TEXT", help="AAD prefix the files do not store")
    group.addoption("--secure-bloom-kms-url", metavar="URL", help="OpenBao/Vault server with a transit engine")
    group.addoption("--secure-bloom-kms-token-env", metavar="VAR",
                    help="variable holding the OpenBao/Vault token (default: VAULT_TOKEN, then BAO_TOKEN)")
    group.addoption("--secure-bloom-kms-mount", metavar="MOUNT", default="transit", help="transit mount path")
    group.addoption("--secure-bloom-kms", choices=("transit", "aws"), default=None,
                    help="the KMS of the master keys: transit (--secure-bloom-kms-url) or aws (AWS KMS, "
                         "boto3's credential chain)")
    group.addoption("--secure-bloom-kms-region", metavar="REGION", help="AWS region (default: $AWS_REGION)")
    group.addoption("--secure-bloom-kms-endpoint", metavar="URL", help="another AWS KMS endpoint")
    group.addoption("--secure-bloom-kms-profile", metavar="PROFILE", help="AWS profile")


def pytest_configure(config: pytest.Config) -> None:
    """pytest hook: registers the ``secure_bloom_audit`` marker.

    Parameters
    ----------
    config : pytest.Config
        The run's configuration.

    Raises
    ------
    None
        Nothing of its own.
    """
    config.addinivalue_line("markers", f"{MARKER}: a secure-bloom compliance audit of one Parquet file")


class _Session:
    """The plugin's per-run state: keys, policy, and the reports of the files audited."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._keys: KeyAccess | None = None
        self._policy: Policy | None = None
        self._policy_loaded = False

    def keys(self) -> KeyAccess:
        if self._keys is None:
            from .parquet.file.keys import key_access_from_sources

            opts = {name: self.config.getoption(f"secure_bloom_{name}") for name in _KEYS}
            self._keys = key_access_from_sources(
                key_list_file=opts["key_list_file"], key_specs=opts["key"] or (), aad_prefix=opts["aad_prefix"],
                kms_url=opts["kms_url"], kms_token_env=opts["kms_token_env"], kms_mount=opts["kms_mount"],
                kms=opts["kms"], kms_region=opts["kms_region"], kms_endpoint=opts["kms_endpoint"],
                kms_profile=opts["kms_profile"])
        return self._keys

    def policy(self) -> Policy:
        """The policy of the options (``--secure-bloom-policy`` plus ``--secure-bloom-sensitive``)."""
        if not self._policy_loaded:
            from .parquet.audit.policy import ColumnRule, Policy, load_policy

            path = self.config.getoption("secure_bloom_policy")
            names = [c.strip() for group in self.config.getoption("secure_bloom_sensitive")
                     for c in group.split(",") if c.strip()]
            allow = bool(self.config.getoption("secure_bloom_allow_footer_key"))
            hide = bool(self.config.getoption("secure_bloom_hide_filter_sizes"))
            if path is None and not names:
                raise pytest.UsageError("--secure-bloom-audit needs --secure-bloom-policy FILE or "
                                        "--secure-bloom-sensitive COLUMNS")
            if path is not None:
                policy = load_policy(path).with_rules(ColumnRule(path=n, hide_filter_sizes=hide) for n in names)
                if allow:
                    policy = Policy(rules=policy.rules, allow_footer_key=True, source=policy.source)
            else:
                policy = Policy.from_sensitive(names, allow_footer_key=allow, hide_filter_sizes=hide)
            self._policy, self._policy_loaded = policy, True
        assert self._policy is not None
        return self._policy


_STATE = pytest.StashKey[_Session]()


def _state(config: pytest.Config) -> _Session:
    if _STATE not in config.stash:
        config.stash[_STATE] = _Session(config)
    return config.stash[_STATE]


class AuditFailure(Exception):
    """A file that violates the policy or could not be checked (one line per problem)."""


class SecureBloomAuditItem(pytest.Item):
    """One Parquet file audited against the policy; ``problem`` is set for a path that could not
    be searched (it fails without reading anything). Made by the plugin's collection hook with
    ``from_parent``, one per file found under ``--secure-bloom-audit``.

    Parameters
    ----------
    target : str
        The file's path or URI.
    problem : str, optional
        Why the path could not be searched.
    kind : str, optional
        The error kind of ``problem`` (``STORAGE_UNAVAILABLE``...).
    **kwargs
        pytest's ``Item`` arguments (``name``, ``parent``...).
    """

    def __init__(self, *, target: str, problem: str | None = None, kind: str | None = None,
                 **kwargs: Any) -> None:
        from .parquet.file.sources import display_uri

        super().__init__(**kwargs)
        self.target = target
        self.shown = display_uri(target)
        self.problem = problem
        self.kind = kind
        self.add_marker(MARKER)

    def runtest(self) -> None:
        """Audit the file with the plugin's keys and policy; records its status as the user
        property ``status`` (JUnit XML shows it).

        Raises
        ------
        AuditFailure
            A violation or a could-not-check result: one line per violation and per reason
            (:meth:`~secure_bloom.parquet.audit.report.FileResult.failure_lines`).
        pytest.UsageError
            Neither ``--secure-bloom-policy`` nor ``--secure-bloom-sensitive`` was given.
        secure_bloom.errors.SecureBloomError
            The key options cannot be used (``ConfigurationError``) or the policy file is
            invalid (``PolicyError``).
        """
        if self.problem is not None:
            raise AuditFailure(f"COULD NOT CHECK [{self.kind}] {self.shown}: {self.problem}")
        from .parquet.audit.auditor import audit_file

        state = _state(self.config)
        result = audit_file(self.target, keys=state.keys(), policy=state.policy())
        self.user_properties.append(("status", result.status.value))
        lines = result.failure_lines()
        if lines:
            raise AuditFailure("\n".join(lines))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        """The failure as the report shows it: an audit's lines or one of our errors' message
        alone (no traceback: it would point into the plugin, not at the file); anything else
        as pytest shows it.

        Parameters
        ----------
        excinfo : pytest.ExceptionInfo
            What :meth:`runtest` raised.
        style : str, optional
            pytest's traceback style, for other exceptions.

        Returns
        -------
        str
            The text of the failure.

        Raises
        ------
        None
            Nothing of its own.
        """
        if isinstance(excinfo.value, (AuditFailure, pytest.UsageError)) or \
                type(excinfo.value).__module__.startswith("secure_bloom"):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[str, int | None, str]:
        """Where pytest says the item is: the file as shown (credentials removed from a URI).

        Returns
        -------
        (str, None, str)
            The file, no line number, and ``secure-bloom audit: FILE``.

        Raises
        ------
        None
            Nothing of its own.
        """
        return self.shown, None, f"secure-bloom audit: {self.shown}"


class PolicyCoverageItem(pytest.Item):
    """Fails when a policy rule matches no column in any of the audited files."""

    def __init__(self, *, targets: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.targets = list(targets)
        self.add_marker(MARKER)

    def runtest(self) -> None:
        from .errors import SecureBloomError
        from .parquet.file.reader import ParquetBloomReader

        state = _state(self.config)
        policy = state.policy()
        matched: set[int] = set()  # rule indices: a path and a glob of the same text are two rules
        read = 0
        for target in self.targets:
            try:
                with ParquetBloomReader(target, keys=state.keys()) as reader:
                    columns = reader.columns
            except (SecureBloomError, OSError):
                continue  # that file's own item fails
            read += 1
            matched |= {i for i, rule in enumerate(policy.rules) if rule.matches(columns)}
        unknown = [f"{rule.path!r}" + (" (glob)" if rule.glob else "") + (f" (line {rule.line})" if rule.line else "")
                   for i, rule in enumerate(policy.rules) if i not in matched]
        if read and unknown:
            raise AuditFailure("policy rule(s) matching no column in any audited file (misspelt?): "
                               + ", ".join(unknown))
        if not read:
            raise AuditFailure("no audited file could be read, so the policy's columns cannot be matched")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, AuditFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "secure-bloom", None, "secure-bloom policy coverage"


def _targets(paths: Iterable[str]) -> Iterator[tuple[str, str | None, str | None]]:
    """(path, problem, kind) for every file to audit and every path that cannot be searched."""
    from .parquet.audit.discover import discover

    for entry in discover(paths).entries:
        yield entry.path, entry.problem, entry.kind


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest hook: with ``--secure-bloom-audit``, one test per Parquet file found and a policy-coverage test.

    Parameters
    ----------
    session : pytest.Session
        The session.
    config : pytest.Config
        The run's configuration.
    items : list of pytest.Item
        The collected items (extended in place).

    Raises
    ------
    pytest.UsageError
        Bad plugin options (a policy file that does not load, conflicting key options).
    """
    paths = config.getoption("secure_bloom_audit")
    if not paths:
        return
    from .errors import SecureBloomError

    state = _state(config)
    try:  # a bad policy or key option is a usage error before anything runs
        state.policy()
        state.keys()
    except SecureBloomError as e:
        raise pytest.UsageError(f"secure-bloom: {e}") from None
    from .parquet.file.sources import display_uri

    new: list[pytest.Item] = []
    try:
        targets = list(_targets(paths))
    except SecureBloomError as e:  # e.g. a URI pyarrow cannot open
        raise pytest.UsageError(f"secure-bloom: {e}") from None
    for path, problem, kind in targets:
        new.append(SecureBloomAuditItem.from_parent(session, name=f"secure_bloom_audit[{display_uri(path)}]",
                                                    target=path, problem=problem, kind=kind))
    new.append(PolicyCoverageItem.from_parent(session, name="secure_bloom_audit[policy-coverage]",
                                              targets=[p for p, problem, _ in targets if problem is None]))
    items.extend(new)


# --- fixture -------------------------------------------------------------------------------------


class AuditFixture:
    """``secure_bloom_audit(paths, policy=None, sensitive=())`` -> AuditReport, with the keys of
    the plugin's options; ``.assert_compliant(...)`` fails with every violation.

    Parameters
    ----------
    config : pytest.Config
        The run's configuration (the plugin's key options are read from it when first needed).
    """

    def __init__(self, config: pytest.Config) -> None:
        self._state = _state(config)

    @property
    def keys(self) -> KeyAccess:
        """The keys the plugin's options give (``--secure-bloom-key-list-file``...)."""
        return self._state.keys()

    def __call__(self, paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 policy: Policy | str | os.PathLike[str] | None = None, sensitive: Iterable[str] = (),
                 keys: KeyAccess | None = None) -> AuditReport:
        from .testing import audit_report

        return audit_report(paths, policy, keys if keys is not None else self.keys, sensitive=sensitive)

    def assert_compliant(self, paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                         policy: Policy | str | os.PathLike[str] | None = None, sensitive: Iterable[str] = (),
                         keys: KeyAccess | None = None) -> AuditReport:
        """:func:`secure_bloom.testing.assert_compliant` with the plugin's keys by default.

        Parameters
        ----------
        paths : str, os.PathLike or iterable of them
            Files or directories.
        policy : Policy, str, os.PathLike or None
            A policy, or a TOML policy file.
        sensitive : iterable of str, optional
            Sensitive column names, beside (or instead of) the policy.
        keys : KeyAccess, optional
            Instead of the plugin's keys.

        Returns
        -------
        AuditReport
            The report, when every file complies.

        Raises
        ------
        AssertionError
            A violation, or a file that could not be checked.
        secure_bloom.errors.PolicyError
            The policy file is invalid.
        secure_bloom.errors.ConfigurationError
            The plugin's key options cannot be used (when ``keys`` is not given).
        """
        from .testing import assert_compliant


        return assert_compliant(paths, policy, keys if keys is not None else self.keys, sensitive=sensitive)


@pytest.fixture
def secure_bloom_audit(request: pytest.FixtureRequest) -> AuditFixture:
    """Audit Parquet files from a test: see :class:`AuditFixture`."""
    return AuditFixture(request.config)
