"""Compliance: does every sensitive column of every file carry only encrypted filters (and the
filters a policy requires)? The audit (:mod:`.auditor`), its report (:mod:`.report`), policies
(:mod:`.policy`) and the discovery of files to audit (:mod:`.discover`). Uses ``file/`` only.
"""

from .auditor import audit, audit_file
from .policy import Policy, load_policy, parse_policy
from .report import AuditReport

__all__ = ["audit", "audit_file", "AuditReport", "Policy", "load_policy", "parse_policy"]
