"""Fixtures shared by the softswitch tests (helpers without fixtures: server_support.py)."""

import pytest

from server_support import start_server


@pytest.fixture(scope="module")
def server():
    """A P4Runtime server on a free local port, no pipeline yet -> (server, address)."""
    srv, address = start_server()
    yield srv, address
    srv.stop()
