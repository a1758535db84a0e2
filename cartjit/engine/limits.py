"""The memory limit: requests that would need more are refused up front.

A request whose size is known before any work starts (a synthetic dataset of n × p
values, the fold ids of n_repeats partitions, a dense J × J cost matrix, a saved tree)
is checked against one limit before anything is allocated, so that a mistyped size is a
clear :class:`MemoryLimitError` instead of an allocation that swaps the machine or dies.

The limit is ``CARTJIT_MEMORY_LIMIT`` when set (bytes, or a number with a ``K``, ``M``,
``G`` or ``T`` suffix, powers of 1024; ``0`` or ``none`` turns the check off), and
otherwise half of the machine's physical memory (8 GiB where that cannot be read). It is
read at each check, so tests and users can lower it without reimporting.
"""
from __future__ import annotations

import os

__all__ = ["MemoryLimitError", "memory_limit", "check_allocation", "format_bytes"]

_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_FALLBACK = 8 << 30


class MemoryLimitError(ValueError):
    """A request would need more memory than ``CARTJIT_MEMORY_LIMIT`` allows."""


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _parse(raw: str):
    text = raw.strip().upper().removesuffix("B").removesuffix("I")
    if text in ("0", "NONE", "OFF", ""):
        return None
    suffix = text[-1] if text[-1] in _SUFFIXES else ""
    number = text[:-1] if suffix else text
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise ValueError(
            f"CARTJIT_MEMORY_LIMIT={raw!r} is not a size: give bytes or a number with "
            "K, M, G or T (for example 512M or 8G), or 0/none for no limit")
    return int(value * _SUFFIXES[suffix])


def memory_limit():
    """The limit in bytes, or ``None`` when the check is off."""
    raw = os.environ.get("CARTJIT_MEMORY_LIMIT")
    if raw is not None:
        return _parse(raw)
    phys = _physical_memory()
    return phys // 2 if phys else _FALLBACK


def format_bytes(n) -> str:
    n = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def check_allocation(nbytes, what: str, hint: str = "") -> None:
    """Refuse a request of ``nbytes`` bytes (an exact or a lower estimate) over the limit.

    ``what`` names the request and the argument behind it, for example
    ``"n_repeats=10000000 partitions of 150 fold ids"``; ``hint`` says how to ask for less.
    """
    limit = memory_limit()
    if limit is None or nbytes <= limit:
        return
    message = (f"{what} would need {format_bytes(nbytes)}, over the memory limit of "
               f"{format_bytes(limit)} (CARTJIT_MEMORY_LIMIT; half the physical memory "
               "by default)")
    if hint:
        message += f"; {hint}"
    raise MemoryLimitError(message)
