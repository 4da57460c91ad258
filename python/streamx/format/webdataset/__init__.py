"""WebDataset tar shards read in place: a member table per tar, samples grouped by key."""
