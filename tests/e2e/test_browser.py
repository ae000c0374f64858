"""``rlbatch serve`` in a real browser (headless Chromium): the flows of the README, clicked and typed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_failing_config() -> str:
    block = re.search(r"rlbatch check --framework verl --gpus 4 -- \\\n(.*?)\n```", README.read_text(), re.S)
    return block.group(1)  # as the README shows it: over several lines, with the shell's continuations


def by_id(chrome, name):
    from selenium.webdriver.common.by import By

    return chrome.find_element(By.ID, name)


def fill(chrome, **fields) -> None:
    for name, value in fields.items():
        box = by_id(chrome, name)
        box.clear()
        box.send_keys(str(value))


def click(chrome, button: str) -> None:
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    old = chrome.find_element("tag name", "html")
    by_id(chrome, button).click()
    # the answer is a new page; polling the old one mid-navigation can meet chromedriver's "unhandled inspector
    # error" (a WebDriverException that is not the stale reference staleness_of waits for): poll again
    WebDriverWait(chrome, 60, ignored_exceptions=(WebDriverException,)).until(ec.staleness_of(old))


def copy_status(chrome) -> str:
    """The copy button's status once the clipboard's write has settled (it is a promise: under load it can take a
    moment after the click)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(chrome, 20).until(lambda d: by_id(d, "copy-status").text != "")
    return by_id(chrome, "copy-status").text


def test_paste_the_readmes_failing_config_and_see_the_broken_rule(chrome, url):
    chrome.get(url + "/")
    fill(chrome, gpus=4, config=readme_failing_config())
    click(chrome, "do-check")
    assert by_id(chrome, "verdict").text == "INVALID"
    rules = [li.text for li in chrome.find_elements("css selector", "li.violation")]
    assert any(r.startswith("verl.step.mini_divisible_by_micro") and "not divisible" in r for r in rules)
    assert "action=check" in chrome.current_url and "gpus=4" in chrome.current_url  # shareable: inputs in the URL


def test_recommend_copy_paste_back_valid(chrome, url):
    chrome.get(url + "/")
    fill(chrome, gpu="rtx4090", gpus=4, model="qwen2.5-1.5b", algo="grpo", n=8, prompt_len=880, response_len=1280)
    click(chrome, "do-recommend")
    assert by_id(chrome, "verdict").text.startswith("best: ")
    chrome.execute_cdp_cmd("Browser.grantPermissions", {"origin": url, "permissions": ["clipboardReadWrite",
                                                                                        "clipboardSanitizedWrite"]})
    by_id(chrome, "copy").click()
    assert copy_status(chrome) == "copied"
    copied = chrome.execute_async_script("navigator.clipboard.readText().then(arguments[0], e => arguments[0]('!' + e))")
    assert copied == by_id(chrome, "best-config").text and "data.train_batch_size=" in copied
    chrome.get(url + "/")
    fill(chrome, gpu="rtx4090", gpus=4, model="qwen2.5-1.5b", config=copied)
    click(chrome, "do-check")
    assert by_id(chrome, "verdict").text == "VALID"
    assert not chrome.find_elements("css selector", "li.violation.error")


def test_the_memory_chart_renders(chrome, url):
    chrome.get(url + "/?action=check&gpu=rtx4090&gpus=4&model=qwen2.5-1.5b&config=" + "+".join(
        readme_failing_config().replace("\\\n", " ").split()).replace("=", "%3D"))
    chart = by_id(chrome, "memory-chart")
    assert chart.size["width"] > 400 and chart.size["height"] > 100
    bars = chrome.find_elements("css selector", "#memory-chart rect.term")
    assert len(bars) >= 4 and all(b.size["width"] > 0 for b in bars)
    assert len(chrome.find_elements("css selector", "#memory-chart line.usable")) >= 3
    assert "GiB" in chart.text and by_id(chrome, "step-times").is_displayed()


def test_bad_input_shows_the_one_paragraph_error(chrome, url):
    chrome.get(url + "/")
    fill(chrome, gpu="rtx9999", gpus=4, config=readme_failing_config())
    click(chrome, "do-check")
    error = by_id(chrome, "error")
    assert error.is_displayed() and error.text.startswith("error: gpu: ") and "Fix:" in error.text
    assert len(chrome.find_elements("css selector", "p.error")) == 1


def test_sweep_results_show_the_command_lines_pictures(chrome, url):
    pytest.importorskip("matplotlib")
    results = (README.parent / "docs/examples/grid-qwen2.5-7b-grpo.results.jsonl").read_text()
    chrome.get(url + "/sweep")
    # typing a results file key by key takes minutes: the box is filled as a paste fills it
    chrome.execute_script("arguments[0].value = arguments[1]", by_id(chrome, "results"), results)
    click(chrome, "do-sweep")
    for picture in ("heatmap", "memory-plot"):  # drawn by the browser: the page's policy lets data: pictures in
        assert chrome.execute_script("return arguments[0].naturalWidth", by_id(chrome, picture)) > 300
    assert "best per model" in by_id(chrome, "cli-text").text
