//! Config versions: a short hash of a resource's spec, stored in `status.desiredConfigVersion`
//! and in each provision job's `configVersion`, that tells the lifecycle whether the spec
//! changed since the last provision.
//!
//! [`compute_desired_config_version`] returns what Go's `ComputeDesiredConfigVersion` returns
//! for the same data: **FNV-1a 64** (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`)
//! over the bytes Go's `encoding/json` `Marshal` produces, as the 8-byte big-endian digest in 16
//! lower-case hex characters. A controller taking over from the Go operator therefore computes
//! the same version for an unchanged spec, and does not re-provision the fleet on cut-over.
//!
//! ```
//! use provkit_core::compute_desired_config_version;
//! use serde::Serialize;
//!
//! #[derive(Serialize)]
//! struct Spec { key: &'static str }
//!
//! // Go: ComputeDesiredConfigVersion(map[string]string{"key": "value"}) == "90f31220e6080755"
//! assert_eq!(compute_desired_config_version(&Spec { key: "value" }).unwrap(), "90f31220e6080755");
//! let v = serde_json::json!({ "key": "value" });
//! assert_eq!(compute_desired_config_version(&v).unwrap(), "90f31220e6080755");
//! ```
//!
//! # The Go JSON bytes
//!
//! The value is serialized through serde by a serializer that writes Go's bytes, streaming
//! straight into the hasher; only maps are buffered, to sort them. [`to_go_json`] returns the
//! same bytes for inspection.
//!
//! - Struct fields in serde order (the Rust field order); maps **sorted by key** (byte-wise on
//!   the key's string form; integer keys by their decimal string, as Go does), whatever the
//!   map's own order, so a `serde_json::Value` built with `preserve_order` (or an `IndexMap`)
//!   hashes like a `BTreeMap`.
//! - No whitespace.
//! - Strings: `"` `\` escaped; `\b` `\f` `\n` `\r` `\t` as short escapes; other control
//!   characters and `<` `>` `&` as `\u00XX` (lower-case hex); U+2028 and U+2029 as `\u2028` and
//!   `\u2029`; all other text, non-ASCII included, raw UTF-8.
//! - Floats as Go writes them: the shortest round-trip digits, `1` not `1.0`, `-0` for negative
//!   zero, plain notation for `1e-6 <= |f| < 1e21` and exponent notation otherwise with a signed,
//!   unpadded exponent (`1e+21`, `1e-7`); `f32` values with float32 digits and thresholds. NaN
//!   and ±∞ are a [`ConfigVersionError::NonFiniteFloat`] (Go's `Marshal` fails too).
//! - Integers in decimal (also `i128`/`u128`); `bool` as `true`/`false`; `None` and `()` as
//!   `null`; a unit struct (`struct Empty;`) as `{}`, like Go's `struct{}` (serde_json writes
//!   `null`); unit enum variants as their name; other enum variants externally tagged
//!   (`{"Variant":…}`, like serde_json; Go has no counterpart).
//! - Byte slices serialized with `serialize_bytes` (e.g. through `serde_bytes`) as a
//!   standard-base64 string, as Go writes `[]byte`. A plain `Vec<u8>` serializes through serde
//!   as an array of numbers, which is **not** what Go writes for `[]byte`.
//! - `serde_json` numbers with its `arbitrary_precision` feature: integers as written, others
//!   re-formatted as float64. `serde_json::value::RawValue` is a
//!   [`ConfigVersionError::UnsupportedValue`] (its bytes would not be canonical).
//!
//! # The guarantee, and the duties of your type
//!
//! **For a `serde_json::Value`** the bytes are identical to Go marshalling the same document as
//! `map[string]any`/`[]any`, except for integers beyond ±2^53 (Go's `any` holds them as
//! float64 and prints them rounded; here they are exact, as for Go `int64` fields).
//!
//! **For your own types** the bytes are identical to Go's for the Go struct they mirror, as long
//! as their serde output mirrors it. That is on the type:
//!
//! - **Field order**: declare the fields in the Go declaration order, with the Go JSON names
//!   (`#[serde(rename = "...")]`; a Go field without a json tag uses the Go field name, e.g. the
//!   anonymous wrappers `{"Spec":…,"ImplementationStrategy":…}`).
//! - **`omitempty`** ↔ `#[serde(skip_serializing_if = "…")]` with Go's emptiness (`""`, `0`,
//!   `false`, nil/empty slice and map, nil pointer); and no `skip_serializing_if` where Go has
//!   no `omitempty`.
//! - **nil vs empty slices and maps**: without `omitempty` Go writes `null` for nil and `[]`/`{}`
//!   for empty. Use `Option<Vec<_>>` (or `Option<BTreeMap<_, _>>`) where Go can hold nil.
//! - **Maps**: `BTreeMap` (any map works, since keys are sorted here, but a `HashMap` elsewhere in
//!   your code will not give stable serde output). Avoid `#[serde(flatten)]`: it turns a struct
//!   into a map whose keys are then sorted, while Go writes embedded struct fields in order.
//! - **`resource.Quantity`** as its canonical string (`"1Gi"`, `"500m"`), as k8s-openapi's
//!   `Quantity` holds it when it came from the API server; a non-canonical string the user
//!   typed (`"1024Mi"`) is canonicalised by Go and not here.
//! - **Times**: `metav1.Time` at whole seconds (see [`crate::timestamp`]).
//! - **Embedded Kubernetes types**: k8s-openapi structs (`ObjectMeta`, `ResourceRequirements`,
//!   …) write their fields in alphabetical order, Go in declaration order. A hashed spec that
//!   embeds one needs a mirror struct in Go's order (going through `serde_json::Value` does not
//!   help: that sorts the keys).
//! - **Floats**: prefer none in hashed specs; the Go formatting above is exact, but a float that
//!   went through a different parser may already differ in its last bit.
//!
//! [`JobStatus`](crate::JobStatus) itself serializes as a map (its unknown-field map is
//! flattened), so it hashes with sorted keys; status types are not meant to be hashed.
//!
//! # FNV-1a or SHA-256
//!
//! [`ConfigHasher::Fnv1aGoJson`] (the default, used by [`compute_desired_config_version`]) is
//! what the Go operator uses; choose it whenever resources may have been provisioned by Go or
//! by an earlier provkit release. [`ConfigHasher::Sha256`] (64 hex characters over the same
//! bytes) is collision-resistant; choose it for a new fleet that never ran the Go operator.
//! FNV-1a is not a cryptographic hash, but a config version is only compared with itself, not
//! used against an adversary.
//!
//! **Switching the hasher on an existing fleet makes every stored `configVersion` differ from
//! the new desired value, so every resource is re-provisioned once.** The same happens when a
//! spec type's serde output changes (a renamed or reordered field).

mod error;
mod go_format;
mod serializer;
mod sink;
mod wrapper;

use serde::Serialize;
use sha2::Digest as _;

pub use error::ConfigVersionError;
pub use wrapper::{SpecWithStrategies, SpecWithStrategy, SpecWithStrategyAndTargetIp};

use serializer::GoJsonSerializer;
use sink::{Buffered, Fnv1a64, Sink};

/// Go's `ComputeDesiredConfigVersion`: FNV-1a 64 over the Go `encoding/json` bytes of `spec`,
/// as 16 lower-case hex characters. Same as [`ConfigHasher::Fnv1aGoJson`]`.compute(spec)`.
///
/// # Guarantees
///
/// Deterministic; independent of map iteration order; identical to Go for the data described
/// in the [module docs](self#the-guarantee-and-the-duties-of-your-type).
///
/// # Errors
///
/// [`ConfigVersionError`] when the value has NaN/±∞ floats, map keys Go cannot render, or its
/// `Serialize` implementation fails.
///
/// ```
/// use std::collections::BTreeMap;
/// use provkit_core::compute_desired_config_version;
///
/// let a: BTreeMap<_, _> = [("key", "a")].into();
/// assert_eq!(compute_desired_config_version(&a).unwrap(), "c855a4bcffcb8447");
/// let empty: BTreeMap<String, String> = BTreeMap::new();
/// assert_eq!(compute_desired_config_version(&empty).unwrap(), "08f44b07b5901a25");
/// ```
pub fn compute_desired_config_version<T: Serialize + ?Sized>(
    spec: &T,
) -> Result<String, ConfigVersionError> {
    ConfigHasher::Fnv1aGoJson.compute(spec)
}

/// The bytes Go's `json.Marshal` writes for `value` (the bytes the config version hashes).
///
/// # Errors
///
/// As [`compute_desired_config_version`].
///
/// ```
/// let v = serde_json::json!({ "b": [1.0, 1e21, 1e-7], "a": "<&>" });
/// assert_eq!(
///     provkit_core::to_go_json(&v).unwrap(),
///     br#"{"a":"\u003c\u0026\u003e","b":[1,1e+21,1e-7]}"#,
/// );
/// ```
pub fn to_go_json<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, ConfigVersionError> {
    write_go_json(value, Vec::new())
}

fn write_go_json<T: Serialize + ?Sized, W: Sink>(
    value: &T,
    out: W,
) -> Result<W, ConfigVersionError> {
    let mut pool = Vec::new();
    let mut ser = GoJsonSerializer {
        out,
        pool: &mut pool,
    };
    value.serialize(&mut ser)?;
    Ok(ser.out)
}

/// Which hash turns the Go JSON bytes into a config version.
///
/// See the [module docs](self#fnv-1a-or-sha-256) for when to use which; switching re-provisions
/// every resource once.
///
/// ```
/// use provkit_core::ConfigHasher;
///
/// let spec = serde_json::json!({ "key": "value" });
/// assert_eq!(ConfigHasher::default().compute(&spec).unwrap(), "90f31220e6080755");
/// assert_eq!(ConfigHasher::Sha256.compute(&spec).unwrap().len(), 64);
/// assert_eq!(serde_json::to_string(&ConfigHasher::Fnv1aGoJson).unwrap(), r#""fnv1a-go-json""#);
/// ```
///
/// In configuration files it reads and writes as `"fnv1a-go-json"` or `"sha256"`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigHasher {
    /// FNV-1a 64, 16 lower-case hex characters: what the Go operator computes (default).
    #[default]
    Fnv1aGoJson,
    /// SHA-256, 64 lower-case hex characters, over the same bytes.
    #[serde(rename = "sha256")]
    Sha256,
}

impl ConfigHasher {
    /// Hashes the Go `encoding/json` bytes of `spec`.
    ///
    /// # Errors
    ///
    /// As [`compute_desired_config_version`].
    ///
    /// ```
    /// use provkit_core::ConfigHasher;
    /// let v = ConfigHasher::Sha256.compute(&serde_json::json!({})).unwrap();
    /// assert_eq!(v, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
    /// ```
    pub fn compute<T: Serialize + ?Sized>(&self, spec: &T) -> Result<String, ConfigVersionError> {
        match self {
            // Straight into FNV (see `Buffered` for why not buffered).
            Self::Fnv1aGoJson => Ok(write_go_json(spec, Fnv1a64::new())?.finish_hex()),
            Self::Sha256 => Ok(hex::encode(
                write_go_json(spec, Buffered::new(sha2::Sha256::new()))?
                    .finish()
                    .finalize(),
            )),
        }
    }

    /// Hashes bytes that already are Go JSON (or any bytes): the spec's test vectors are given
    /// this way.
    ///
    /// ```
    /// use provkit_core::ConfigHasher;
    /// assert_eq!(ConfigHasher::Fnv1aGoJson.hash_bytes(br#"{"key":"b"}"#), "bfac7fbcfae417be");
    /// assert_eq!(ConfigHasher::Fnv1aGoJson.hash_bytes(b""), "cbf29ce484222325");
    /// ```
    #[must_use]
    pub fn hash_bytes(&self, bytes: &[u8]) -> String {
        match self {
            Self::Fnv1aGoJson => {
                let mut h = Fnv1a64::new();
                h.write(bytes);
                h.finish_hex()
            }
            Self::Sha256 => hex::encode(sha2::Sha256::digest(bytes)),
        }
    }
}
