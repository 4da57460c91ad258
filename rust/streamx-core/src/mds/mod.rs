//! TODO: MDS format (being written).
