"""PyTorch integration: the only place streamx imports torch."""
