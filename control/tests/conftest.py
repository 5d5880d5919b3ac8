"""Fixtures of redctl's integration tests (defined in redctl_testnet.py, a
uniquely named module, because several test folders have a conftest.py)."""
from redctl_testnet import compiled, ctl, switch, wire  # noqa: F401
