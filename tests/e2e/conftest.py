"""The end-to-end tests' browser and server. Without selenium or a chromium on PATH they are skipped, with the
reason; with REQUIRE_BROWSER=1 (.ci/run sets it) that is a failure instead."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/webserver.py

import browser  # noqa: E402


@pytest.fixture(scope="module")
def chrome():
    reason = browser.why_not()
    if reason:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    driver = browser.start()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def url():
    from webserver import running

    with running() as base:
        yield base
