//! A serde `Serializer` that writes Go `encoding/json` bytes into a [`Sink`].
//!
//! Structs, sequences and scalars stream straight into the sink. Maps are the only thing
//! buffered: each entry's key is rendered to its string form and its value to bytes, and the
//! entries are written sorted by key once the map ends (Go sorts map keys; serde hands them
//! over in the map's own order, e.g. insertion order for `serde_json::Map` with
//! `preserve_order`). A map's keys and values go into one byte buffer, taken from a pool that
//! lives as long as the serialization, so a map costs no allocation once the pool is warm.

use serde::ser::{self, Serialize};

use super::error::ConfigVersionError;
use super::go_format::{
    write_base64, write_f32, write_f64, write_i64, write_i128, write_string, write_string_bytes,
    write_u64, write_u128,
};
use super::sink::{FmtSink, Sink};

type Result<T, E = ConfigVersionError> = std::result::Result<T, E>;

/// serde_json's private struct name for `Number` under `arbitrary_precision`.
const SERDE_JSON_NUMBER: &str = "$serde_json::private::Number";
/// serde_json's private struct name for `RawValue`.
const SERDE_JSON_RAW_VALUE: &str = "$serde_json::private::RawValue";

/// Serializer writing Go-identical JSON into `out`.
pub(crate) struct GoJsonSerializer<'p, W> {
    pub(crate) out: W,
    /// Buffers of maps that ended, for the next maps to reuse.
    pub(crate) pool: &'p mut Vec<MapBuffer>,
}

/// A map being buffered: the keys' string forms and the values' JSON, one after the other in
/// `bytes`; each entry as (key start, key end = value start, value end).
#[derive(Debug, Default)]
pub(crate) struct MapBuffer {
    bytes: Vec<u8>,
    entries: Vec<(usize, usize, usize)>,
}

/// Sequences, tuples and structs: `[a,b]` / `{"k":v}`, streamed, with a closing text.
pub(crate) struct Streamed<'a, 'p, W> {
    ser: &'a mut GoJsonSerializer<'p, W>,
    first: bool,
    close: &'static [u8],
}

impl<W: Sink> Streamed<'_, '_, W> {
    #[inline]
    fn comma(&mut self) {
        if !self.first {
            self.ser.out.write_byte(b',');
        }
        self.first = false;
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.comma();
        value.serialize(&mut *self.ser)
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<()> {
        self.comma();
        write_string(&mut self.ser.out, key);
        self.ser.out.write_byte(b':');
        value.serialize(&mut *self.ser)
    }

    fn end(self) {
        self.ser.out.write(self.close);
    }
}

/// Maps: entries buffered, then written sorted by key.
pub(crate) struct SortedMap<'a, 'p, W> {
    ser: &'a mut GoJsonSerializer<'p, W>,
    buf: MapBuffer,
    /// The range in `buf.bytes` of the key whose value comes next.
    key: Option<(usize, usize)>,
}

impl<'a, 'p, W: Sink> ser::Serializer for &'a mut GoJsonSerializer<'p, W> {
    type Ok = ();
    type Error = ConfigVersionError;
    type SerializeSeq = Streamed<'a, 'p, W>;
    type SerializeTuple = Streamed<'a, 'p, W>;
    type SerializeTupleStruct = Streamed<'a, 'p, W>;
    type SerializeTupleVariant = Streamed<'a, 'p, W>;
    type SerializeMap = SortedMap<'a, 'p, W>;
    type SerializeStruct = Streamed<'a, 'p, W>;
    type SerializeStructVariant = Streamed<'a, 'p, W>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.out.write(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<()> {
        write_i64(&mut self.out, i64::from(v));
        Ok(())
    }

    fn serialize_i16(self, v: i16) -> Result<()> {
        write_i64(&mut self.out, i64::from(v));
        Ok(())
    }

    fn serialize_i32(self, v: i32) -> Result<()> {
        write_i64(&mut self.out, i64::from(v));
        Ok(())
    }

    fn serialize_i64(self, v: i64) -> Result<()> {
        write_i64(&mut self.out, v);
        Ok(())
    }

    fn serialize_i128(self, v: i128) -> Result<()> {
        write_i128(&mut self.out, v);
        Ok(())
    }

    fn serialize_u8(self, v: u8) -> Result<()> {
        write_u64(&mut self.out, u64::from(v));
        Ok(())
    }

    fn serialize_u16(self, v: u16) -> Result<()> {
        write_u64(&mut self.out, u64::from(v));
        Ok(())
    }

    fn serialize_u32(self, v: u32) -> Result<()> {
        write_u64(&mut self.out, u64::from(v));
        Ok(())
    }

    fn serialize_u64(self, v: u64) -> Result<()> {
        write_u64(&mut self.out, v);
        Ok(())
    }

    fn serialize_u128(self, v: u128) -> Result<()> {
        write_u128(&mut self.out, v);
        Ok(())
    }

    fn serialize_f32(self, v: f32) -> Result<()> {
        write_f32(&mut self.out, v)
    }

    fn serialize_f64(self, v: f64) -> Result<()> {
        write_f64(&mut self.out, v)
    }

    fn serialize_char(self, v: char) -> Result<()> {
        write_string(&mut self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Result<()> {
        write_string(&mut self.out, v);
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        write_base64(&mut self.out, v);
        Ok(())
    }

    fn serialize_none(self) -> Result<()> {
        self.out.write(b"null");
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<()> {
        self.serialize_none()
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        // A field-less struct, like Go's `struct{}`: `{}` (serde_json writes `null`).
        self.out.write(b"{}");
        Ok(())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<()> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<()> {
        self.out.write(b"{");
        write_string(&mut self.out, variant);
        self.out.write(b":");
        value.serialize(&mut *self)?;
        self.out.write(b"}");
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        self.out.write(b"[");
        Ok(Streamed {
            ser: self,
            first: true,
            close: b"]",
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        self.out.write(b"{");
        write_string(&mut self.out, variant);
        self.out.write(b":[");
        Ok(Streamed {
            ser: self,
            first: true,
            close: b"]}",
        })
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        let buf = self.pool.pop().unwrap_or_default();
        Ok(SortedMap {
            ser: self,
            buf,
            key: None,
        })
    }

    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        if name == SERDE_JSON_RAW_VALUE {
            return Err(ConfigVersionError::UnsupportedValue {
                kind: "serde_json::value::RawValue",
            });
        }
        let number = name == SERDE_JSON_NUMBER;
        if !number {
            self.out.write(b"{");
        }
        Ok(Streamed {
            ser: self,
            // A serde_json arbitrary-precision number is a struct with one field holding the
            // digits; `first: false` + the `number` check in `serialize_field` write it bare.
            first: !number,
            close: if number { b"" } else { b"}" },
        })
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        self.out.write(b"{");
        write_string(&mut self.out, variant);
        self.out.write(b":{");
        Ok(Streamed {
            ser: self,
            first: true,
            close: b"}}",
        })
    }

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<()> {
        self.serialize_str(&value.to_string())
    }
}

impl<W: Sink> ser::SerializeSeq for Streamed<'_, '_, W> {
    type Ok = ();
    type Error = ConfigVersionError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }

    fn end(self) -> Result<()> {
        Streamed::end(self);
        Ok(())
    }
}

impl<W: Sink> ser::SerializeTuple for Streamed<'_, '_, W> {
    type Ok = ();
    type Error = ConfigVersionError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }

    fn end(self) -> Result<()> {
        Streamed::end(self);
        Ok(())
    }
}

impl<W: Sink> ser::SerializeTupleStruct for Streamed<'_, '_, W> {
    type Ok = ();
    type Error = ConfigVersionError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }

    fn end(self) -> Result<()> {
        Streamed::end(self);
        Ok(())
    }
}

impl<W: Sink> ser::SerializeTupleVariant for Streamed<'_, '_, W> {
    type Ok = ();
    type Error = ConfigVersionError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }

    fn end(self) -> Result<()> {
        Streamed::end(self);
        Ok(())
    }
}

impl<W: Sink> ser::SerializeStruct for Streamed<'_, '_, W> {
    type Ok = ();
    type Error = ConfigVersionError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        if key == SERDE_JSON_NUMBER {
            // The digits of an arbitrary-precision serde_json number, written unquoted.
            // Integers stay as written; anything with a fraction or exponent is re-formatted
            // as the float64 Go would have decoded it into.
            let mut digits = Vec::new();
            value.serialize(KeySerializer(&mut digits))?;
            let digits = String::from_utf8_lossy(&digits);
            if digits.contains(['.', 'e', 'E']) {
                let f: f64 = digits.parse().map_err(|_| ConfigVersionError::Custom {
                    message: format!("invalid serde_json number {digits:?}"),
                })?;
                return write_f64(&mut self.ser.out, f);
            }
            self.ser.out.write(digits.as_bytes());
            return Ok(());
        }
        self.field(key, value)
    }

    fn end(self) -> Result<()> {
        Streamed::end(self);
        Ok(())
    }
}

impl<W: Sink> ser::SerializeStructVariant for Streamed<'_, '_, W> {
    type Ok = ();
    type Error = ConfigVersionError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.field(key, value)
    }

    fn end(self) -> Result<()> {
        Streamed::end(self);
        Ok(())
    }
}

impl<W: Sink> ser::SerializeMap for SortedMap<'_, '_, W> {
    type Ok = ();
    type Error = ConfigVersionError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        // A key without a value is dropped, as a key serialized again replaces it.
        if let Some((start, _)) = self.key.take() {
            self.buf.bytes.truncate(start);
        }
        let start = self.buf.bytes.len();
        key.serialize(KeySerializer(&mut self.buf.bytes))?;
        self.key = Some((start, self.buf.bytes.len()));
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let (key_start, key_end) = self.key.take().ok_or_else(|| ConfigVersionError::Custom {
            message: "map value serialized before its key".to_owned(),
        })?;
        let mut inner = GoJsonSerializer {
            out: &mut self.buf.bytes,
            pool: &mut *self.ser.pool,
        };
        value.serialize(&mut inner)?;
        self.buf
            .entries
            .push((key_start, key_end, self.buf.bytes.len()));
        Ok(())
    }

    fn end(mut self) -> Result<()> {
        // Go sorts by the keys' string form, byte-wise. The sort is stable, so duplicate keys
        // (impossible in a Go map) keep their order; keys that arrive sorted (`BTreeMap`) are
        // not moved.
        let MapBuffer { bytes, entries } = &mut self.buf;
        let bytes = &bytes[..];
        let key = |&(start, end, _): &(usize, usize, usize)| bytes.get(start..end);
        if !entries.is_sorted_by(|a, b| key(a) <= key(b)) {
            entries.sort_by(|a, b| key(a).cmp(&key(b)));
        }
        let out = &mut self.ser.out;
        out.write_byte(b'{');
        for (i, &(key_start, key_end, value_end)) in entries.iter().enumerate() {
            if i > 0 {
                out.write_byte(b',');
            }
            write_string_bytes(out, bytes.get(key_start..key_end).unwrap_or_default());
            out.write_byte(b':');
            out.write(bytes.get(key_end..value_end).unwrap_or_default());
        }
        out.write_byte(b'}');
        self.buf.bytes.clear();
        self.buf.entries.clear();
        self.ser.pool.push(self.buf);
        Ok(())
    }
}

/// Renders a map key to its string form, as Go does for the key kinds it allows: strings as
/// they are, integers in decimal. Also accepted (serde_json accepts them): `bool`, `char`,
/// unit enum variants and newtype wrappers of those.
struct KeySerializer<'b>(&'b mut Vec<u8>);

fn bad_key(kind: &'static str) -> ConfigVersionError {
    ConfigVersionError::UnsupportedMapKey { kind }
}

impl ser::Serializer for KeySerializer<'_> {
    type Ok = ();
    type Error = ConfigVersionError;
    type SerializeSeq = ser::Impossible<(), ConfigVersionError>;
    type SerializeTuple = ser::Impossible<(), ConfigVersionError>;
    type SerializeTupleStruct = ser::Impossible<(), ConfigVersionError>;
    type SerializeTupleVariant = ser::Impossible<(), ConfigVersionError>;
    type SerializeMap = ser::Impossible<(), ConfigVersionError>;
    type SerializeStruct = ser::Impossible<(), ConfigVersionError>;
    type SerializeStructVariant = ser::Impossible<(), ConfigVersionError>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.0.write(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<()> {
        write_i64(self.0, i64::from(v));
        Ok(())
    }

    fn serialize_i16(self, v: i16) -> Result<()> {
        write_i64(self.0, i64::from(v));
        Ok(())
    }

    fn serialize_i32(self, v: i32) -> Result<()> {
        write_i64(self.0, i64::from(v));
        Ok(())
    }

    fn serialize_i64(self, v: i64) -> Result<()> {
        write_i64(self.0, v);
        Ok(())
    }

    fn serialize_i128(self, v: i128) -> Result<()> {
        write_i128(self.0, v);
        Ok(())
    }

    fn serialize_u8(self, v: u8) -> Result<()> {
        write_u64(self.0, u64::from(v));
        Ok(())
    }

    fn serialize_u16(self, v: u16) -> Result<()> {
        write_u64(self.0, u64::from(v));
        Ok(())
    }

    fn serialize_u32(self, v: u32) -> Result<()> {
        write_u64(self.0, u64::from(v));
        Ok(())
    }

    fn serialize_u64(self, v: u64) -> Result<()> {
        write_u64(self.0, v);
        Ok(())
    }

    fn serialize_u128(self, v: u128) -> Result<()> {
        write_u128(self.0, v);
        Ok(())
    }

    fn serialize_f32(self, _v: f32) -> Result<()> {
        Err(bad_key("f32"))
    }

    fn serialize_f64(self, _v: f64) -> Result<()> {
        Err(bad_key("f64"))
    }

    fn serialize_char(self, v: char) -> Result<()> {
        self.0.write(v.encode_utf8(&mut [0; 4]).as_bytes());
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Result<()> {
        self.0.write(v.as_bytes());
        Ok(())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<()> {
        Err(bad_key("bytes"))
    }

    fn serialize_none(self) -> Result<()> {
        Err(bad_key("none"))
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<()> {
        Err(bad_key("unit"))
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        Err(bad_key("unit struct"))
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<()> {
        self.0.write(variant.as_bytes());
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<()> {
        Err(bad_key("newtype variant"))
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(bad_key("sequence"))
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(bad_key("tuple"))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(bad_key("tuple struct"))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(bad_key("tuple variant"))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(bad_key("map"))
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Err(bad_key("struct"))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(bad_key("struct variant"))
    }

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<()> {
        let _ = std::fmt::Write::write_fmt(&mut FmtSink(self.0), format_args!("{value}"));
        Ok(())
    }
}
