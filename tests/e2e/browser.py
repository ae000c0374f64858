"""A headless Chromium (the system's ``chromium`` and ``chromedriver``, Debian's packages: nothing is downloaded)
driven by Selenium, for the end-to-end tests of ``rlbatch serve``."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Optional

ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--window-size=1200,1800"]


def binaries() -> tuple[Optional[str], Optional[str]]:
    """(chromium, chromedriver) found on this machine, each None when missing."""
    names = [os.environ["CHROMIUM"]] if os.environ.get("CHROMIUM") else ["chromium", "chromium-browser", "google-chrome"]
    browser = next((p for p in map(shutil.which, names) if p), None)
    return browser, shutil.which(os.environ.get("CHROMEDRIVER") or "chromedriver")


def why_not() -> str:
    """Why the browser tests cannot run here ('' when they can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return 'selenium is not installed (pip install ".[browser]")'
    browser, driver = binaries()
    if not browser or not driver:
        return "no chromium/chromedriver on PATH (Debian: apt-get install chromium chromium-driver)"
    return ""


def start():
    """A headless Chromium with an empty profile of its own; ``quit()`` it (the profile goes with it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = binaries()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    profile = tempfile.mkdtemp(prefix="rlbatch-chromium-")
    for arg in ARGS + [f"--user-data-dir={profile}"]:
        options.add_argument(arg)
    chrome = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    quit_ = chrome.quit

    def quit_and_clean() -> None:
        quit_()
        shutil.rmtree(profile, ignore_errors=True)

    chrome.quit = quit_and_clean
    return chrome
