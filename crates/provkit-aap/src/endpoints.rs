//! Building request paths: trailing slashes, percent-encoded segments and queries, named URLs.
//!
//! Every path this crate sends ends with `/` before the query string (AWX answers a slashless URL
//! with a 301, which HTTP clients re-issue as a `GET`: a launch would silently start nothing).
//! Path segments and query keys/values are percent-encoded so that names with spaces, `+`, `&`, `/`,
//! `#` or non-ASCII characters reach the server intact.

use std::fmt::Write as _;

/// Percent-encodes everything except the RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`).
///
/// ```
/// use provkit_aap::endpoints::encode_component;
/// assert_eq!(encode_component("a b+c&d/e#f"), "a%20b%2Bc%26d%2Fe%23f");
/// assert_eq!(encode_component("é"), "%C3%A9");
/// ```
pub fn encode_component(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// Builds `<base><seg1>/<seg2>/…/?k=v&…` with a trailing slash before the query.
///
/// `base` is an API root such as `/api/v2/` (it must start and end with `/`); segments are
/// percent-encoded one by one, so a segment can never introduce a new path level.
///
/// ```
/// use provkit_aap::endpoints::api_path;
/// assert_eq!(api_path("/api/v2/", &["jobs", "42"], &[]), "/api/v2/jobs/42/");
/// assert_eq!(
///     api_path("/api/controller/v2/", &["unified_job_templates"], &[("name", "a b+c")]),
///     "/api/controller/v2/unified_job_templates/?name=a%20b%2Bc"
/// );
/// ```
pub fn api_path(base: &str, segments: &[&str], query: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(base.len() + 32);
    out.push_str(base);
    if !out.ends_with('/') {
        out.push('/');
    }
    for segment in segments {
        out.push_str(&encode_component(segment));
        out.push('/');
    }
    out.push_str(&encode_query(query));
    out
}

/// Encodes a query string, including the leading `?`; empty for no pairs.
pub fn encode_query(query: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (index, (key, value)) in query.iter().enumerate() {
        out.push(if index == 0 { '?' } else { '&' });
        out.push_str(&encode_component(key));
        out.push('=');
        out.push_str(&encode_component(value));
    }
    out
}

/// The named-URL path segment AWX accepts for job templates and workflow job templates:
/// `<name>++<organization>`.
///
/// A literal `+` is written `[+]` (AWX's convention), then the reserved characters are
/// percent-encoded (so `[`/`]` become `%5B`/`%5D`, which the server decodes before matching).
///
/// ```
/// use provkit_aap::endpoints::named_url_segment;
/// assert_eq!(named_url_segment("deploy", "Default"), "deploy%2B%2BDefault");
/// assert_eq!(named_url_segment("a+b", "org"), "a%5B%2B%5Db%2B%2Borg");
/// ```
pub fn named_url_segment(name: &str, organization: &str) -> String {
    let escape = |s: &str| s.replace('+', "[+]");
    encode_component(&format!("{}++{}", escape(name), escape(organization)))
}

/// Joins a root-relative link (`url`, `related.*`, `next`) with the configured origin.
///
/// Links are joined with the scheme, host and port only — never with the API base path, which
/// would double `/api/v2/`. An absolute link is accepted only when it points at the same origin;
/// its path and query are kept (the token is never sent to another host).
///
/// Returns the root-relative path and query to request, or `None` if the link leaves the origin or
/// is not a path.
///
/// ```
/// use provkit_aap::endpoints::root_relative;
/// assert_eq!(root_relative("https://aap.example.com", "/api/v2/jobs/?page=2").as_deref(), Some("/api/v2/jobs/?page=2"));
/// assert_eq!(root_relative("https://aap.example.com", "https://aap.example.com/api/v2/jobs/").as_deref(), Some("/api/v2/jobs/"));
/// assert_eq!(root_relative("https://aap.example.com", "https://evil.example/api/v2/"), None);
/// ```
pub fn root_relative(origin: &str, link: &str) -> Option<String> {
    if link.starts_with('/') && !link.starts_with("//") {
        return Some(link.to_owned());
    }
    let origin = origin.trim_end_matches('/');
    let rest = link.strip_prefix(origin)?;
    if rest.is_empty() {
        return Some("/".to_owned());
    }
    rest.starts_with('/').then(|| rest.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_component_vectors() {
        let cases = [
            ("plain-name_1.0~x", "plain-name_1.0~x"),
            ("with space", "with%20space"),
            ("a+b", "a%2Bb"),
            ("a&b=c", "a%26b%3Dc"),
            ("a/b", "a%2Fb"),
            ("a#b?c", "a%23b%3Fc"),
            ("ünïcødé", "%C3%BCn%C3%AFc%C3%B8d%C3%A9"),
            ("%", "%25"),
            ("", ""),
        ];
        for (raw, want) in cases {
            assert_eq!(encode_component(raw), want, "{raw:?}");
        }
    }

    type PathCase<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

    #[test]
    fn paths_always_end_with_slash_before_query() {
        let cases: &[PathCase<'_>] = &[
            ("/api/v2/", &["ping"], &[], "/api/v2/ping/"),
            (
                "/api/v2",
                &["jobs", "7", "cancel"],
                &[],
                "/api/v2/jobs/7/cancel/",
            ),
            (
                "/api/controller/v2/",
                &["jobs"],
                &[
                    ("job_template", "9"),
                    ("created__gt", "2026-11-29T12:00:00Z"),
                ],
                "/api/controller/v2/jobs/?job_template=9&created__gt=2026-11-29T12%3A00%3A00Z",
            ),
            (
                "/api/v2/",
                &["job_templates", "a/b"],
                &[],
                "/api/v2/job_templates/a%2Fb/",
            ),
        ];
        for (base, segments, query, want) in cases {
            let got = api_path(base, segments, query);
            assert_eq!(&got, want);
            let path_part = got.split('?').next().unwrap_or_default();
            assert!(path_part.ends_with('/'), "{got}");
        }
    }

    #[test]
    fn segments_cannot_escape_their_level() {
        let got = api_path("/api/v2/", &["jobs", "../../gateway/v1/tokens"], &[]);
        assert_eq!(got, "/api/v2/jobs/..%2F..%2Fgateway%2Fv1%2Ftokens/");
    }

    #[test]
    fn root_relative_joins_with_host_only() {
        assert_eq!(
            root_relative("http://127.0.0.1:8080/", "/api/controller/v2/jobs/14/").as_deref(),
            Some("/api/controller/v2/jobs/14/")
        );
        assert_eq!(root_relative("http://h", "//other/x"), None);
        assert_eq!(root_relative("http://h", "jobs/1/"), None);
        assert_eq!(root_relative("http://h", "http://h.evil/x"), None);
    }

    proptest::proptest! {
        #[test]
        fn encoded_components_round_trip(raw in "\\PC*") {
            let encoded = encode_component(&raw);
            proptest::prop_assert!(encoded.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)));
            let decoded = percent_decode(&encoded);
            proptest::prop_assert_eq!(decoded, raw);
        }
    }

    fn percent_decode(s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    }
}
