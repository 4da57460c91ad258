"""mosaicml-streaming's ``streaming.base.constant`` names.

streamx keeps no shared-memory blocks or lock files under these names; they exist so code
that imports them keeps importing. ``DEFAULT_TIMEOUT`` is the default per-file download
timeout, in seconds, in both libraries.
"""

LOCALS = "locals"
BARRIER = "barrier"
NEXT_EPOCH = "next_epoch"
CACHE_USAGE = "cache_usage"
SHARD_STATES = "shard_states"
SHARD_ACCESS_TIMES = "shard_access_times"
RESUME = "resume"
EPOCH_SHAPE = "epoch_shape"
EPOCH_DATA = "epoch_data"
SHM_TO_CLEAN = [
    LOCALS,
    BARRIER,
    NEXT_EPOCH,
    CACHE_USAGE,
    SHARD_STATES,
    SHARD_ACCESS_TIMES,
    RESUME,
    EPOCH_SHAPE,
    EPOCH_DATA,
]
BARRIER_FILELOCK = "barrier_filelock"
CACHE_FILELOCK = "cache_filelock"
TICK = 0.007  # seconds between polls
DEFAULT_TIMEOUT = 60.0
