"""The plot tests' comparison of a drawn figure with its committed baseline image.

Figures are drawn under matplotlib's own test settings (:func:`baseline_style`: style
"default", its bundled DejaVu fonts, no hinting) and saved as PNG; :func:`check_image`
compares one with ``<baselines>/<name>.png`` (RMS within ``tol``). With
``CARTJIT_UPDATE_BASELINES=1`` it writes the baseline instead: look at every image
before committing it.
"""
from __future__ import annotations

import contextlib
import os
import shutil

UPDATE = os.environ.get("CARTJIT_UPDATE_BASELINES") == "1"


@contextlib.contextmanager
def baseline_style():
    """matplotlib's test settings, restored afterwards."""
    import matplotlib as mpl
    import matplotlib.style  # noqa: F401  (mpl.style is a submodule)
    from matplotlib.testing import (set_font_settings_for_testing,
                                    set_reproducibility_for_testing)

    with mpl.rc_context():
        mpl.style.use("default")
        set_font_settings_for_testing()
        set_reproducibility_for_testing()
        yield


def check_image(ax, name, tmp_path, baselines, *, dpi=50, tol=10):
    """Save the figure of ``ax`` and compare it with ``baselines / f"{name}.png"``."""
    from matplotlib.testing.compare import compare_images

    actual = tmp_path / f"{name}.png"
    ax.figure.savefig(actual, dpi=dpi, metadata={"Software": None})
    expected = baselines / f"{name}.png"
    if UPDATE:
        baselines.mkdir(exist_ok=True)
        shutil.copyfile(actual, expected)
    assert expected.exists(), f"no baseline {expected}: see references/images.py"
    diff = compare_images(str(expected), str(actual), tol=tol)
    assert diff is None, diff
