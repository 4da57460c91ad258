//! TODO: compression (being written).
