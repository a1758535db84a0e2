"""Every tree, pruning path and CV table of the fingerprint corpus is unchanged.

See ``tests/references/fingerprints.py``: a refactoring or a faster kernel must leave all of them
identical bit for bit (record a new corpus only for a change that is meant to alter
results, and say so in the commit).
"""
import json

import pytest

from references import fingerprints


@pytest.mark.slow
def test_corpus_identical():
    stored = json.loads(fingerprints.STORE.read_text())
    current = fingerprints.corpus()
    assert set(current) == set(stored)
    assert fingerprints.compare(current, stored) == []


def test_compare_reports_a_changed_result():
    stored = {"a/tree": "0" * 64, "b/cv": "1" * 64}
    assert fingerprints.compare({"a/tree": "0" * 64, "b/cv": "2" * 64}, stored) == ["b/cv"]
    assert fingerprints.compare({"a/tree": "0" * 64}, stored) == ["b/cv"]
