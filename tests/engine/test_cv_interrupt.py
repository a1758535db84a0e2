"""Ctrl-C during a cross-validation on threads: the fold trees not started yet are
dropped, the running ones end before ``KeyboardInterrupt`` goes on (a compiled call
cannot be interrupted, and it writes into arrays its caller owns)."""
from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pytest

from cartjit._prepare import prepare
from cartjit.engine import cv
from cartjit.engine.cv import grow_cv_trees, make_folds, task_pool
from cartjit.engine.presort import presort
from cartjit.estimators import CARTClassifier


def test_a_raise_in_the_pool_cancels_the_queued_tasks_and_waits_for_the_running_one():
    started, release = threading.Event(), threading.Event()
    ran, ended = [], []

    def task(i):
        ran.append(i)
        if i == 0:
            started.set()
            release.wait(10)
            time.sleep(0.2)  # still running when the block raises
        ended.append(i)

    with pytest.raises(KeyboardInterrupt):
        with task_pool(1) as pool:
            futures = [pool.submit(task, i) for i in range(20)]
            assert started.wait(10)
            release.set()
            raise KeyboardInterrupt
    assert ran == [0] and ended == [0]  # ended before the exception came out
    assert all(f.cancelled() for f in futures[1:])


def test_sigint_during_grow_cv_trees_stops_after_the_running_folds(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.random((3000, 8))
    y = (X[:, 0] + rng.random(3000) > 1).astype(int)
    assert X.size >= cv.FOLD_THREADS_MIN_VALUES  # the folds run on threads
    prep = prepare(CARTClassifier(), X, y, None)
    problem, settings = prep.problem, prep.settings
    plan = make_folds(10, problem.X.shape[0], n_repeats=3, random_state=0)
    keys = presort(problem.X, problem.n_levels, 1)
    main = threading.main_thread().ident
    calls, running = [], []
    real = cv.fit_fold

    def fold(*args):
        running.append(1)
        try:
            if not calls:
                signal.pthread_kill(main, signal.SIGINT)  # Ctrl-C while the folds grow
            calls.append(1)
            time.sleep(0.05)
            return real(*args)
        finally:
            running.pop()

    monkeypatch.setattr(cv, "fit_fold", fold)
    with pytest.raises(KeyboardInterrupt):
        grow_cv_trees(problem, settings, keys, plan, 2, lean=True,
                      scoring=lambda full: cv.fold_scoring(
                          problem, settings, plan, full.path[0], priors=full.priors,
                          class_totals=full.class_totals))
    assert not running  # no fold tree still growing on a thread
    assert len(calls) < 10  # of 30: the queued folds were not grown
