"""py1e's resume marks in a state dict: per canonical node its shuffle's draws at one span a
little before the resume point, so that a node that never counted the epoch (a restart on
other machines) lays its canonical nodes out from there instead of counting every draw before
them (about 0.5 s at 10^9 samples).

The state dict carries them under :data:`MARKS_KEY` as base64 text: mosaicml-streaming's
``load_state_dict`` keeps keys it does not know, and a state dict without the key resumes as
before. The Rust planner checks the marks against the epoch's key (seed, epoch, canonical
nodes, block size and every shuffle unit's size) and ignores marks of another configuration;
either way the order is the same, only the time to the first batch differs.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping

__all__ = ["MARKS_KEY", "check_marks", "encode_marks", "marked_nodes", "marks_of"]

MARKS_KEY = "streamx_py1e_marks"

# Where the record's mark count sits: after its magic, version, key digest, shard and node
# counts and generator increment (``shuffle/py1e/resume_marks.rs``).
_COUNT_AT = 8 + 4 + 16 + 8 + 8 + 16

logger = logging.getLogger("streamx")


def encode_marks(marks: bytes) -> str:
    """The state dict's text for ``marks``."""
    return base64.b64encode(marks).decode("ascii")


def check_marks(state: Mapping[str, object]) -> None:
    """Refuses a state dict whose marks are not text.

    Raises:
        ValueError: If :data:`MARKS_KEY` holds something other than a string.
    """
    marks = state.get(MARKS_KEY)
    if marks is not None and not isinstance(marks, str):
        raise ValueError(
            f"State dict key {MARKS_KEY!r} must be a base64 string, got {type(marks).__name__}"
        )


def marks_of(state: Mapping[str, object] | None, epoch: int, sample_in_epoch: int) -> bytes | None:
    """The marks ``state`` carries for a resume of ``epoch`` at ``sample_in_epoch``; ``None``
    where it carries none for that point, or text that is not base64 (logged at debug)."""
    if state is None or state.get("epoch") != epoch:
        return None
    if state.get("sample_in_epoch") != sample_in_epoch:
        return None
    text = state.get(MARKS_KEY)
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as err:
        logger.debug("resume marks in the state dict are not base64, ignored: %s", err)
        return None


def marked_nodes(marks: bytes | str | None) -> int:
    """How many canonical nodes ``marks`` hold (bytes, or a state dict's base64 text); 0 for
    none. Not checked: the planner checks marks when it reads them."""
    raw = base64.b64decode(marks) if isinstance(marks, str) else marks
    if raw is None or len(raw) < _COUNT_AT + 4:
        return 0
    return int.from_bytes(raw[_COUNT_AT : _COUNT_AT + 4], "little")
