"""Parity tests against R's rpart: skip without R, unless CARTJIT_REQUIRE_R=1.

Every test in this directory that carries ``pytest.mark.parity`` (the test modules set
``pytestmark = pytest.mark.parity``) needs ``Rscript`` with the rpart package. Without
them the test is skipped with a clear reason; with ``CARTJIT_REQUIRE_R=1`` in the
environment (as in CI jobs that install R) it fails instead, so that a missing R cannot
silently turn the parity suite into a row of skips.

Tests may also request the ``rpart`` fixture explicitly; it returns the runner module.
"""
from __future__ import annotations

import os

import pytest

from . import rpart_runner

SKIP_REASON = "Rscript not found; install r-base-core and r-cran-rpart"
NO_RPART_REASON = "R's rpart package cannot be loaded by Rscript; install r-cran-rpart"


def r_required() -> bool:
    """True when the environment demands R (``CARTJIT_REQUIRE_R=1``)."""
    return os.environ.get("CARTJIT_REQUIRE_R", "").strip() == "1"


def require_rpart() -> None:
    """Skip the calling test when R/rpart is missing, or fail if CARTJIT_REQUIRE_R=1."""
    if rpart_runner.have_rpart():
        return
    reason = SKIP_REASON if not rpart_runner.have_rscript() else NO_RPART_REASON
    if r_required():
        pytest.fail(f"{reason} (required because CARTJIT_REQUIRE_R=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _parity_needs_r(request):
    """Apply :func:`require_rpart` to every test marked ``parity``."""
    if request.node.get_closest_marker("parity") is not None:
        require_rpart()


@pytest.fixture(scope="session")
def rpart():
    """The :mod:`rpart_runner` module, after checking that R and rpart are available."""
    require_rpart()
    return rpart_runner
