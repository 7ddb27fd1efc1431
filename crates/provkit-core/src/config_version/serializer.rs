//! A serde `Serializer` that writes Go `encoding/json` bytes into a [`Sink`].
//!
//! Structs, sequences and scalars stream straight into the sink. Maps are the only thing
//! buffered: each entry's key is rendered to its string form and its value to bytes, and the
//! entries are written sorted by key once the map ends (Go sorts map keys; serde hands them
//! over in the map's own order, e.g. insertion order for `serde_json::Map` with
//! `preserve_order`).

use std::fmt::Write as _;

use serde::ser::{self, Serialize};

use super::error::ConfigVersionError;
use super::go_format::{write_base64, write_f32, write_f64, write_string};
use super::sink::{FmtSink, Sink};

type Result<T, E = ConfigVersionError> = std::result::Result<T, E>;

/// serde_json's private struct name for `Number` under `arbitrary_precision`.
const SERDE_JSON_NUMBER: &str = "$serde_json::private::Number";
/// serde_json's private struct name for `RawValue`.
const SERDE_JSON_RAW_VALUE: &str = "$serde_json::private::RawValue";

/// Serializer writing Go-identical JSON into `out`.
pub(crate) struct GoJsonSerializer<W> {
    pub(crate) out: W,
}

impl<W: Sink> GoJsonSerializer<W> {
    fn int(&mut self, n: impl std::fmt::Display) {
        let _ = write!(FmtSink(&mut self.out), "{n}");
    }
}

/// Sequences, tuples and structs: `[a,b]` / `{"k":v}`, streamed, with a closing text.
pub(crate) struct Streamed<'a, W> {
    ser: &'a mut GoJsonSerializer<W>,
    first: bool,
    close: &'static [u8],
}

impl<W: Sink> Streamed<'_, W> {
    fn comma(&mut self) {
        if !self.first {
            self.ser.out.write(b",");
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
        self.ser.out.write(b":");
        value.serialize(&mut *self.ser)
    }

    fn end(self) {
        self.ser.out.write(self.close);
    }
}

/// Maps: entries buffered, then written sorted by key.
pub(crate) struct SortedMap<'a, W> {
    ser: &'a mut GoJsonSerializer<W>,
    entries: Vec<(String, Vec<u8>)>,
    key: Option<String>,
}

impl<'a, W: Sink> ser::Serializer for &'a mut GoJsonSerializer<W> {
    type Ok = ();
    type Error = ConfigVersionError;
    type SerializeSeq = Streamed<'a, W>;
    type SerializeTuple = Streamed<'a, W>;
    type SerializeTupleStruct = Streamed<'a, W>;
    type SerializeTupleVariant = Streamed<'a, W>;
    type SerializeMap = SortedMap<'a, W>;
    type SerializeStruct = Streamed<'a, W>;
    type SerializeStructVariant = Streamed<'a, W>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.out.write(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<()> {
        self.int(v);
        Ok(())
    }

    fn serialize_i16(self, v: i16) -> Result<()> {
        self.int(v);
        Ok(())
    }

    fn serialize_i32(self, v: i32) -> Result<()> {
        self.int(v);
        Ok(())
    }

    fn serialize_i64(self, v: i64) -> Result<()> {
        self.int(v);
        Ok(())
    }

    fn serialize_i128(self, v: i128) -> Result<()> {
        self.int(v);
        Ok(())
    }

    fn serialize_u8(self, v: u8) -> Result<()> {
        self.int(v);
        Ok(())
    }

    fn serialize_u16(self, v: u16) -> Result<()> {
        self.int(v);
        Ok(())
    }

    fn serialize_u32(self, v: u32) -> Result<()> {
        self.int(v);
        Ok(())
    }

    fn serialize_u64(self, v: u64) -> Result<()> {
        self.int(v);
        Ok(())
    }

    fn serialize_u128(self, v: u128) -> Result<()> {
        self.int(v);
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

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap> {
        Ok(SortedMap {
            ser: self,
            entries: Vec::with_capacity(len.unwrap_or(0).min(1024)),
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

impl<W: Sink> ser::SerializeSeq for Streamed<'_, W> {
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

impl<W: Sink> ser::SerializeTuple for Streamed<'_, W> {
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

impl<W: Sink> ser::SerializeTupleStruct for Streamed<'_, W> {
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

impl<W: Sink> ser::SerializeTupleVariant for Streamed<'_, W> {
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

impl<W: Sink> ser::SerializeStruct for Streamed<'_, W> {
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
            let digits = value.serialize(KeySerializer)?;
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

impl<W: Sink> ser::SerializeStructVariant for Streamed<'_, W> {
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

impl<W: Sink> ser::SerializeMap for SortedMap<'_, W> {
    type Ok = ();
    type Error = ConfigVersionError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.key = Some(key.serialize(KeySerializer)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let key = self.key.take().ok_or_else(|| ConfigVersionError::Custom {
            message: "map value serialized before its key".to_owned(),
        })?;
        let mut buf = GoJsonSerializer { out: Vec::new() };
        value.serialize(&mut buf)?;
        self.entries.push((key, buf.out));
        Ok(())
    }

    fn end(mut self) -> Result<()> {
        // Go sorts by the keys' string form, byte-wise; `str` ordering is byte-wise too. The
        // sort is stable, so duplicate keys (impossible in a Go map) keep their order.
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        let out = &mut self.ser.out;
        out.write(b"{");
        for (i, (key, value)) in self.entries.iter().enumerate() {
            if i > 0 {
                out.write(b",");
            }
            write_string(out, key);
            out.write(b":");
            out.write(value);
        }
        out.write(b"}");
        Ok(())
    }
}

/// Renders a map key to its string form, as Go does for the key kinds it allows: strings as
/// they are, integers in decimal. Also accepted (serde_json accepts them): `bool`, `char`,
/// unit enum variants and newtype wrappers of those.
struct KeySerializer;

fn bad_key(kind: &'static str) -> ConfigVersionError {
    ConfigVersionError::UnsupportedMapKey { kind }
}

impl ser::Serializer for KeySerializer {
    type Ok = String;
    type Error = ConfigVersionError;
    type SerializeSeq = ser::Impossible<String, ConfigVersionError>;
    type SerializeTuple = ser::Impossible<String, ConfigVersionError>;
    type SerializeTupleStruct = ser::Impossible<String, ConfigVersionError>;
    type SerializeTupleVariant = ser::Impossible<String, ConfigVersionError>;
    type SerializeMap = ser::Impossible<String, ConfigVersionError>;
    type SerializeStruct = ser::Impossible<String, ConfigVersionError>;
    type SerializeStructVariant = ser::Impossible<String, ConfigVersionError>;

    fn serialize_bool(self, v: bool) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_i8(self, v: i8) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_i16(self, v: i16) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_i32(self, v: i32) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_i64(self, v: i64) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_i128(self, v: i128) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_u8(self, v: u8) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_u16(self, v: u16) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_u32(self, v: u32) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_u64(self, v: u64) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_u128(self, v: u128) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_f32(self, _v: f32) -> Result<String> {
        Err(bad_key("f32"))
    }

    fn serialize_f64(self, _v: f64) -> Result<String> {
        Err(bad_key("f64"))
    }

    fn serialize_char(self, v: char) -> Result<String> {
        Ok(v.to_string())
    }

    fn serialize_str(self, v: &str) -> Result<String> {
        Ok(v.to_owned())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<String> {
        Err(bad_key("bytes"))
    }

    fn serialize_none(self) -> Result<String> {
        Err(bad_key("none"))
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<String> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<String> {
        Err(bad_key("unit"))
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<String> {
        Err(bad_key("unit struct"))
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String> {
        Ok(variant.to_owned())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String> {
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

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<String> {
        Ok(value.to_string())
    }
}
