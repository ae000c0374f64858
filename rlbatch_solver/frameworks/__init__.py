"""Frameworks we model: each has a rule set, an importer and an exporter."""

from __future__ import annotations

from .base import Framework, get_framework, FRAMEWORKS

__all__ = ["Framework", "get_framework", "FRAMEWORKS"]
