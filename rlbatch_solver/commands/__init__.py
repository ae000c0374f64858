"""One module per command (check, enumerate, recommend, fix, explain); ``api.py`` is their façade."""
