"""Helpers shared by the loaders and generators of :mod:`cartjit.datasets`."""
from __future__ import annotations

import numpy as np


def _check_flag(name, value):
    """Return ``value`` as a bool, or raise ``TypeError`` naming ``name``."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _finish(frame, target, return_X_y):
    """Return ``frame`` (already a fresh copy), or split it into ``(X, y)``."""
    if return_X_y:
        return frame.drop(columns=[target]), frame[target].copy()
    return frame
