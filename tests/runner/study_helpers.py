"""Estimators for the methods-study tests, given to the runner by import path
(``study_helpers.RowRecorder``: this directory is on ``sys.path`` while pytest runs
the tests next to it)."""
import threading

import numpy as np


class RowRecorder:
    """Records the learning and test matrices it is given, keyed by its ``random_state``
    (the runner's seed of the replication) and ``tag``; predicts the mean of the learning
    targets (regression) or the most frequent learning class (classification, ties to
    the smallest label)."""

    seen = {}
    _lock = threading.Lock()

    def __init__(self, tag=0, random_state=None):
        self.tag = tag
        self.random_state = random_state

    def get_params(self, deep=True):
        return {"tag": self.tag, "random_state": self.random_state}

    def fit(self, X, y):
        self.learn_ = np.array(X, copy=True)
        y = np.asarray(y)
        if y.dtype.kind == "f":
            self.constant_ = float(np.mean(y))
        else:
            values, counts = np.unique(y, return_counts=True)
            self.constant_ = values[np.argmax(counts)]
        return self

    def predict(self, X):
        with RowRecorder._lock:
            RowRecorder.seen[(self.random_state, self.tag)] = (self.learn_, np.array(X))
        return np.full(len(X), self.constant_)
