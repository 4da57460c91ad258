"""mosaicml-streaming's ``streaming.base`` module paths, as thin layers over streamx."""
