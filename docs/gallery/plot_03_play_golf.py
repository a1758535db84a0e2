"""
Play golf: an entropy tree by hand
==================================

The classification example of :doc:`the mathematics <../maths>` (§6): ten days, two
features with the levels high and normal, and whether golf was played. With the
entropy criterion the impurity decrease Δi of a split is its information gain in bits.
At the root, humidity gains 0.420 bits and temperature 0.125, so the root splits on
humidity; its humidity-high child splits on temperature with a gain of 0.459 bits, and
the tree has three leaves. ``split_candidates`` shows each node's candidates; the page
recomputes every gain from the class counts, by hand.
"""

# %%
import numpy as np

from cartjit import CARTClassifier, export_text, multiway_gains, split_candidates
from cartjit.datasets import load_play_golf

X, y = load_play_golf(return_X_y=True)
tree = CARTClassifier(criterion="entropy").fit(X, y)
print(export_text(tree))
assert tree.get_n_leaves() == 3


def entropy(counts):
    p = np.asarray(counts, dtype=float) / np.sum(counts)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


# %%
# The root: 6 days of play and 4 without, i(root) = 0.971 bits.
root = split_candidates(tree, X, y, node=0)
print(root)
gain = dict(zip(root.feature, root.delta_i))
assert abs(entropy([4, 6]) - 0.970951) < 1e-6
humidity = entropy([4, 6]) - 0.6 * entropy([4, 2]) - 0.4 * entropy([0, 4])
temperature = entropy([4, 6]) - 0.5 * entropy([3, 2]) - 0.5 * entropy([1, 4])
assert abs(gain["humidity"] - humidity) < 1e-12 and round(humidity, 3) == 0.420
assert abs(gain["temperature"] - temperature) < 1e-12 and round(temperature, 3) == 0.125
assert root[root.chosen].feature.iloc[0] == "humidity"

# %%
# The humidity-high child (2 play, 4 no) splits on temperature.
high = int(tree.tree_max_.left[0])  # the child holding humidity = high
child = split_candidates(tree, X, y, node=high)
print(child)
chosen = child[child.chosen].iloc[0]
by_hand = entropy([4, 2]) - 0.5 * entropy([3, 0]) - 0.5 * entropy([1, 2])
assert chosen.feature == "temperature"
assert abs(chosen.delta_i - by_hand) < 1e-12 and round(by_hand, 3) == 0.459

# %%
# With two values per feature, ID3's multiway gain is CART's binary gain.
multi = multiway_gains(X, y)
print(multi)
assert np.allclose(multi.set_index("feature").loc[["humidity", "temperature"]].iloc[:, -1],
                   [humidity, temperature], atol=1e-12)
