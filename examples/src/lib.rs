//! Shared harness for the provkit example programs.
