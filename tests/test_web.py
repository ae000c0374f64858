"""``rlbatch serve`` without a browser: its inputs, the pasted text, the worker caps, the HTTP answers, the Space's
files. (tests/e2e drives the same pages in a headless Chromium.)"""

from __future__ import annotations

import html
import re
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import pytest

from clirun import run
from rlbatch_solver.errors import InputError
from rlbatch_solver.web.chart import memory_svg
from rlbatch_solver.web.form import read_inputs
from rlbatch_solver.web.pasted import materialize
from rlbatch_solver.web.server import Settings, make_server
from rlbatch_solver.web.worker import Limits, Workers
from webserver import fetch, running

ROOT = Path(__file__).resolve().parent.parent


def readme_failing_config() -> str:
    """The arguments of the README's "Check a config" example (the config that breaks a rule)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"rlbatch check --framework verl --gpus 4 -- \\\n(.*?)\n```", text, re.S).group(1)
    return block.replace("\\\n", " ")


@pytest.fixture(scope="module")
def url():
    with running() as base:
        yield base


# ----------------------------------------------------------------------------------------------- inputs
def test_inputs_read_numbers_and_refuse_file_paths():
    i = read_inputs(parse_qs("action=check&gpus=4&gpu=h100&config=a%3D1"))
    assert (i.action, i.gpus, i.gpu, i.config) == ("check", 4, "h100", "a=1")
    assert read_inputs(parse_qs(i.query())) == i  # the URL holds every input
    for bad in ("gpus=four", "gpus=-2", "action=rm", "model=/etc/hostname", "model=card.yaml",
                "config=" + "x" * 70_000):
        with pytest.raises(InputError):
            read_inputs(parse_qs(bad))


def test_the_longest_response_is_read_as_the_other_numbers_are():
    i = read_inputs(parse_qs("action=check&longest_response_len=900"))
    assert i.longest_response_len == 900 and read_inputs(parse_qs(i.query())) == i
    for bad in ("900tokens", "-1", "0", "1e3", "9" * 13, "nan", "<script>"):
        with pytest.raises(InputError) as e:
            read_inputs(parse_qs(urlencode({"longest_response_len": bad})))
        assert e.value.field == "longest_response_len"


def test_pasted_text_becomes_the_command_lines_arguments(tmp_path):
    script = "#!/bin/bash\nN=8\npython3 -m verl.trainer.main_ppo data.train_batch_size=64 \\\n  actor_rollout_ref.rollout.n=$N\n"
    assert materialize(script, tmp_path) == ([str(tmp_path / "pasted.sh")], None)
    assert (tmp_path / "pasted.sh").read_text() == script  # kept as pasted, read by the CLI's script reader
    assert materialize("data:\n  train_batch_size: 64\n", tmp_path) == (None, str(tmp_path / "pasted.yaml"))
    assert materialize("a=1 \\\n  b='2 3'  # c\n", tmp_path) == (["a=1", "b=2 3"], None)
    assert materialize("  \n", tmp_path) == (None, None)
    with pytest.raises(InputError, match="unbalanced|quote"):
        materialize("a='1", tmp_path)


def test_a_pasted_yaml_past_the_limits_is_the_one_paragraph_error_not_an_internal_error(tmp_path):
    # the page's own test of "is this YAML?" read the paste with no limits: 5,000 nested lists were a RecursionError
    # (HTTP 500 "internal error"), an alias bomb was refused later naming the server's temporary file
    with pytest.raises(InputError, match="the pasted text.*nests deeper than 64 levels"):
        materialize("[" * 5000 + "]" * 5000, tmp_path)
    bomb = "a: &a [1,1,1,1,1,1,1,1,1]\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefg", "bcdefgh"))
    with pytest.raises(InputError, match="the pasted text is refused: it holds more than") as err:
        materialize(bomb, tmp_path)
    assert str(tmp_path) not in str(err.value)
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_nothing_pasted_is_executed(url, tmp_path):
    marker = tmp_path / "ran"
    script = (f"#!/bin/bash\ntouch {marker}\nN=$(touch {marker}; echo 8)\n"
              f"python3 -m verl.trainer.main_ppo data.train_batch_size=64 actor_rollout_ref.rollout.n=`touch {marker}`\n")
    for action in ("check", "recommend", "explain"):
        fetch(url + "/?" + urlencode({"action": action, "gpu": "h100", "model": "qwen2.5-7b", "config": script,
                                      "error": f"$(touch {marker})"}))
    assert not marker.exists()


def test_a_pasted_word_naming_a_file_on_the_server_is_refused(tmp_path):
    secret = tmp_path / "accelerate.yaml"
    secret.write_text("num_processes: 8\n")
    with pytest.raises(InputError, match="names a file on the server"):
        materialize(f"accelerate launch --config_file={secret} grpo.py --per_device_train_batch_size 4", tmp_path)
    # a relative name climbing out of the request's folder (where the solve runs) names it as well: it was read
    request = tmp_path / "request"
    request.mkdir()
    with pytest.raises(InputError, match="names a file on the server"):
        materialize("accelerate launch --config_file ../accelerate.yaml grpo.py --per_device_train_batch_size 4",
                    request)


# ----------------------------------------------------------------------------------------------- worker caps
def test_a_slow_solve_is_stopped_at_the_time_cap():
    workers = Workers(Limits(timeout_s=1.0))
    started = time.monotonic()
    out = workers.run(time.sleep, 30)
    assert time.monotonic() - started < 10
    assert out["status"] == 503 and "took longer than the 1 s" in out["error"]


def test_a_slow_solve_does_not_hold_up_another():
    workers = Workers(Limits(timeout_s=20.0, workers=2))
    workers.warm()
    slow = threading.Thread(target=workers.run, args=(time.sleep, 4))
    slow.start()
    time.sleep(0.5)
    started = time.monotonic()
    assert workers.run(len, "abc") == 3
    assert time.monotonic() - started < 3.0
    slow.join()


def test_an_answer_that_cannot_be_sent_back_is_an_error_not_a_hang():
    out = Workers(Limits(timeout_s=20.0)).run(__import__, "json")  # a module: it does not pickle
    assert out["status"] == 500 and "could not be sent back" in out["error"]


def _cannot_rebuild():
    raise TypeError("cannot rebuild")


class _Unreadable:
    """Pickles in the worker; rebuilding it in the server raises (as ListFlag once did)."""

    def __reduce__(self):
        return _cannot_rebuild, ()


def _unreadable(_):
    return _Unreadable()


def test_an_answer_that_cannot_be_read_back_is_an_error_not_an_empty_reply():
    out = Workers(Limits(timeout_s=20.0)).run(_unreadable, None)
    assert out["status"] == 500 and "could not be read back" in out["error"], out


def test_a_greedy_solve_is_stopped_at_the_memory_cap():
    out = Workers(Limits(memory_mib=2048)).run(bytearray, 8 * 2**30)
    assert out["status"] == 503 and "memory" in out["error"]


# ----------------------------------------------------------------------------------------------- HTTP
def test_it_binds_localhost_unless_told():
    server = make_server(port=0)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()
    assert "127.0.0.1" in run("serve", "--help").stdout


def test_the_form_and_the_readmes_failing_config(url):
    status, page = fetch(url + "/")
    assert status == 200 and '<form method="get"' in page and "<textarea" in page
    status, page = fetch(url + "/?" + urlencode({"action": "check", "gpus": 4, "config": readme_failing_config()}))
    assert status == 200
    assert 'class="verdict invalid">INVALID' in page
    assert "verl.step.mini_divisible_by_micro" in page and "256//4 = 64" in page
    assert "content-security-policy" not in page.lower()  # a header, not markup


def test_check_with_the_longest_response_the_data_reaches(url):
    """The form's longest-response field is check's --longest-response-len: the rollout waits for at most it."""
    status, page = fetch(url + "/")
    assert 'name="longest_response_len"' in page
    query = {"action": "check", "gpus": 8, "gpu": "h100", "model": "qwen2.5-1.5b",
             "config": "data.train_batch_size=64 data.max_response_length=8192"}
    status, page = fetch(url + "/?" + urlencode({**query, "longest_response_len": 2000}))
    assert status == 200 and "at most the longest given" in html.unescape(page), page[-3000:]
    status, page = fetch(url + "/?" + urlencode({**query, "longest_response_len": "-5"}))
    assert status == 400 and "longest_response_len" in page


def test_bad_input_is_the_one_paragraph_error_with_status_400(url):
    status, page = fetch(url + "/?" + urlencode({"action": "check", "gpus": 4, "gpu": "rtx9999",
                                                 "config": readme_failing_config()}))
    assert status == 400
    error = re.search(r'<p class="error" id="error">(.*?)</p>', page, re.S).group(1)
    assert error.startswith("error: gpu: ") and "Fix:" in error and "\n" not in error.strip()


def test_recommend_then_check_its_answer(url):
    query = {"action": "recommend", "gpu": "rtx4090", "gpus": 4, "model": "qwen2.5-1.5b", "algo": "grpo", "n": 8,
             "prompt_len": 880, "response_len": 1280}
    status, page = fetch(url + "/?" + urlencode(query))
    assert status == 200 and 'id="best-config"' in page and 'id="memory-chart"' in page and 'id="step-times"' in page
    back = re.search(r'id="check-it" href="/\?([^"]*)"', page).group(1).replace("&amp;", "&")
    status, page = fetch(url + "/?" + back)
    assert status == 200 and 'class="verdict valid">VALID' in page and 'id="memory-chart"' in page


def test_recommend_from_a_pasted_config_shows_the_diff(url):
    query = {"action": "recommend", "gpu": "rtx4090", "gpus": 4, "model": "qwen2.5-1.5b",
             "config": readme_failing_config() + " data.max_prompt_length=880 data.max_response_length=1280"}
    status, page = fetch(url + "/?" + urlencode(query))
    assert status == 200 and 'id="diff"' in page
    assert '<span class="del">- actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=24</span>' in page


def test_recommend_from_a_pasted_script_copies_the_script_with_the_answer_in(url):
    script = (ROOT / "tests/data/scripts/verl/run_qwen2-7b.sh").read_text()
    status, page = fetch(url + "/?" + urlencode({"action": "recommend", "gpu": "h100", "model": "qwen2.5-7b",
                                                 "config": script}))
    assert status == 200 and "(your script with it written in)" in page and 'id="diff"' in page
    copied = html.unescape(re.search(r'id="best-config">(.*?)</pre>', page, re.S).group(1))
    assert copied.startswith(script.split("\n", 1)[0]) and "python3 -m verl.trainer.main_ppo" in copied
    back = re.search(r'id="check-it" href="/\?([^"]*)"', page).group(1).replace("&amp;", "&")
    assert parse_qs(back)["config"] == [copied]
    status, page = fetch(url + "/?" + back)
    assert status == 200 and 'class="verdict valid">VALID' in page and "read pasted.sh: verl" in page


def test_recommend_from_a_script_with_a_list_flag(url):
    # ms-swift's '--reward_funcs accuracy format' is a ListFlag: it did not unpickle on its way back from the worker
    # process (TypeError in ListFlag.__new__), and the browser got an empty reply
    script = (ROOT / "tests/data/scripts/swift/vllm_72b_4gpu.sh").read_text()
    assert "--reward_funcs accuracy format" in script
    status, page = fetch(url + "/?" + urlencode({"action": "recommend", "gpu": "h100", "config": script}))
    assert status == 200 and "(your script with it written in)" in page, page[-2000:]


def test_explain_an_error_line(url):
    line = "real_train_batch_size (260) must be divisible by minimal possible batch size (8)"
    status, page = fetch(url + "/?" + urlencode({"action": "explain", "error": line}))
    assert status == 200 and 'class="verdict valid">matched' in page and "in plain words" in page


def test_a_body_over_the_cap_is_refused_with_413():
    with running(Settings(max_body=1000)) as base:
        status, page = fetch(base + "/", data=b"config=" + b"x" * 5000)
        assert status == 413 and "more than the 1,000 bytes" in page
        status, _ = fetch(base + "/?config=" + "x" * 5000)
        assert status == 413


def test_a_negative_content_length_is_a_bad_request_naming_the_header(url):
    import http.client
    from urllib.parse import urlsplit

    conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=30)
    conn.putrequest("POST", "/sweep")
    conn.putheader("Content-Length", "-5")
    conn.endheaders()
    resp = conn.getresponse()
    page = resp.read().decode("utf-8")
    conn.close()
    assert resp.status == 400 and "Content-Length" in page and "-5" in page and "more than" not in page


def test_a_request_past_the_time_cap_gets_an_error_page():
    with running(Settings(limits=Limits(timeout_s=0.01))) as base:
        status, page = fetch(base + "/?" + urlencode({"action": "check", "gpus": 4, "config": readme_failing_config()}))
        assert status == 503 and 'id="error"' in page and "was stopped" in page


def test_other_paths(url):
    assert fetch(url + "/healthz") == (200, "ok\n")
    assert fetch(url + "/nothing")[0] == 404


def test_sweep_results_as_the_command_lines_table_and_pictures(url):
    pytest.importorskip("matplotlib")
    results = (ROOT / "docs/examples/grid-qwen2.5-7b-grpo.results.jsonl").read_text()
    status, page = fetch(url + "/sweep", data=urlencode({"results": results}).encode())
    assert status == 200 and 'id="heatmap"' in page and 'id="memory-plot"' in page and "data:image/png;base64," in page
    status, page = fetch(url + "/sweep", data=urlencode({"results": "not json"}).encode())
    assert status == 400 and "no result lines" in page


def test_a_results_file_posted_as_the_whole_body_is_summarized(url):
    pytest.importorskip("matplotlib")
    results = (ROOT / "docs/examples/grid-qwen2.5-7b-grpo.results.jsonl").read_text()
    status, page = fetch(url + "/sweep", data=results.encode())
    assert status == 200 and 'id="heatmap"' in page and "data:image/png;base64," in page


def test_a_post_to_sweep_without_the_results_field_is_an_error_naming_it(url):
    status, page = fetch(url + "/sweep", data=urlencode({"result": '{"a": 1}'}).encode())
    text = html.unescape(page)
    assert status == 400 and 'id="error"' in page and "no 'results' field" in text and "Fix:" in text


# ----------------------------------------------------------------------------------------------- chart, Space
def test_the_chart_stacks_each_phases_terms_against_its_line():
    chart = {"gpu": "H100", "model": "m", "total_gib": 80.0,
             "phases": {"rollout": {"terms": {"weights": 10.0, "KV cache": 50.0}, "usable_gib": 75.0},
                        "actor update": {"terms": {"weights": 10.0, "activations": 70.0}, "usable_gib": 74.0}}}
    svg = memory_svg(chart)
    assert svg.count('<rect class="term"') == 4 and svg.count('class="usable"') == 2
    assert "60.0 GiB" in svg and 'fill="#b00020">80.0 GiB' in svg  # the phase over its line is drawn red
    colours = dict(re.findall(r'fill="(#\w+)"><title>[^:]+: (\w+)', svg))
    assert len(set(re.findall(r'fill="(#\w+)"><title>[^:]+: weights', svg))) == 1 and colours


def test_the_space_runs_the_same_app():
    header = (ROOT / "space" / "README.md").read_text(encoding="utf-8").split("---")[1]
    assert re.search(r"^sdk: docker$", header, re.M) and re.search(r"^app_port: 7860$", header, re.M)
    docker = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert 'pip install --no-cache-dir ".[web]"' in docker and "app.py" in docker
    app = (ROOT / "app.py").read_text(encoding="utf-8")
    assert "from rlbatch_solver.web.server import" in app and "7860" in app
