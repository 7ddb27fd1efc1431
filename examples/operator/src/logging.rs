//! Log output: `RUST_LOG` filtering, colours only on a terminal.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Whether to colour log lines written to stdout: only when stdout is a terminal and
/// `NO_COLOR` is unset (log files and `kubectl logs` get plain text).
#[must_use]
pub fn stdout_wants_ansi() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The subscriber `main` installs, writing to `writer`, with ANSI colours iff `ansi`.
pub fn subscriber<W>(writer: W, ansi: bool) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,provkit_kube=debug".into()),
        )
        .with_ansi(ansi)
        .with_writer(writer)
        .finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn log_line(ansi: bool) -> String {
        let buf = Buffer::default();
        let out = buf.clone();
        let sub = subscriber(move || buf.clone(), ansi);
        tracing::subscriber::with_default(sub, || {
            tracing::warn!(object = "ns/a", "reconcile failed");
        });
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn no_escape_codes_unless_asked() {
        let plain = log_line(false);
        assert!(plain.contains("reconcile failed"), "{plain}");
        assert!(!plain.contains('\u{1b}'), "{plain:?}");
        assert!(log_line(true).contains('\u{1b}'), "colour when asked");
    }
}
