"""For agents: ``rlbatch mcp``, the command line's check, fix, recommend, explain and catalogs as the tools of a
Model Context Protocol server (``server.py``), each call checked (``schemas.py``) and run in a process of its own
(``worker.py``) by the command line's own code (``tools.py``)."""
