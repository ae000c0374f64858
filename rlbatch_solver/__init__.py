"""rlbatch-solver: valid, fitting and fast RL post-training batch configs, before you launch."""

from __future__ import annotations

__version__ = "0.1.0"


def __getattr__(name: str):
    # Lazy: keep `import rlbatch_solver` (and the CLI start) fast.
    if name in ("check", "enumerate", "recommend", "fix", "explain", "CheckReport", "EnumerateReport",
                "RecommendReport", "FixReport"):
        from . import api

        return getattr(api, name)
    if name in ("Scenario", "default_scenario", "load_scenario"):
        from . import scenario

        return getattr(scenario, name)
    if name == "InputError":
        from .errors import InputError

        return InputError
    raise AttributeError(name)


__all__ = ["check", "enumerate", "recommend", "fix", "explain", "Scenario", "default_scenario", "load_scenario", "InputError", "__version__"]
