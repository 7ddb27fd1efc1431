//! Go `encoding/json` formatting of scalars: strings (with HTML escaping), floats and byte
//! slices.

use std::fmt::Write as _;

use super::error::ConfigVersionError;
use super::sink::{FmtSink, Sink};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// What [`write_string`] does with each byte: `0` copies it; anything else ends the run of
/// copied bytes (the byte is escaped, or, for 0xE2, may start U+2028/U+2029).
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x0c] = b'f';
    table[b'\n' as usize] = b'n';
    table[b'\r' as usize] = b'r';
    table[b'\t' as usize] = b't';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'<' as usize] = b'u';
    table[b'>' as usize] = b'u';
    table[b'&' as usize] = b'u';
    table[0xe2] = 0xe2;
    table
};

/// Writes `s` as a quoted JSON string exactly as Go's `json.Marshal` does (`escapeHTML` on):
///
/// - `"` and `\` as `\"` and `\\`;
/// - `\b`, `\f`, `\n`, `\r`, `\t` as short escapes (Go ≥ 1.22);
/// - every other byte below 0x20 and `<`, `>`, `&` as `\u00XX` with lower-case hex;
/// - U+2028 and U+2029 as `\u2028` and `\u2029`;
/// - everything else (DEL and all other non-ASCII text included) raw, as UTF-8.
#[inline]
pub(crate) fn write_string<S: Sink + ?Sized>(out: &mut S, s: &str) {
    write_string_bytes(out, s.as_bytes());
}

/// [`write_string`] over the UTF-8 bytes of a string. Runs of bytes that need no escape are
/// written with one call each (the whole string when nothing needs escaping).
pub(crate) fn write_string_bytes<S: Sink + ?Sized>(out: &mut S, bytes: &[u8]) {
    out.write_byte(b'"');
    let mut rest = bytes;
    while let Some(i) = rest.iter().position(|&b| ESCAPE[usize::from(b)] != 0) {
        let (run, tail) = rest.split_at(i);
        out.write(run);
        rest = tail;
        let Some((&b, after)) = rest.split_first() else {
            break;
        };
        rest = after;
        match ESCAPE[usize::from(b)] {
            b'u' => out.write(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
            // U+2028 / U+2029 are E2 80 A8 / E2 80 A9 in UTF-8; any other 0xE2 sequence is
            // copied (its continuation bytes never need escaping).
            0xe2 => match after {
                [0x80, 0xa8, tail @ ..] => {
                    out.write(b"\\u2028");
                    rest = tail;
                }
                [0x80, 0xa9, tail @ ..] => {
                    out.write(b"\\u2029");
                    rest = tail;
                }
                _ => out.write_byte(0xe2),
            },
            short => out.write(&[b'\\', short]),
        }
    }
    out.write(rest);
    out.write_byte(b'"');
}

/// Writes an unsigned integer in decimal, formatted on the stack.
#[inline]
pub(crate) fn write_u64<S: Sink + ?Sized>(out: &mut S, n: u64) {
    let mut buf = [0u8; 20];
    let start = format_u64(&mut buf, n);
    out.write(buf.get(start..).unwrap_or_default());
}

/// Writes a signed integer in decimal, formatted on the stack.
#[inline]
pub(crate) fn write_i64<S: Sink + ?Sized>(out: &mut S, n: i64) {
    if n < 0 {
        out.write_byte(b'-');
    }
    write_u64(out, n.unsigned_abs());
}

/// Writes a `u128` in decimal.
pub(crate) fn write_u128<S: Sink + ?Sized>(out: &mut S, n: u128) {
    match u64::try_from(n) {
        Ok(small) => write_u64(out, small),
        Err(_) => {
            let mut buf = [0u8; 39];
            let mut i = buf.len();
            let mut n = n;
            while let Some(slot) = i.checked_sub(1).and_then(|j| buf.get_mut(j)) {
                *slot = b'0' + (n % 10) as u8;
                i -= 1;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            out.write(buf.get(i..).unwrap_or_default());
        }
    }
}

/// Writes an `i128` in decimal.
pub(crate) fn write_i128<S: Sink + ?Sized>(out: &mut S, n: i128) {
    if n < 0 {
        out.write_byte(b'-');
    }
    write_u128(out, n.unsigned_abs());
}

/// Formats `n` right-aligned into `buf`; returns where the digits start.
#[inline]
fn format_u64(buf: &mut [u8; 20], mut n: u64) -> usize {
    let mut i = buf.len();
    for slot in buf.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        i -= 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    i
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
    fn integers_in_decimal_at_every_width_and_extreme() {
        let w = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut out = Vec::new();
            f(&mut out);
            String::from_utf8(out).unwrap()
        };
        let mut u = vec![0, 1, 9, 10, 99, 100, u64::MAX, u64::MAX - 1];
        u.extend((0..20).map(|e| 10u64.pow(e)));
        u.extend((1..20).map(|e| 10u64.pow(e) - 1));
        for n in u {
            assert_eq!(w(&|o| write_u64(o, n)), n.to_string());
            assert_eq!(w(&|o| write_u128(o, u128::from(n))), n.to_string());
        }
        for n in [0, -1, 1, -10, i64::MIN, i64::MAX, i64::MIN + 1] {
            assert_eq!(w(&|o| write_i64(o, n)), n.to_string());
            assert_eq!(w(&|o| write_i128(o, i128::from(n))), n.to_string());
        }
        for n in [u128::MAX, u128::from(u64::MAX) + 1, 10u128.pow(38)] {
            assert_eq!(w(&|o| write_u128(o, n)), n.to_string());
        }
        for n in [i128::MIN, i128::MAX, -i128::from(u64::MAX) - 1] {
            assert_eq!(w(&|o| write_i128(o, n)), n.to_string());
        }
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
