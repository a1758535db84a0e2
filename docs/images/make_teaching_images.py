"""Draw the pictures of docs/teaching.md: ``python docs/images/make_teaching_images.py``
from the repository root (needs matplotlib). Each image is saved at 90 dpi next to this
script."""
from pathlib import Path

import matplotlib.style

from cartjit import CARTClassifier, plot_pruning_sequence, plot_split_candidates
from cartjit.datasets import load_iris

HERE = Path(__file__).resolve().parent


def save(axes, name):
    axes[0].figure.savefig(HERE / name, dpi=90, metadata={"Software": None})


def main():
    matplotlib.style.use("default")
    X, y = load_iris(petal_only=True, return_X_y=True)
    est = CARTClassifier().fit(X, y)
    save(plot_split_candidates(est, X, y, node=0), "teaching_split_iris.png")
    save(plot_split_candidates(est, X, y, node=2), "teaching_split_iris_node2.png")
    save(plot_pruning_sequence(est, X, y), "teaching_sequence_iris.png")


if __name__ == "__main__":
    main()
