//! `provkit-core`: see the crate README.
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Kubernetes types (ObjectRef, GroupVersionResource, MachineInfo), owned by the machines work.
#[cfg(feature = "k8s")]
#[cfg_attr(docsrs, doc(cfg(feature = "k8s")))]
pub mod k8s;
