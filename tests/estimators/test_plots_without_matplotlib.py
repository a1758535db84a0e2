"""Without matplotlib (the bare install), the plots say what to install; importing
cartjit.plotting needs nothing beyond numpy."""
import sys

import numpy as np
import pytest

from cartjit import CARTClassifier


@pytest.mark.parametrize("name", ["plot_tree", "plot_partition", "plot_cv",
                                  "plot_importance"])
def test_a_missing_matplotlib_is_named(monkeypatch, name):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    import cartjit.plotting as plotting
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    est = CARTClassifier().fit(X, [0, 0, 1, 1])
    args = (est, X) if name == "plot_partition" else (est,)
    with pytest.raises(ImportError, match=rf"{name} needs matplotlib.*cartjit\[plot\]"):
        getattr(plotting, name)(*args)
