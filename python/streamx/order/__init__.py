"""Who reads what, and when: the world of ranks and workers, the epoch order and its state."""
