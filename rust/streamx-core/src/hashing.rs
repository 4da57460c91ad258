//! TODO: hashing (being written).
