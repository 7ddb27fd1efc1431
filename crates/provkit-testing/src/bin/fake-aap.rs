//! Standalone fake AAP server (work in progress).
fn main() {}
