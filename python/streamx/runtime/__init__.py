"""Runtime pieces that every floor may need: where this process sits among DataLoader
workers, torch's dataset base classes (both without importing torch), the run's private
directories, the iteration metrics that downloads count into, replacing a file whole, and
which hooks a subclass overrides."""
