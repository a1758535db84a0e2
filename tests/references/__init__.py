"""Shared reference material of the tests (not tests): slow references, strategies,
helpers and stored expectations. See tests/README.md."""
