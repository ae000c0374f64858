"""Parity tests: every test_parity_* module here is marked ``parity`` and needs the frameworks' real packages.

``PARITY_CONFIGS`` (default 2000) sets the configs per framework, ``PARITY_SEED`` (default 0) the seed.
"""

import os
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        if path.parent == HERE and path.name.startswith("test_parity_"):
            item.add_marker(pytest.mark.parity)


@pytest.fixture
def parity_budget():
    return int(os.environ.get("PARITY_CONFIGS", "2000")), int(os.environ.get("PARITY_SEED", "0"))
