//! `provkit-testing`: see the crate README.
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod conformance;
pub mod fake_aap;
pub mod scripted;

#[cfg(feature = "machines")]
#[cfg_attr(docsrs, doc(cfg(feature = "machines")))]
pub mod machines;
