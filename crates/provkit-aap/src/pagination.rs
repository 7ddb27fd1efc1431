//! Following `next` links across pages.

use serde_json::Value;

use crate::client::AapClient;
use crate::error::{Error, Result};

/// Collects every item starting at `first` (a root-relative path).
pub(crate) async fn collect(client: &AapClient, first: String) -> Result<Vec<Value>> {
    let cap = client.max_list_items();
    let mut items = Vec::new();
    let mut next = Some(first);
    while let Some(path) = next.take() {
        match client.page(path.clone()).await {
            Ok((results, following)) => {
                let empty = results.is_empty();
                items.extend(results);
                if items.len() >= cap {
                    tracing::warn!(cap, "list truncated at the configured item cap");
                    items.truncate(cap);
                    break;
                }
                // An empty page with a `next` link would loop forever on a broken server.
                if empty || following.as_deref() == Some(path.as_str()) {
                    break;
                }
                next = following;
            }
            Err(Error::NotFound { detail, .. })
                if detail
                    .as_deref()
                    .is_some_and(|d| d.contains("Invalid page")) =>
            {
                tracing::debug!("pagination ended on \"Invalid page.\"");
                break;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(items)
}
