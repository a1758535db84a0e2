"""Draw the pictures of docs/studies.md: ``python docs/images/make_study_images.py`` from
the repository root (needs matplotlib and SciPy). Each image is saved at 90 dpi next to
this script."""
from pathlib import Path

import matplotlib.style

from cartjit.experiments.compare import cd_diagram, critical_difference

HERE = Path(__file__).resolve().parent


def main():
    matplotlib.style.use("default")
    # Demšar (2006), Table 6: average ranks of four C4.5 variants on 14 data sets
    ranks = {"C4.5": 44 / 14, "C4.5+m": 28 / 14, "C4.5+cf": 40.5 / 14, "C4.5+m+cf": 27.5 / 14}
    ax = cd_diagram(ranks, critical_difference(4, 14, alpha=0.10),
                    title="Demšar (2006), Table 6: Nemenyi at α = 0.10")
    ax.figure.savefig(HERE / "cd_diagram_demsar.png", dpi=90, metadata={"Software": None})


if __name__ == "__main__":
    main()
