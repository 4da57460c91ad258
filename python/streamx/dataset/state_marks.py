"""The py1e resume marks a state dict carries (:mod:`streamx.order.resume_marks`), taken at
``state_dict`` from the count cache this node's workers keep: one file read, nothing counted,
so every checkpoint can afford it. Only the canonical nodes counted on this node have marks:
its workers' own, and the rest once the node's first worker has counted every node ahead
(:mod:`streamx.order.count_ahead`, seconds after the epoch's start at 10^10 samples)."""

from __future__ import annotations

import json
import logging

from streamx import _core
from streamx.dataset.iteration import count_cache_for
from streamx.dataset.layout import DatasetLayout
from streamx.order.epoch import plan_config
from streamx.order.resume_marks import MARKS_KEY, encode_marks
from streamx.order.settings import EpochSettings, ResumeState
from streamx.order.world import World

__all__ = ["with_resume_marks"]

logger = logging.getLogger("streamx")

# mosaicml-streaming's ``load_state_dict`` refuses a state dict whose JSON fills a page.
_MOSAIC_STATE_BYTES = 4096


def with_resume_marks(
    state: ResumeState, layout: DatasetLayout, settings: EpochSettings
) -> dict[str, object]:
    """``state`` with the marks of the canonical nodes counted on this node, where the count
    cache holds the epoch's draws and the whole still loads in mosaicml-streaming."""
    out: dict[str, object] = dict(state)
    world = World(1, 1, 0)  # the marks are of canonical nodes: any world plans the same key
    try:
        config = plan_config(
            layout.plan_streams(), settings, state["epoch"], state["sample_in_epoch"], world
        )
    except (ValueError, RuntimeError) as err:
        logger.debug("no resume marks: %s", err)
        return out
    cache = count_cache_for(config, layout)
    marks = None if cache is None else _core.py1e_resume_marks(config, cache)
    if marks is None:
        return out
    out[MARKS_KEY] = encode_marks(marks)
    if len(json.dumps(out, sort_keys=True)) >= _MOSAIC_STATE_BYTES:
        logger.debug("resume marks left out: the state dict would not load in mosaic")
        del out[MARKS_KEY]
    return out
