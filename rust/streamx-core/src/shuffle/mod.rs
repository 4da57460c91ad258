//! TODO: shuffles (being written).
