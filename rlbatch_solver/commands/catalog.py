"""``rlbatch catalog gpus|models --json``: the catalogs as JSON-ready lists (the command line prints them; the MCP
server returns them)."""

from __future__ import annotations

from typing import Any, Optional


def gpus_json(extra: Optional[str] = None) -> list[dict[str, Any]]:
    """Every GPU type: its fields, aliases as a list."""
    from ..catalog.gpus import list_gpus

    return [g.__dict__ | {"aliases": list(g.aliases)} for g in list_gpus(extra)]


def models_json() -> list[dict[str, Any]]:
    """Every model card: name, parameters (total and active), layers, hidden size, heads and KV heads."""
    from ..catalog.models import list_models, load_model

    cards = [load_model(m) for m in list_models()]
    return [{"name": c.name, "params": c.total_params(), "active_params": c.active_params(),
             "layers": c.num_hidden_layers, "hidden": c.hidden_size,
             "heads": c.num_attention_heads, "kv_heads": c.num_key_value_heads} for c in cards]
