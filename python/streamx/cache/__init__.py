"""The dataset's shard cache on this node: which shards are local, the ledger the node's
processes share, fetching and evicting shards, range reads while a shard downloads, the
cache directory's safety checks and the claims of streams on it.

This floor sits between ``dataset`` (which builds the streams and the layout) and the floors
it reads through (``order``, ``format``, ``storage``); what it needs from a dataset it names
as Protocols (:mod:`~streamx.cache.views`).
"""
