//! Kubernetes-facing types (work in progress).
