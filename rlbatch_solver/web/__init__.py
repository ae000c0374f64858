"""``rlbatch serve``: the web page on the Python API (docs/web.md).

form.py reads a request's inputs, pasted.py turns pasted text into the command line's arguments, jobs.py runs
the commands (in a worker process, worker.py, with a time and memory cap), chart.py draws the memory chart,
page.py writes the HTML, server.py answers HTTP.
"""
