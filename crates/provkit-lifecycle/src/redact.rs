//! Keeping a launch's secret values out of the text provkit writes: logs, spans, status messages,
//! Events, error texts and `Debug` output.
//!
//! A [`LaunchContext`](crate::LaunchContext) carries secrets (an admin kubeconfig, storage
//! back-end passwords, caller values marked secret) that a provider must send to its backend. The
//! backend may echo them back — AWX repeats a rejected survey value in its validation error, a
//! failed playbook prints the variable it choked on — and those texts flow into provkit's error
//! chains, job messages and Events. A [`Redactor`] replaces every secret in such a text with
//! [`REDACTED`]: the literal value, its JSON/Python string-escaped forms (how a multi-line
//! kubeconfig appears inside a JSON or `repr` echo, once or twice escaped), and a secret cut off by
//! a truncated summary (a prefix of at least [`MIN_TRUNCATED`] characters that ends the text or
//! is followed by an ellipsis). A multi-line secret (a kubeconfig) is also redacted piecewise:
//! each of its [fragments](MIN_FRAGMENT) — a token, a certificate's base64 — wherever it appears
//! alone, since an error quoting one line of the document would otherwise carry its token.
//!
//! Hand-written: substring replacement over a handful of strings; no crate models the echo forms.

use std::borrow::Cow;
use std::fmt;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// The shortest secret prefix redacted where a summary cut the secret off (shorter secrets are
/// redacted only whole).
pub const MIN_TRUNCATED: usize = 8;

/// The shortest fragment of a multi-line secret redacted on its own: a run of at least this many
/// characters between whitespace, quotes or YAML/JSON punctuation (`:`, `,`, brackets) —
/// tokens, keys, certificate data. Shorter runs (`apiVersion`, `v1`, user names) are redacted only
/// as part of the whole secret.
pub const MIN_FRAGMENT: usize = 16;

/// A character that ends a fragment of a multi-line secret.
fn splits_fragments(c: char) -> bool {
    c.is_whitespace() || matches!(c, ':' | '"' | '\'' | ',' | '{' | '}' | '[' | ']')
}

/// The fragments of `secret` redacted on their own (none for a single-line secret).
fn fragments(secret: &str) -> impl Iterator<Item = &str> {
    let multi_line = secret.contains('\n');
    secret
        .split(splits_fragments)
        .filter(move |f| multi_line && f.chars().count() >= MIN_FRAGMENT)
}

/// The secret values of a launch and the scrubbing of texts that may echo them.
///
/// ```
/// use provkit_lifecycle::Redactor;
/// let r = Redactor::new(["s3cr3t-pass", "apiVersion: v1\nusers:\n- token: abc123"]);
/// assert_eq!(r.redact("login failed for s3cr3t-pass"), "login failed for [REDACTED]");
/// // As a JSON string escapes it (newlines as \n):
/// assert_eq!(r.redact(r#"bad value "apiVersion: v1\nusers:\n- token: abc123""#), r#"bad value "[REDACTED]""#);
/// // Cut off by a truncated summary:
/// assert_eq!(r.redact("Value s3cr3t-p…"), "Value [REDACTED]…");
/// assert!(!format!("{r:?}").contains("s3cr3t"));
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Every form of every secret, longest first (so a longer form wins over a shorter one that
    /// starts at the same place).
    forms: Vec<String>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("forms", &self.forms.len())
            .finish()
    }
}

/// `s` as the body of a JSON string literal (without the quotes).
fn json_escaped(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(&quoted)
        .to_owned()
}

impl Redactor {
    /// A redactor for `secrets` (empty strings are ignored).
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Self {
        let mut forms: Vec<String> = Vec::new();
        for secret in secrets {
            let secret = secret.as_ref();
            if secret.is_empty() {
                continue;
            }
            let once = json_escaped(secret);
            let twice = json_escaped(&once);
            let pieces = fragments(secret).map(str::to_owned);
            for form in [secret.to_owned(), once, twice].into_iter().chain(pieces) {
                if !forms.contains(&form) {
                    forms.push(form);
                }
            }
        }
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        Self { forms }
    }

    /// True when there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// The length of the secret form matched at the start of `rest`, if any: a whole form, or a
    /// prefix of at least [`MIN_TRUNCATED`] characters that ends the text or an ellipsis follows.
    fn match_at(&self, rest: &str) -> Option<usize> {
        for form in &self.forms {
            if rest.starts_with(form.as_str()) {
                return Some(form.len());
            }
        }
        for form in &self.forms {
            let common: usize = rest
                .char_indices()
                .zip(form.chars())
                .take_while(|((_, a), b)| a == b)
                .map(|((_, a), _)| a.len_utf8())
                .sum();
            if rest[..common].chars().count() < MIN_TRUNCATED {
                continue;
            }
            let after = &rest[common..];
            if after.is_empty() || after.starts_with('…') || after.starts_with("...") {
                return Some(common);
            }
        }
        None
    }

    /// True when `text` holds a secret (in any of the forms [`redact`](Self::redact) replaces).
    pub fn contains_secret(&self, text: &str) -> bool {
        !self.is_empty() && matches!(self.redact(text), Cow::Owned(_))
    }

    /// `text` with every secret replaced by [`REDACTED`] (borrowed when there was none).
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out: Option<String> = None;
        let mut copied = 0;
        let mut i = 0;
        while i < text.len() {
            if let Some(len) = self.match_at(&text[i..]) {
                let buf = out.get_or_insert_with(String::new);
                buf.push_str(&text[copied..i]);
                buf.push_str(REDACTED);
                i += len;
                copied = i;
                continue;
            }
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        }
        match out {
            None => Cow::Borrowed(text),
            Some(mut buf) => {
                buf.push_str(&text[copied..]);
                Cow::Owned(buf)
            }
        }
    }
}

/// An error whose text was redacted: it stands for the original error and its whole source chain
/// (flattened into one text, since the originals may hold a secret anywhere — in a message, a
/// field, a `Debug` rendering).
#[derive(Clone, PartialEq, Eq)]
pub struct RedactedError {
    text: String,
}

impl RedactedError {
    /// The redacted rendering of `error` and its source chain.
    pub fn of(error: &(dyn std::error::Error + 'static), redactor: &Redactor) -> Self {
        Self {
            text: redactor
                .redact(&crate::ErrorChain(error).to_string())
                .into_owned(),
        }
    }

    /// The redacted text.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for RedactedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for RedactedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedactedError({:?})", self.text)
    }
}

impl std::error::Error for RedactedError {}

/// `status` with its message and error details redacted (what the engine records in a job's
/// message and passes to the failure callback).
pub(crate) fn redact_status(
    mut status: crate::ProvisionStatus,
    redactor: &Redactor,
) -> crate::ProvisionStatus {
    if redactor.is_empty() {
        return status;
    }
    if let Cow::Owned(m) = redactor.redact(&status.message) {
        status.message = m;
    }
    if let Cow::Owned(d) = redactor.redact(&status.error_details) {
        status.error_details = d;
    }
    status
}

/// A poll's answer with the secrets of `redactor` kept out of its texts.
pub(crate) fn redact_polled(
    polled: Result<crate::ProvisionStatus, crate::ProviderError>,
    redactor: &Redactor,
) -> Result<crate::ProvisionStatus, crate::ProviderError> {
    match polled {
        Ok(status) => Ok(redact_status(status, redactor)),
        Err(e) => Err(e.redacted(redactor)),
    }
}

impl crate::ProviderError {
    /// This error with every secret of `redactor` removed from its message and source chain.
    ///
    /// Unchanged (same variant, same typed source chain) when neither its rendered chain nor its
    /// `Debug` output holds a secret; otherwise the variant is kept (the engine's reaction does not
    /// change), its message redacted and its source chain replaced by one [`RedactedError`].
    ///
    /// ```
    /// use provkit_lifecycle::{ErrorChain, ProviderError, Redactor};
    /// let echo = ProviderError::launch_not_made("failed to launch job template", Some("survey: value hunter2-password is too long".into()));
    /// let clean = echo.redacted(&Redactor::new(["hunter2-password"]));
    /// assert_eq!(ErrorChain(&clean).to_string(), "failed to launch job template: survey: value [REDACTED] is too long");
    /// assert!(!format!("{clean:?}").contains("hunter2"));
    /// assert!(matches!(clean, ProviderError::LaunchNotMade { .. }));
    /// ```
    #[must_use]
    pub fn redacted(self, redactor: &Redactor) -> Self {
        if redactor.is_empty() {
            return self;
        }
        let shown = format!("{}\n{self:?}", crate::ErrorChain(&self));
        if !redactor.contains_secret(&shown) {
            return self;
        }
        let text = |s: String| redactor.redact(&s).into_owned();
        let source = |s: Option<crate::BoxError>| -> Option<crate::BoxError> {
            s.map(|s| Box::new(RedactedError::of(&*s, redactor)) as crate::BoxError)
        };
        match self {
            Self::NotFound { what, source: s } => Self::NotFound {
                what: text(what),
                source: source(s),
            },
            Self::LaunchNotMade { message, source: s } => Self::LaunchNotMade {
                message: text(message),
                source: source(s),
            },
            Self::OutcomeUnknown { message, source: s } => Self::OutcomeUnknown {
                message: text(message),
                source: source(s),
            },
            Self::Other { message, source: s } => Self::Other {
                message: text(message),
                source: source(s),
            },
            Self::Unsupported {
                operation,
                provider,
            } => Self::Unsupported {
                operation,
                provider: text(provider),
            },
            other @ Self::RateLimited { .. } => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let r = Redactor::new(["hunter2-password", "line1\nline2\t\"q\"", ""]);
        let cases = [
            ("nothing here", "nothing here"),
            ("pw=hunter2-password;", "pw=[REDACTED];"),
            (
                "twice hunter2-password hunter2-password",
                "twice [REDACTED] [REDACTED]",
            ),
            (r#"json "line1\nline2\t\"q\"""#, r#"json "[REDACTED]""#),
            (
                r#"nested "line1\\nline2\\t\\\"q\\\"""#,
                r#"nested "[REDACTED]""#,
            ),
            ("line1\nline2\t\"q\" raw", "[REDACTED] raw"),
            ("cut hunter2-p…", "cut [REDACTED]…"),
            ("cut hunter2-pass...", "cut [REDACTED]..."),
            ("cut at end hunter2-pa", "cut at end [REDACTED]"),
            // A short common prefix in the middle of a text is not a secret.
            ("hunter2 is a meme", "hunter2 is a meme"),
            ("hunter2-p and more", "hunter2-p and more"),
            ("ünïcödé hunter2-password ✓", "ünïcödé [REDACTED] ✓"),
        ];
        for (text, want) in cases {
            assert_eq!(r.redact(text), want, "{text:?}");
            assert_eq!(r.contains_secret(text), text != want, "{text:?}");
        }
    }

    #[test]
    fn a_multi_line_secret_is_redacted_piecewise_too() {
        let kubeconfig = "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    token: \"kc-T0KEN-5ecret-91f2\"\n    client-key-data: LS0tLS1CRUdJTiBSU0E=\n";
        let r = Redactor::new([kubeconfig, "single-line-password-of-some-length"]);
        let cases = [
            // One line of the document quoted alone: its token still goes.
            (
                "Unauthorized: token kc-T0KEN-5ecret-91f2 rejected",
                "Unauthorized: token [REDACTED] rejected",
            ),
            (
                "bad key LS0tLS1CRUdJTiBSU0E= in line 7",
                "bad key [REDACTED] in line 7",
            ),
            // Short pieces of the document are ordinary words.
            (
                "apiVersion: v1 with kind: Config, name: admin",
                "apiVersion: v1 with kind: Config, name: admin",
            ),
            // A single-line secret is redacted whole only.
            (
                "single-line-password is wrong",
                "single-line-password is wrong",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(r.redact(text), want, "{text:?}");
        }
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;

        /// A secret's characters: lower-case letters and digits (never a piece of the marker),
        /// and the characters JSON escapes.
        const SECRET: &str = "[a-z0-9\n\"\\\\\t ]{1,40}";
        /// Text around it, from characters no secret has.
        const FILLER: &str = "[#%&()*+;<>?@^_|~é]{0,12}";

        /// The forms a secret may be echoed in.
        fn forms(secret: &str) -> [String; 3] {
            let once = json_escaped(secret);
            let twice = json_escaped(&once);
            [secret.to_owned(), once, twice]
        }

        proptest! {
            #[test]
            fn no_form_of_a_secret_survives(
                secret in SECRET,
                parts in prop::collection::vec((FILLER, 0..4usize), 1..6),
            ) {
                let r = Redactor::new([secret.as_str()]);
                let forms = forms(&secret);
                let mut text = String::new();
                for (filler, form) in &parts {
                    text.push_str(filler);
                    if let Some(f) = forms.get(*form) {
                        text.push_str(f);
                    }
                }
                let out = r.redact(&text);
                for f in &forms {
                    prop_assert!(!out.contains(f.as_str()), "{out:?} holds {f:?}");
                }
                prop_assert_eq!(r.contains_secret(&text), parts.iter().any(|(_, f)| *f < 3));
            }

            #[test]
            fn text_without_a_secret_is_left_alone(secret in SECRET, text in FILLER) {
                let r = Redactor::new([secret.as_str()]);
                prop_assert!(matches!(r.redact(&text), Cow::Borrowed(t) if t == text));
            }
        }
    }

    #[test]
    fn empty_redactor_borrows() {
        let r = Redactor::new(Vec::<String>::new());
        assert!(r.is_empty());
        assert!(matches!(r.redact("x"), Cow::Borrowed("x")));
        assert!(!r.contains_secret("x"));
    }

    #[test]
    fn redacted_error_flattens_the_chain() {
        let inner = crate::ProviderError::other("survey: 'pw' value hunter2-password is too small");
        let outer = crate::ProviderError::other_with_source("failed to launch", inner);
        let r = Redactor::new(["hunter2-password"]);
        let e = RedactedError::of(&outer, &r);
        assert_eq!(
            e.text(),
            "failed to launch: survey: 'pw' value [REDACTED] is too small"
        );
        assert!(!format!("{e:?}").contains("hunter2"));
    }
}
