"""``python -m streamx`` runs the ``streamx`` command line."""

from streamx.cli.main import main

main()
