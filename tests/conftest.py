"""Shared set-up of the test suite: ``tests/`` on ``sys.path``.

The tests live in one folder per area (engine/, estimators/, runner/, cli/, modelfiles/,
parity/, properties/; see tests/README.md). What they share is imported from two
packages beside those folders:

* ``references`` (tests/references/): the slow reference implementations, the Hypothesis
  strategies, the model-file helpers, the fingerprint corpus and the golden files, e.g.
  ``from references.naive import naive_grow``;
* ``parity`` (tests/parity/): the R/rpart runner and rpart's rules,
  e.g. ``from parity import rpart_runner``.

Both are found through ``tests/`` on ``sys.path``, put there here so that it does not
depend on pytest's import mode nor on which test files a run selects.
"""
from __future__ import annotations

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
