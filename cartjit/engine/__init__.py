"""The CART engine: the kernels and the steps of a fit (docs/design.md)."""
