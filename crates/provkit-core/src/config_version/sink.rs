//! Where the Go JSON bytes go: straight into a hasher, or into a buffer.

use sha2::Digest as _;

/// A byte consumer. Writing cannot fail (hashers and `Vec` never do).
pub(crate) trait Sink {
    fn write(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn write(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Sink for sha2::Sha256 {
    fn write(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

/// FNV-1a, 64 bit (Go `hash/fnv.New64a`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv1a64(u64);

impl Fnv1a64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    pub(crate) const fn new() -> Self {
        Self(Self::OFFSET_BASIS)
    }

    /// The digest as Go prints `hex.EncodeToString(h.Sum(nil))`: 8 bytes big-endian, 16
    /// lower-case hex characters.
    pub(crate) fn finish_hex(self) -> String {
        format!("{:016x}", self.0)
    }
}

impl Sink for Fnv1a64 {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }
}

/// Adapter so `write!` can format numbers straight into a sink.
pub(crate) struct FmtSink<'a, S: ?Sized>(pub(crate) &'a mut S);

impl<S: Sink + ?Sized> std::fmt::Write for FmtSink<'_, S> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_vectors() {
        // Published FNV-1a 64 test vectors.
        let h = |s: &[u8]| {
            let mut f = Fnv1a64::new();
            f.write(s);
            f.finish_hex()
        };
        assert_eq!(h(b""), "cbf29ce484222325");
        assert_eq!(h(b"a"), "af63dc4c8601ec8c");
        assert_eq!(h(b"foobar"), "85944171f73967e8");
    }
}
