"""The suite never reads a calibration profile of the machine's user (calibration.user_profile_path)."""

import os
import tempfile

os.environ["RLBATCH_CONFIG_DIR"] = tempfile.mkdtemp(prefix="rlbatch-test-config-")
