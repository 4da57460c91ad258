//! TODO: sampling (being written).
