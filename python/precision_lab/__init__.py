"""Precision Lab's Python side: a probe that records your own PyTorch training as a
Precision Lab run record (see probe.py)."""

from .probe import Probe, rounding_stats

__all__ = ["Probe", "rounding_stats"]
