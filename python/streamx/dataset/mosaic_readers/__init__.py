"""mosaicml-streaming's per-shard readers (``Reader``, ``MDSReader``, ``JSONReader``, the XSV
readers) over streamx's sample readers; ``streamx.base.format`` re-exports them."""
