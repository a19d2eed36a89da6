"""The test suite as one package: its subpackages are then tests.verifiers, tests.sandbox, ..., so
that none shadows an installed library of the same name (tests/verifiers and the verifiers package)."""
