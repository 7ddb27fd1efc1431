//! Go `encoding/json` formatting of scalars: strings (with HTML escaping), floats and byte
//! slices.

use std::fmt::Write as _;

use super::error::ConfigVersionError;
use super::sink::{FmtSink, Sink};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes `s` as a quoted JSON string exactly as Go's `json.Marshal` does (`escapeHTML` on):
///
/// - `"` and `\` as `\"` and `\\`;
/// - `\b`, `\f`, `\n`, `\r`, `\t` as short escapes (Go ≥ 1.22);
/// - every other byte below 0x20 and `<`, `>`, `&` as `\u00XX` with lower-case hex;
/// - U+2028 and U+2029 as `\u2028` and `\u2029`;
/// - everything else (DEL and all other non-ASCII text included) raw, as UTF-8.
pub(crate) fn write_string<S: Sink + ?Sized>(out: &mut S, s: &str) {
    out.write(b"\"");
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let (escape, len): (Option<&[u8]>, usize) = match b {
            b'"' => (Some(b"\\\""), 1),
            b'\\' => (Some(b"\\\\"), 1),
            0x08 => (Some(b"\\b"), 1),
            0x0c => (Some(b"\\f"), 1),
            b'\n' => (Some(b"\\n"), 1),
            b'\r' => (Some(b"\\r"), 1),
            b'\t' => (Some(b"\\t"), 1),
            // U+2028 / U+2029 are E2 80 A8 / E2 80 A9 in UTF-8.
            0xe2 => match bytes.get(i + 1..i + 3) {
                Some([0x80, 0xa8]) => (Some(b"\\u2028"), 3),
                Some([0x80, 0xa9]) => (Some(b"\\u2029"), 3),
                _ => {
                    i += 1;
                    continue;
                }
            },
            b if b < 0x20 || b == b'<' || b == b'>' || b == b'&' => (None, 1),
            _ => {
                i += 1;
                continue;
            }
        };
        if let Some(run) = bytes.get(start..i) {
            out.write(run);
        }
        match escape {
            Some(e) => out.write(e),
            None => out.write(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
        }
        i += len;
        start = i;
    }
    if let Some(run) = bytes.get(start..) {
        out.write(run);
    }
    out.write(b"\"");
}

/// Writes a float64 as Go's `encoding/json` does: the shortest decimal that round-trips, in
/// plain notation (`1`, `0.5`, `-0`, `100000000000000000000`) unless `|f| < 1e-6` or
/// `|f| >= 1e21`, where it uses exponent notation with a signed exponent and no zero padding
/// (`1e+21`, `1.5e-7`).
pub(crate) fn write_f64<S: Sink + ?Sized>(out: &mut S, f: f64) -> Result<(), ConfigVersionError> {
    if !f.is_finite() {
        return Err(ConfigVersionError::NonFiniteFloat { value: f });
    }
    let abs = f.abs();
    let exponent = abs != 0.0 && !(1e-6..1e21).contains(&abs);
    write_float(out, exponent, format_args!("{f}"), format_args!("{f:e}"));
    Ok(())
}

/// The float32 variant: shortest float32 digits, and the thresholds compared in float32, as Go
/// does for `float32` fields.
pub(crate) fn write_f32<S: Sink + ?Sized>(out: &mut S, f: f32) -> Result<(), ConfigVersionError> {
    if !f.is_finite() {
        return Err(ConfigVersionError::NonFiniteFloat {
            value: f64::from(f),
        });
    }
    let abs = f.abs();
    let exponent = abs != 0.0 && !(1e-6_f32..1e21_f32).contains(&abs);
    write_float(out, exponent, format_args!("{f}"), format_args!("{f:e}"));
    Ok(())
}

fn write_float<S: Sink + ?Sized>(
    out: &mut S,
    exponent: bool,
    plain: std::fmt::Arguments<'_>,
    sci: std::fmt::Arguments<'_>,
) {
    if !exponent {
        // Rust's `Display` for floats is the shortest round-trip digits in plain notation,
        // without a trailing `.0`: the same as Go's `strconv.FormatFloat(f, 'f', -1, bits)`.
        let _ = FmtSink(out).write_fmt(plain);
        return;
    }
    // Rust's `LowerExp` gives the same shortest digits as `1.5e-7` / `1e21`; Go writes the
    // exponent with an explicit sign (`e+21`, `e-7`; encoding/json strips Go's zero padding).
    let mut buf = String::with_capacity(32);
    let _ = buf.write_fmt(sci);
    match buf.split_once('e') {
        Some((mantissa, exp)) => {
            out.write(mantissa.as_bytes());
            out.write(b"e");
            if !exp.starts_with('-') {
                out.write(b"+");
            }
            out.write(exp.as_bytes());
        }
        None => out.write(buf.as_bytes()),
    }
}

/// Writes bytes as Go writes a `[]byte`: a JSON string of standard, padded base64.
pub(crate) fn write_base64<S: Sink + ?Sized>(out: &mut S, bytes: &[u8]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let sym = |n: u32| ALPHABET[(n & 63) as usize];
    out.write(b"\"");
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        let quad = [
            sym(n >> 18),
            sym(n >> 12),
            if chunk.len() > 1 { sym(n >> 6) } else { b'=' },
            if chunk.len() > 2 { sym(n) } else { b'=' },
        ];
        out.write(&quad);
    }
    out.write(b"\"");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> String {
        let mut out = Vec::new();
        write_string(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    fn f(v: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn f32s(v: f32) -> String {
        let mut out = Vec::new();
        write_f32(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn b64(v: &[u8]) -> String {
        let mut out = Vec::new();
        write_base64(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_like_go() {
        let cases: &[(&str, &str)] = &[
            ("", r#""""#),
            ("plain", r#""plain""#),
            ("a<b>c&d", r#""a\u003cb\u003ec\u0026d""#),
            ("q\"b\\s/", r#""q\"b\\s/""#),
            ("\u{8}\u{c}\n\r\t", r#""\b\f\n\r\t""#),
            ("\u{0}\u{1}\u{1f}\u{b}", r#""\u0000\u0001\u001f\u000b""#),
            ("\u{7f}", "\"\u{7f}\""),
            ("\u{2028}x\u{2029}", r#""\u2028x\u2029""#),
            ("\u{2027}\u{202a}", "\"\u{2027}\u{202a}\""),
            ("héllo 世界 🚀", "\"héllo 世界 🚀\""),
        ];
        for (input, want) in cases {
            assert_eq!(s(input), *want, "input {input:?}");
        }
    }

    #[test]
    fn floats_like_go() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (-2.0, "-2"),
            (0.5, "0.5"),
            (0.1, "0.1"),
            (1.5, "1.5"),
            (123_456_789.0, "123456789"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (-1e21, "-1e+21"),
            (1.5e300, "1.5e+300"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (1e-10, "1e-10"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.000_012_3, "0.0000123"),
        ];
        for (input, want) in cases {
            assert_eq!(f(*input), *want, "input {input:?}");
        }
        assert_eq!(f32s(1.0), "1");
        assert_eq!(f32s(0.1), "0.1");
        assert_eq!(f32s(1e21), "1e+21");
        assert_eq!(f32s(1e-7), "1e-7");
        assert_eq!(f32s(3.4028235e38), "3.4028235e+38");
    }

    #[test]
    fn non_finite_floats_are_errors() {
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                write_f64(&mut Vec::new(), v),
                Err(ConfigVersionError::NonFiniteFloat { .. })
            ));
        }
        assert!(write_f32(&mut Vec::new(), f32::NAN).is_err());
    }

    #[test]
    fn base64_like_go() {
        assert_eq!(b64(b""), r#""""#);
        assert_eq!(b64(b"f"), r#""Zg==""#);
        assert_eq!(b64(b"fo"), r#""Zm8=""#);
        assert_eq!(b64(b"foo"), r#""Zm9v""#);
        assert_eq!(b64(b"foobar"), r#""Zm9vYmFy""#);
        assert_eq!(b64(&[0xff, 0xfe, 0xfd]), r#""//79""#);
    }
}
