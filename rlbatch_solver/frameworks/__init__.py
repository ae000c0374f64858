"""Frameworks we model, one folder each (see ``base.py``); ``registry.py`` finds them by name."""

from __future__ import annotations

from .base import Framework
from .registry import FRAMEWORKS, get_framework

__all__ = ["Framework", "get_framework", "FRAMEWORKS"]
