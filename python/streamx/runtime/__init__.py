"""Runtime pieces that every floor may need: where this process sits among DataLoader
workers, and torch's dataset base classes, both without importing torch."""
