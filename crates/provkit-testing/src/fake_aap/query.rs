//! Query-string and path decoding/encoding (form-urlencoded, as Django reads and writes it).

/// Decodes `%XX` escapes (and `+` as space when `plus_is_space`); invalid escapes are kept verbatim.
pub(crate) fn percent_decode(input: &str, plus_is_space: bool) -> String {
    let bytes = input.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 3;
                    }
                    _ => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a raw query string into decoded `(key, value)` pairs, in order.
pub(crate) fn parse_query(raw: &str) -> Vec<(String, String)> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) => (percent_decode(k, true), percent_decode(v, true)),
            None => (percent_decode(pair, true), String::new()),
        })
        .collect()
}

/// Form-urlencodes one component like Python's `urllib.parse.quote_plus`.
pub(crate) fn quote_plus(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' => {
                out.push(b as char);
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Encodes pairs sorted by key (Django's `replace_query_param` output order).
pub(crate) fn encode_sorted(mut pairs: Vec<(String, String)>) -> String {
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", quote_plus(k), quote_plus(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes a named-URL component (reserved characters and `+` → `[+]`).
pub(crate) fn encode_named_url_part(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        match ch {
            '+' => out.push_str("[+]"),
            ';' | '/' | '?' | ':' | '@' | '=' | '&' | '[' | ']' | '%' | ' ' | '#' => {
                let mut buf = [0u8; 4];
                for b in ch.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Decodes one Base64 (standard alphabet, padding optional) string.
pub(crate) fn base64_decode(input: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(input.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in input.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn decode_and_encode() {
        assert_eq!(percent_decode("a%2Bb+c%zz%4", true), "a+b c%zz%4");
        assert_eq!(percent_decode("a+b", false), "a+b");
        assert_eq!(
            parse_query("name=osac+x&page=2&flag"),
            vec![
                ("name".into(), "osac x".into()),
                ("page".into(), "2".into()),
                ("flag".into(), String::new())
            ]
        );
        assert_eq!(
            encode_sorted(vec![
                ("page_size".into(), "2".into()),
                ("order_by".into(), "id".into()),
                ("page".into(), "2".into())
            ]),
            "order_by=id&page=2&page_size=2"
        );
        assert_eq!(quote_plus("a b+c/é"), "a+b%2Bc%2F%C3%A9");
        assert_eq!(encode_named_url_part("a+b c"), "a[+]b%20c");
        assert_eq!(
            base64_decode("YWRtaW46cGFzc3dvcmQ=").unwrap(),
            b"admin:password"
        );
    }
}
