"""The datasets tests' access to R's mlbench: skip without it, unless CARTJIT_REQUIRE_R=1.

The ``mlbench`` fixture returns a function that runs R code (with mlbench attached)
through ``Rscript`` and returns its standard output. Without ``Rscript`` or the mlbench
package a test that asks for it is skipped with the reason; with ``CARTJIT_REQUIRE_R=1``
in the environment it fails instead.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess

import pytest


def _r_required() -> bool:
    return os.environ.get("CARTJIT_REQUIRE_R", "").strip() == "1"


@functools.lru_cache(maxsize=1)
def _mlbench_problem() -> str | None:
    """None when Rscript runs and mlbench loads, else the reason why not."""
    exe = shutil.which("Rscript")
    if exe is None:
        return "Rscript not found; install r-base-core and r-cran-mlbench"
    try:
        proc = subprocess.run([exe, "-e", "suppressPackageStartupMessages(library(mlbench))"],
                              capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"Rscript does not run: {exc}"
    if proc.returncode != 0:
        return "R's mlbench package cannot be loaded by Rscript; install r-cran-mlbench"
    return None


def run_r(code: str, *, timeout: float = 300) -> str:
    """Run ``code`` with mlbench attached; return the standard output."""
    exe = shutil.which("Rscript")
    proc = subprocess.run(
        [exe, "-e", "suppressPackageStartupMessages(library(mlbench))", "-e", code],
        capture_output=True, text=True, timeout=timeout, check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"Rscript failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def require_mlbench() -> None:
    """Skip the calling test without R/mlbench, or fail if CARTJIT_REQUIRE_R=1."""
    reason = _mlbench_problem()
    if reason is None:
        return
    if _r_required():
        pytest.fail(f"{reason} (required because CARTJIT_REQUIRE_R=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def mlbench():
    """:func:`run_r`, after checking that R and mlbench are available."""
    require_mlbench()
    return run_r
