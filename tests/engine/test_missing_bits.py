"""The bitmap of missing values (``_missing_bits``: whole bytes packed in a register,
then the last cases one by one) against ``np.isnan``, for row counts that are and are
not whole bytes, made in one chunk or in several (each its range of bytes, the last
one the cases past them)."""
import numpy as np
import pytest

from cartjit.engine.missing import _missing_bits


@pytest.mark.parametrize("n_chunks", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 63, 1000, 4099])
def test_bitmap_is_isnan(n, n_chunks):
    rng = np.random.default_rng(n)
    p = int(rng.integers(1, 6))
    X = rng.normal(size=(n, p))
    X[rng.random((n, p)) < rng.uniform(0.0, 1.0, size=p)] = np.nan
    X[rng.integers(0, n)] = np.nan
    out = np.zeros((p, -(-n // 8)), dtype=np.uint8)
    for c in range(n_chunks):
        _missing_bits(X, out, c, n_chunks)
    np.testing.assert_array_equal(out, np.packbits(np.isnan(X).T, axis=1, bitorder="little"))
