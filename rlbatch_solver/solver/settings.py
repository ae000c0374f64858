"""Solver settings shared by every solve (kept free of imports: ortools loads only when a solve runs)."""

DEFAULT_TIME_LIMIT_S = 10.0  # seconds per CP-SAT solve; every answer reports whether it is proven
