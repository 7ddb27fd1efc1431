//! Following `next` links across pages.
//!
//! A page whose answer was broken — a body that did not decode, or a `500` (the transport
//! retries only 429, 502, 503, 504, timeouts and resets) — is read again ([`PAGE_REREADS`]
//! times) before the walk gives up: a list page is an idempotent read, and a long walk (an
//! idempotency lookup through thousands of jobs) would otherwise fail whenever any one of its
//! pages did, and start again from the first page.

use serde_json::Value;

use crate::call::Call;
use crate::endpoints::root_relative;
use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::response::RawResponse;
use crate::types::Page;

/// How many more times a page with a broken answer is read before the walk fails.
pub(crate) const PAGE_REREADS: usize = 2;

/// Whether a page's failure is worth reading the page again: an undecodable body (truncated,
/// malformed) or a plain `500`. Not a 502/503/504 (the transport's retry already had them), nor
/// anything carrying `Retry-After` (the server asked for a wait: the engine honours it).
fn reread_worth(err: &Error) -> bool {
    match err {
        Error::Decode { source, .. } => source.is_some(),
        Error::Server {
            ctx, retry_after, ..
        } => retry_after.is_none() && ctx.status == Some(http::StatusCode::INTERNAL_SERVER_ERROR),
        _ => false,
    }
}

/// A list page as JSON trees.
pub(crate) fn decode_value_page(resp: &RawResponse) -> Result<Page> {
    resp.json()
}

impl Inner {
    /// One page of a list endpoint, items decoded by `decode`; the body is dropped on return.
    pub(crate) async fn page<T>(
        &self,
        path: String,
        decode: fn(&RawResponse) -> Result<Page<T>>,
    ) -> Result<(Vec<T>, Option<String>)> {
        let resp = self.send(&Call::get(path, self.max_body_bytes)).await?;
        let page = decode(&resp)?;
        let next = match page.next.as_deref() {
            None | Some("") => None,
            Some(link) => Some(
                root_relative(&self.origin, link).ok_or_else(|| Error::Decode {
                    ctx: Box::new(resp.ctx.clone()),
                    message: format!("`next` link {link:?} leaves this host; not followed"),
                    source: None,
                })?,
            ),
        };
        Ok((page.results, next))
    }
}

/// One page at `path`, read again (up to [`PAGE_REREADS`] times) while its answer is broken.
pub(crate) async fn read_page<T>(
    client: &Inner,
    path: String,
    decode: fn(&RawResponse) -> Result<Page<T>>,
) -> Result<(Vec<T>, Option<String>)> {
    let mut read = client.page(path.clone(), decode).await;
    for _ in 0..PAGE_REREADS {
        match &read {
            Err(err) if reread_worth(err) => {
                tracing::debug!(error = %err, "list page answer broken; reading it again");
                read = client.page(path.clone(), decode).await;
            }
            _ => break,
        }
    }
    read
}

/// Collects every item starting at `first` (a root-relative path).
pub(crate) async fn collect(client: &Inner, first: String) -> Result<Vec<Value>> {
    let mut items = Vec::new();
    walk(
        client,
        first,
        client.max_list_items,
        decode_value_page,
        |page| {
            items.extend(page);
            Step::More
        },
    )
    .await?;
    Ok(items)
}

/// Pages from `first` (each page decoded by `decode`) until `hit` maps an item to `Some`
/// (returned) or the pages run out (`None`: provably no match). Each page is dropped before the
/// next is fetched. Reaching the configured item cap without a match is
/// [`Error::ListIncomplete`]: the absence of a match is not proven.
/// `pages` counts the pages read (answered whole). With `budget`, the walk stops after that
/// many pages when more follow: [`Error::LookupUnfinished`] (the caller keeps what was read).
pub(crate) async fn find_first<T, R>(
    client: &Inner,
    first: String,
    decode: fn(&RawResponse) -> Result<Page<T>>,
    pages: &mut u32,
    budget: Option<u32>,
    mut hit: impl FnMut(T) -> Option<R>,
) -> Result<Option<R>> {
    let mut found = None;
    let mut read = 0u32;
    let first_path = first.clone();
    let end = walk(client, first, client.max_lookup_items, decode, |page| {
        *pages = pages.saturating_add(1);
        read += 1;
        found = page.into_iter().find_map(&mut hit);
        if found.is_some() {
            Step::Take
        } else if budget.is_some_and(|b| read >= b) {
            Step::Pause
        } else {
            Step::More
        }
    })
    .await?;
    let ctx = || {
        Box::new(crate::error::RequestContext::new(
            http::Method::GET,
            first_path,
        ))
    };
    match (found, end) {
        (Some(found), _) => Ok(Some(found)),
        (None, End::Capped(cap)) => Err(Error::ListIncomplete { ctx: ctx(), cap }),
        (None, End::Paused) => Err(Error::LookupUnfinished {
            ctx: ctx(),
            pages: read,
        }),
        (None, End::Exhausted | End::Taken) => Ok(None),
    }
}

/// What a walk's `take` wants after a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Done (a match).
    Take,
    /// The next page, if any.
    More,
    /// Stop here if more pages follow.
    Pause,
}

/// How a walk over the pages ended.
enum End {
    /// `take` answered [`Step::Take`].
    Taken,
    /// `take` asked to stop while more pages followed.
    Paused,
    /// No more pages (`next` is null, an empty page, or a later page answered "Invalid page.").
    Exhausted,
    /// The item cap was reached first.
    Capped(usize),
}

/// Follows `next` links from `first`, handing each page to `take` until it answers `true`.
/// A first page answering "Invalid page." is an error; on a later page it ends the walk (the
/// list shrank while it was read).
async fn walk<T>(
    client: &Inner,
    first: String,
    cap: usize,
    decode: fn(&RawResponse) -> Result<Page<T>>,
    mut take: impl FnMut(Vec<T>) -> Step,
) -> Result<End> {
    let mut seen = 0usize;
    let mut next = Some(first);
    let mut first_page = true;
    while let Some(path) = next.take() {
        let is_first = std::mem::replace(&mut first_page, false);
        match read_page(client, path.clone(), decode).await {
            Ok((mut results, following)) => {
                let empty = results.is_empty();
                let room = cap.saturating_sub(seen);
                let capped = results.len() >= room;
                if capped {
                    results.truncate(room);
                }
                seen += results.len();
                let step = take(results);
                if step == Step::Take {
                    return Ok(End::Taken);
                }
                if capped {
                    tracing::warn!(cap, "list truncated at the configured item cap");
                    return Ok(End::Capped(cap));
                }
                // An empty page with a `next` link would loop forever on a broken server.
                if empty || following.as_deref() == Some(path.as_str()) {
                    break;
                }
                if step == Step::Pause && following.is_some() {
                    return Ok(End::Paused);
                }
                next = following;
            }
            Err(Error::NotFound { detail, .. })
                if !is_first
                    && detail
                        .as_deref()
                        .is_some_and(|d| d.contains("Invalid page")) =>
            {
                tracing::debug!("pagination ended on \"Invalid page.\"");
                break;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(End::Exhausted)
}
