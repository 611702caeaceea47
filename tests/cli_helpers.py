"""Running the installed console script as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the installed ``zslbench`` console script as a user would."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("ZSLBENCH_TRACEBACK", None)
    exe = Path(sys.executable).with_name("zslbench")
    return subprocess.run([str(exe), *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)
