"""Fixtures of the xlsa17 plugin tests (defined in ``helpers.py``, which the tests import)."""

from tests.plugins.xlsa17.helpers import awa2_full, mini, shared, xlsa17_all  # noqa: F401
