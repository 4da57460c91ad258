"""Mixture schedules: named sources mixed step by step by weights that change over a run."""

from __future__ import annotations

from streamx.mixture.dataset import MixedDataset
from streamx.mixture.schedule import MixtureSchedule

__all__ = ["MixedDataset", "MixtureSchedule"]
