//! Tests of the sealed store over a local directory.
