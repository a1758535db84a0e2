"""Draw the pictures of docs/plots.md: ``python docs/images/make_plot_images.py`` from the
repository root (needs matplotlib). Each image is saved at 90 dpi next to this script."""
from pathlib import Path

import matplotlib.style

from cartjit import (CARTClassifier, CARTClassifierCV, CARTRegressorCV, plot_cv,
                     plot_importance, plot_partition, plot_tree)
from cartjit.datasets import load_iris, load_play_golf

HERE = Path(__file__).resolve().parent


def save(ax, name):
    ax.figure.savefig(HERE / name, dpi=90, metadata={"Software": None})


def main():
    matplotlib.style.use("default")
    X, y = load_iris(return_X_y=True)
    cv = CARTClassifierCV(cv=10, random_state=0).fit(X, y)
    save(plot_tree(CARTClassifier().fit(X, y)), "plot_tree_iris.png")
    save(plot_cv(cv), "plot_cv_iris.png")
    save(plot_importance(cv), "plot_importance_iris.png")
    petals = X[["petal_length", "petal_width"]]
    save(plot_partition(CARTClassifier().fit(petals, y), petals, y),
         "plot_partition_iris.png")
    Xg, yg = load_play_golf(return_X_y=True)
    save(plot_tree(CARTClassifier().fit(Xg, yg)), "plot_tree_golf.png")
    # a regression tree: petal width from petal and sepal length, pruned by 10-fold CV
    Xr, yr = X[["petal_length", "sepal_length"]], X["petal_width"]
    reg = CARTRegressorCV(cv=10, random_state=0).fit(Xr, yr)
    save(plot_partition(reg, Xr, yr), "plot_partition_regression.png")


if __name__ == "__main__":
    main()
