"""Helpers shared by the test suite (not tests themselves): file builders, KMS doubles labelled as
test doubles, a real OpenBao server fixture, Spark data, robustness tools, and the policy for
missing real components. Fixtures are registered in tests/conftest.py through ``pytest_plugins``."""
