"""
A first tree
============

Grow a classification tree on Fisher's iris data, prune it by 10-fold cross-validation
and print it.
"""
from cartjit import CARTClassifierCV, summary
from cartjit.datasets import load_iris

X, y = load_iris(return_X_y=True)
cv = CARTClassifierCV(cv=10, random_state=0).fit(X, y)
print(summary(cv))
