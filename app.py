"""The Hugging Face Space (space/README.md, Dockerfile): the same app as ``rlbatch serve``, on every interface at
the Space's port (PORT, 7860 by default)."""

import os

from rlbatch_solver.web.server import Settings, serve
from rlbatch_solver.web.worker import Limits

if __name__ == "__main__":
    limits = Limits(timeout_s=float(os.environ.get("RLBATCH_TIMEOUT", "30")),
                    memory_mib=int(os.environ.get("RLBATCH_MEMORY_MIB", "4096")),
                    workers=int(os.environ.get("RLBATCH_WORKERS", "2")))
    serve(host=os.environ.get("HOST", "0.0.0.0"), port=int(os.environ.get("PORT", "7860")), settings=Settings(limits))
