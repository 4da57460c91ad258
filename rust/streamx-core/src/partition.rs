//! TODO: partition (being written).
