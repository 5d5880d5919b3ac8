"""Fixture: a lab network that is always removed, whatever the test does."""

import pytest

from aqmlab.lab import LabNetwork


@pytest.fixture
def lab(tmp_path):
    with LabNetwork(workdir=tmp_path / "lab") as network:
        yield network
