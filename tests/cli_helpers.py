"""Running the installed console script as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``zslbench`` console script as a user would."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("ZSLBENCH_TRACEBACK", None)
    exe = Path(sys.executable).with_name("zslbench")
    return subprocess.run(
        [str(exe), *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def invoke_main(*args: str) -> Any:
    """``zslbench ARGS`` in this process, through ``zslbench.cli.main`` (its one error handler),
    with stdout and stderr captured: a ``click.testing.Result``-like object with ``exit_code``,
    ``stdout``, ``stderr`` and ``output``."""
    from click.testing import CliRunner

    from zslbench import console as console_mod
    from zslbench.cli import main

    runner = CliRunner()
    with runner.isolation() as (out, err, _):
        saved = console_mod.err_console.file
        console_mod.err_console.file = sys.stderr  # rich binds its stream when created
        code = 0
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            console_mod.err_console.file = saved
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return SimpleNamespace(exit_code=code, stdout=stdout, stderr=stderr, output=stdout + stderr)
