//! Placeholder until the fake AAP server module is public.
#![no_main]
libfuzzer_sys::fuzz_target!(|_data: &[u8]| {});
