"""The MDS format and its siblings: ``index.json``, column encodings, shard readers and writers."""
