"""The page: the form (every input in the URL, so a page is shared by its address), then the answer: the verdict
and broken rules, the memory chart, the step time per phase, the best config with a copy button and its diff
against the pasted one, the command line's own text. Server-rendered; a few lines of inline script for the copy
button; nothing fetched."""

from __future__ import annotations

from functools import lru_cache
from html import escape
from typing import Any, Optional

from .chart import memory_svg
from .form import Inputs

ALGORITHMS = ("grpo", "ppo", "dapo", "gspo", "adpo", "rloo", "reinforce++")

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:60em;padding:0 1em;color:#1a1a1a;line-height:1.4}
h1{font-size:1.4em;margin-bottom:.2em} h2{font-size:1.15em;margin-top:1.4em} .sub{color:#555;margin-top:0}
form .row{display:flex;flex-wrap:wrap;gap:.6em 1em;margin:.5em 0} label{display:flex;flex-direction:column;font-size:.85em}
input,select,textarea{font:inherit;padding:.25em} textarea{width:100%;box-sizing:border-box;font-family:monospace;font-size:.85em}
input.num{width:6em} button{font:inherit;padding:.35em 1em;margin-right:.5em;cursor:pointer}
.error{background:#fdecea;border-left:4px solid #b00020;padding:.6em .8em}
.verdict{padding:.4em .8em;border-radius:4px;display:inline-block} .valid{background:#e6f4ea;color:#0b5e20}
.invalid{background:#fdecea;color:#8a0015} ul.violations li{margin:.4em 0} .meta{color:#555;font-size:.85em}
pre{background:#f5f5f5;padding:.6em;overflow-x:auto;font-size:.8em} pre.diff .add{color:#0b5e20} pre.diff .del{color:#8a0015}
table.times td,table.times th{padding:.15em .8em;text-align:left} table.times td.s{text-align:right}
.legend{font-size:.8em;margin:.3em 0 0 150px} .key{margin-right:1em;white-space:nowrap}
.key i{display:inline-block;width:.8em;height:.8em;margin-right:.3em;vertical-align:middle}
.notes{color:#555;font-size:.85em} #copy-status{color:#0b5e20;font-size:.85em}
"""

SCRIPT = """
function copyConfig(){var t=document.getElementById('best-config').textContent;
 var done=function(){document.getElementById('copy-status').textContent='copied';};
 var fallback=function(){var r=document.createRange();r.selectNodeContents(document.getElementById('best-config'));
  var s=window.getSelection();s.removeAllRanges();s.addRange(r);
  try{document.execCommand('copy');done();}catch(e){document.getElementById('copy-status').textContent='selected: press Ctrl+C';}};
 if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(t).then(done,fallback);}else{fallback();}}
"""


@lru_cache(maxsize=1)
def _choices() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    from ..catalog.gpus import list_gpus
    from ..catalog.models import list_models
    from ..frameworks.registry import FRAMEWORKS

    return tuple(FRAMEWORKS), tuple(g.name for g in list_gpus()), tuple(list_models())


def _field(name: str, label: str, value: Any, cls: str = "", options: tuple[str, ...] = ()) -> str:
    listed = f' list="{name}-list"' if options else ""
    shown = "" if value is None else escape(str(value))
    out = f'<label>{label}<input name="{name}" id="{name}" value="{shown}"{listed} class="{cls}"></label>'
    if options:
        out += f'<datalist id="{name}-list">' + "".join(f'<option value="{escape(o)}">' for o in options) + "</datalist>"
    return out


def form(i: Inputs) -> str:
    frameworks, gpus, models = _choices()
    fw = '<label>framework<select name="fw" id="fw"><option value="">verl (or the script\'s)</option>' + "".join(
        f'<option{" selected" if o == i.fw else ""}>{escape(o)}</option>' for o in frameworks) + "</select></label>"
    return f"""<form method="get" action="/">
<div class="row">{fw}{_field("gpu", "GPU", i.gpu, "", gpus)}{_field("gpus", "GPUs", i.gpus, "num")}
{_field("model", "model", i.model, "", models)}</div>
<div class="row">{_field("algo", "algorithm (recommend)", i.algo, "", ALGORITHMS)}{_field("n", "n", i.n, "num")}
{_field("prompt_len", "prompt length", i.prompt_len, "num")}{_field("response_len", "response length", i.response_len, "num")}
{_field("longest_response_len", "longest response in your data (optional)", i.longest_response_len, "num")}</div>
<label>your launch script, YAML config or arguments (read, never run)
<textarea name="config" id="config" rows="9" spellcheck="false">{escape(i.config)}</textarea></label>
<div class="row" style="width:100%"><label style="flex:1">error line (for explain)
<input name="error" id="error-line" value="{escape(i.error)}"></label></div>
<div class="row"><button name="action" value="check" id="do-check">Check</button>
<button name="action" value="recommend" id="do-recommend">Recommend the fastest</button>
<button name="action" value="explain" id="do-explain">Explain the error line</button></div>
</form>"""


def _notes(result: dict) -> str:
    if not result.get("notes"):
        return ""
    return '<ul class="notes">' + "".join(f"<li>note: {escape(n)}</li>" for n in result["notes"]) + "</ul>"


def _times(times: Optional[dict]) -> str:
    if not times:
        return ""
    rows = "".join(f'<tr><td>{escape(p)}</td><td class="s">{s:.1f}</td></tr>' for p, s in times["phases"].items())
    return (f'<h2>time per RL step</h2><table class="times" id="step-times"><tr><th>phase</th><th>seconds</th></tr>'
            f'{rows}<tr><th>step</th><th class="s">{times["step_s"]:.1f}</th></tr></table>')


def _chart(result: dict) -> str:
    chart = result.get("chart")
    if not chart:
        return ""
    return f'<h2>memory per GPU, by phase ({escape(str(chart["model"]))} on {escape(str(chart["gpu"]))})</h2>' + \
        memory_svg(chart)


def _cli_text(result: dict) -> str:
    return f'<h2>the command line\'s answer</h2><pre id="cli-text">{escape(result.get("text", ""))}</pre>'


def _check(result: dict) -> str:
    verdict = ("VALID", "valid") if result["valid"] else ("INVALID", "invalid")
    errors = [v for v in result["violations"] if v["severity"] == "error"]
    head = f'<h2 id="verdict" class="verdict {verdict[1]}">{verdict[0]}</h2> <span class="meta">' \
        f'{escape(result["framework"])} rules' + (f": breaks {len(errors)}" if errors else "") + "</span>"
    items = "".join(
        f'<li class="violation {escape(v["severity"])}"><b>{escape(v["rule"])}</b> ({escape(v["severity"])})<br>'
        f'{escape(v["message"])}<br><span class="meta">fails: {escape(v.get("when", v["stage"]))} · source: '
        f'{escape(v["source"])}</span></li>' for v in result["violations"])
    return head + _notes(result) + (f'<ul class="violations">{items}</ul>' if items else "") + _chart(result) + \
        _times(result.get("times")) + _cli_text(result)


def _recommend(result: dict, i: Inputs) -> str:
    if not result["found"]:
        return '<h2 id="verdict" class="verdict invalid">nothing fits</h2>' + _notes(result) + _cli_text(result)
    best = result["best"]
    back = i.query(action="check", config=best["copy"], algo="", n=None, prompt_len=None, response_len=None,
                   **result["check_with"])
    out = (f'<h2 id="verdict" class="verdict valid">best: {best["step_time_s"]:.1f} s per step, '
           f'{best["tokens_per_s"]:,} tokens/s at the mean lengths</h2> <span class="meta">{escape(result["framework"])}</span>'
           + _notes(result) +
           f'<h2>the fastest config{" (your script with it written in)" if best["script"] else ""}</h2><p><button type="button" id="copy" onclick="copyConfig()">Copy</button>'
           f'<span id="copy-status"></span> <a id="check-it" href="/?{escape(back)}">check it</a></p>'
           f'<pre id="best-config">{escape(best["copy"])}</pre>')
    start = result.get("start")
    if start:
        lines = "".join(f'<span class="{"add" if d.startswith("+") else "del"}">{escape(d)}</span>\n'
                        for d in start["diff"])
        out += (f'<h2>against your config</h2><p class="meta">verdict: {escape(start["verdict"])}</p>'
                + (f'<pre class="diff" id="diff">{lines}</pre>' if lines else "<p>no change: keep yours</p>"))
    return out + _chart(result) + _times(result.get("times")) + _cli_text(result)


def _explain(result: dict) -> str:
    head = ('<h2 id="verdict" class="verdict valid">matched</h2>' if result["matched"] else
            '<h2 id="verdict" class="verdict invalid">no known message matched</h2>')
    return head + _notes(result) + _cli_text(result)


def answer(i: Inputs, result: dict) -> str:
    if result.get("error"):
        return f'<h2>cannot answer</h2><p class="error" id="error">error: {escape(result["error"])}</p>'
    if i.action == "check":
        return _check(result)
    if i.action == "recommend":
        return _recommend(result, i)
    return _explain(result)


def document(body: str, title: str = "rlbatch") -> str:
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>{escape(title)}</title>
<style>{STYLE}</style><script>{SCRIPT}</script></head><body>
<h1>rlbatch</h1><p class="sub">Valid, fitting and fast batch-size configs for RL post-training (verl, ms-swift,
OpenRLHF, TRL), answered before you launch. <a href="/sweep">sweep results</a> · <a href="/">new</a></p>
{body}</body></html>"""


def page(i: Inputs, result: Optional[dict] = None) -> str:
    """The whole page: the form, then the answer to it (if any) and a link to share it."""
    body = form(i)
    if result is not None:
        body += f'<p class="meta"><a id="share" href="/?{escape(i.query())}">link to this answer</a></p>'
        body += answer(i, result)
    return document(body)


def sweep_page(results: str = "", result: Optional[dict] = None) -> str:
    """The sweep page: paste a sweep's results file; get the summary table and the pictures the command line
    draws (``rlbatch sweep --summary --plot --memory-plot``)."""
    body = f"""<h2>sweep results</h2><p class="meta">Paste the results file of <code>rlbatch sweep grid.yaml --out
results.jsonl</code> (one JSON object a line): the summary table, the GPU type x count heatmap, and the memory of
the best point. Sent in the request's body, not in the URL (a results file is too long for one).</p>
<form method="post" action="/sweep"><textarea name="results" id="results" rows="8" spellcheck="false">{escape(results)}
</textarea><div class="row"><button id="do-sweep">Summarize</button></div></form>"""
    if result is not None:
        if result.get("error"):
            body += f'<p class="error" id="error">error: {escape(result["error"])}</p>'
        else:
            plots = result.get("plots", {})
            if "heatmap" in plots:
                body += f'<h2>throughput by GPU type and count</h2><img id="heatmap" alt="heatmap" ' \
                        f'src="data:image/png;base64,{plots["heatmap"]}" style="max-width:100%">'
            if "memory" in plots:
                body += f'<h2>memory of the best point ({escape(result["memory_point"])})</h2><img id="memory-plot" ' \
                        f'alt="memory per phase" src="data:image/png;base64,{plots["memory"]}" style="max-width:100%">'
            if result.get("plot_error"):
                body += f'<p class="notes">no pictures: {escape(result["plot_error"])}</p>'
            body += f'<h2>summary ({result["points"]} points)</h2><pre id="cli-text">{escape(result["text"])}</pre>'
    return document(body, "rlbatch: sweep results")
