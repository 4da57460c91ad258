"""The ``streamx`` command line."""
