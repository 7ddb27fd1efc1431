//! Python-style JSON decode error messages (`json.JSONDecodeError` of CPython 3.11), so the
//! fake's 400 bodies for malformed JSON read exactly like AWX's.

/// Returns CPython's error message for `text`, or `None` when CPython would accept it.
///
/// Positions are counted in characters, lines and columns are 1-based, as CPython reports them.
pub(crate) fn python_json_error(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let (msg, pos) = scan(&chars)?;
    let before = &chars[..pos.min(chars.len())];
    let line = before.iter().filter(|c| **c == '\n').count() + 1;
    let col = match before.iter().rposition(|c| *c == '\n') {
        Some(nl) => pos - nl,
        None => pos + 1,
    };
    Some(format!("{msg}: line {line} column {col} (char {pos})"))
}

#[derive(Clone, Copy)]
enum Frame {
    /// Inside an object.
    Object,
    /// Inside an array.
    Array,
}

fn skip_ws(c: &[char], mut i: usize) -> usize {
    while i < c.len() && matches!(c[i], ' ' | '\t' | '\n' | '\r') {
        i += 1;
    }
    i
}

/// Scans a string starting at the opening quote `c[i]`; returns the index after the closing quote.
fn scan_string(c: &[char], start: usize) -> Result<usize, (&'static str, usize)> {
    let mut i = start + 1;
    loop {
        let Some(&ch) = c.get(i) else {
            return Err(("Unterminated string starting at", start));
        };
        match ch {
            '"' => return Ok(i + 1),
            '\\' => {
                let Some(&esc) = c.get(i + 1) else {
                    return Err(("Unterminated string starting at", start));
                };
                match esc {
                    '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' => i += 2,
                    'u' => {
                        let ok =
                            (i + 2..i + 6).all(|j| c.get(j).is_some_and(char::is_ascii_hexdigit));
                        if !ok {
                            return Err(("Invalid \\uXXXX escape", i + 1));
                        }
                        i += 6;
                    }
                    _ => return Err(("Invalid \\escape", i)),
                }
            }
            ch if (ch as u32) < 0x20 => return Err(("Invalid control character at", i)),
            _ => i += 1,
        }
    }
}

/// Scans a scalar (number, literal) at `i`; `None` when no value starts there.
fn scan_scalar(c: &[char], i: usize) -> Option<usize> {
    for lit in ["null", "true", "false", "NaN", "Infinity", "-Infinity"] {
        let l: Vec<char> = lit.chars().collect();
        if c.len() >= i + l.len() && c[i..i + l.len()] == l[..] {
            return Some(i + l.len());
        }
    }
    let mut j = i;
    if c.get(j) == Some(&'-') {
        j += 1;
    }
    match c.get(j) {
        Some('0') => j += 1,
        Some(d) if d.is_ascii_digit() => {
            while c.get(j).is_some_and(char::is_ascii_digit) {
                j += 1;
            }
        }
        _ => return None,
    }
    if c.get(j) == Some(&'.') && c.get(j + 1).is_some_and(char::is_ascii_digit) {
        j += 1;
        while c.get(j).is_some_and(char::is_ascii_digit) {
            j += 1;
        }
    }
    if matches!(c.get(j), Some('e' | 'E')) {
        let mut k = j + 1;
        if matches!(c.get(k), Some('+' | '-')) {
            k += 1;
        }
        if c.get(k).is_some_and(char::is_ascii_digit) {
            while c.get(k).is_some_and(char::is_ascii_digit) {
                k += 1;
            }
            j = k;
        }
    }
    Some(j)
}

/// An object key and its `:` at `i`; returns where the member's value starts.
fn scan_key(c: &[char], i: usize) -> Result<usize, (&'static str, usize)> {
    if c.get(i) != Some(&'"') {
        return Err(("Expecting property name enclosed in double quotes", i));
    }
    let i = skip_ws(c, scan_string(c, i)?);
    if c.get(i) != Some(&':') {
        return Err(("Expecting ':' delimiter", i));
    }
    Ok(skip_ws(c, i + 1))
}

fn scan(c: &[char]) -> Option<(&'static str, usize)> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = skip_ws(c, 0);
    // State machine: expecting a value at `i`.
    'value: loop {
        match c.get(i) {
            Some('{') => {
                i = skip_ws(c, i + 1);
                if c.get(i) == Some(&'}') {
                    i += 1;
                } else {
                    i = match scan_key(c, i) {
                        Ok(n) => n,
                        Err(e) => return Some(e),
                    };
                    stack.push(Frame::Object);
                    continue 'value;
                }
            }
            Some('[') => {
                i = skip_ws(c, i + 1);
                if c.get(i) == Some(&']') {
                    i += 1;
                } else {
                    stack.push(Frame::Array);
                    continue 'value;
                }
            }
            Some('"') => {
                i = match scan_string(c, i) {
                    Ok(n) => n,
                    Err(e) => return Some(e),
                };
            }
            _ => match scan_scalar(c, i) {
                Some(n) => i = n,
                None => return Some(("Expecting value", i)),
            },
        }
        // A value ended at `i`: close containers.
        loop {
            let Some(top) = stack.last().copied() else {
                let end = skip_ws(c, i);
                return (end != c.len()).then_some(("Extra data", end));
            };
            i = skip_ws(c, i);
            match (top, c.get(i)) {
                (Frame::Object, Some('}')) | (Frame::Array, Some(']')) => {
                    stack.pop();
                    i += 1;
                }
                (Frame::Object, Some(',')) => {
                    i = skip_ws(c, i + 1);
                    i = match scan_key(c, i) {
                        Ok(n) => n,
                        Err(e) => return Some(e),
                    };
                    continue 'value;
                }
                (Frame::Array, Some(',')) => {
                    i = skip_ws(c, i + 1);
                    continue 'value;
                }
                _ => return Some(("Expecting ',' delimiter", i)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::python_json_error;

    #[test]
    fn cpython_messages() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "{\"extra_vars\": ",
                Some("Expecting value: line 1 column 16 (char 15)"),
            ),
            (
                r#"{"extra_vars":"#,
                Some("Expecting value: line 1 column 15 (char 14)"),
            ),
            ("", Some("Expecting value: line 1 column 1 (char 0)")),
            (
                "{",
                Some("Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
            ),
            (
                r#"{"a" 1}"#,
                Some("Expecting ':' delimiter: line 1 column 6 (char 5)"),
            ),
            (
                r#"{"a": 1 "b": 2}"#,
                Some("Expecting ',' delimiter: line 1 column 9 (char 8)"),
            ),
            (
                r#"{"a": 1,}"#,
                Some("Expecting property name enclosed in double quotes: line 1 column 9 (char 8)"),
            ),
            ("[1,]", Some("Expecting value: line 1 column 4 (char 3)")),
            ("{}\n x", Some("Extra data: line 2 column 2 (char 4)")),
            (
                r#"{"a": "b"#,
                Some("Unterminated string starting at: line 1 column 7 (char 6)"),
            ),
            (
                r#"{"a": "\q"}"#,
                Some("Invalid \\escape: line 1 column 8 (char 7)"),
            ),
            (r#"{"a": [1, {"b": null}], "c": -1.5e3}"#, None),
            ("  \n {} \n", None),
        ];
        for (input, want) in cases {
            assert_eq!(
                python_json_error(input).as_deref(),
                *want,
                "input {input:?}"
            );
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let deep = "[".repeat(200_000);
        assert!(python_json_error(&deep).is_some());
    }
}
