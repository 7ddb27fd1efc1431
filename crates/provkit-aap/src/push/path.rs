//! The websocket's path for an API root.

/// The websocket path that belongs to an API base path, or `None` for a root whose websocket
/// location is unknown.
///
/// Observed on AWX (daphne serves it, not the API server): `/websocket/` (and `/api/websocket/`)
/// beside `/api/v2/`, and `/api/controller/v2/websocket/` when the controller URL prefix is in
/// use; `/api/v2/websocket/` does not exist. A path prefix in front of `/api/` (a reverse proxy)
/// is kept. Behind an AAP 2.5+ gateway the controller's root is `/api/controller/v2/`, so the
/// websocket is taken to be `/api/controller/v2/websocket/`: that path was observed on AWX
/// itself with the prefix setting, **not** through a real gateway's proxy.
///
/// ```
/// use provkit_aap::push::websocket_path;
/// assert_eq!(websocket_path("/api/v2/").as_deref(), Some("/websocket/"));
/// assert_eq!(
///     websocket_path("/api/controller/v2/").as_deref(),
///     Some("/api/controller/v2/websocket/")
/// );
/// assert_eq!(websocket_path("/awx/api/v2/").as_deref(), Some("/awx/websocket/"));
/// assert_eq!(websocket_path("/custom/"), None);
/// ```
pub fn websocket_path(api_base: &str) -> Option<String> {
    let base = api_base.trim_end_matches('/');
    if let Some(prefix) = base.strip_suffix("/api/controller/v2") {
        return Some(format!("{prefix}/api/controller/v2/websocket/"));
    }
    let prefix = base.strip_suffix("/api/v2")?;
    Some(format!("{prefix}/websocket/"))
}

#[cfg(test)]
mod tests {
    use super::websocket_path;

    #[test]
    fn paths_follow_the_api_root_as_observed() {
        let table = [
            ("/api/v2/", Some("/websocket/")),
            ("/api/v2", Some("/websocket/")),
            ("/api/controller/v2/", Some("/api/controller/v2/websocket/")),
            (
                "/proxy/api/controller/v2/",
                Some("/proxy/api/controller/v2/websocket/"),
            ),
            ("/proxy/api/v2/", Some("/proxy/websocket/")),
            ("/api/v3/", None),
            ("/", None),
        ];
        for (base, expected) in table {
            assert_eq!(websocket_path(base).as_deref(), expected, "{base}");
        }
    }
}
