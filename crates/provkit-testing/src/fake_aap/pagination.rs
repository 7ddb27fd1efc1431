//! AWX page-number pagination: `page`/`page_size` (default 25, cap 200), `count_disabled`,
//! root-relative `next`/`previous` links with sorted query parameters.

use serde_json::Value;

use super::app::Resp;
use super::query::{encode_sorted, parse_query};

/// Default page size.
pub(crate) const DEFAULT_PAGE_SIZE: usize = 25;
/// Maximum page size (`MAX_PAGE_SIZE`).
pub(crate) const MAX_PAGE_SIZE: usize = 200;

/// Requested page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PageReq {
    pub page: usize,
    pub size: usize,
    pub count_disabled: bool,
    /// `page_size` was present and above the cap.
    pub capped: bool,
}

/// Reads `page`, `page_size`, `count_disabled` (`Err` = "Invalid page.").
pub(crate) fn page_request(query: &str) -> Result<PageReq, Resp> {
    let q = parse_query(query);
    let get = |k: &str| {
        q.iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let (size, capped) = match get("page_size").and_then(|v| v.trim().parse::<usize>().ok()) {
        Some(0) | None => (DEFAULT_PAGE_SIZE, false),
        Some(n) if n > MAX_PAGE_SIZE => (MAX_PAGE_SIZE, true),
        Some(n) => (n, false),
    };
    let page = match get("page") {
        None => 1,
        Some("last") => usize::MAX,
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => return Err(invalid_page()),
        },
    };
    let count_disabled =
        get("count_disabled").is_some_and(|v| !matches!(v, "" | "0" | "false" | "False"));
    Ok(PageReq {
        page,
        size,
        count_disabled,
        capped,
    })
}

pub(crate) fn invalid_page() -> Resp {
    Resp::detail(404, "Invalid page.")
}

fn link(path: &str, query: &str, page: usize, req: PageReq) -> String {
    let mut pairs: Vec<(String, String)> = parse_query(query)
        .into_iter()
        .filter(|(k, _)| k != "page")
        .collect();
    if req.capped {
        for p in &mut pairs {
            if p.0 == "page_size" {
                p.1 = MAX_PAGE_SIZE.to_string();
            }
        }
    }
    pairs.push(("page".into(), page.to_string()));
    format!("{path}?{}", encode_sorted(pairs))
}

/// Resolves the page against `count` items: the index range to render, or "Invalid page.".
pub(crate) fn window(req: &mut PageReq, count: usize) -> Result<std::ops::Range<usize>, Resp> {
    let pages = count.div_ceil(req.size).max(1);
    if req.page == usize::MAX {
        req.page = pages;
    }
    if req.page > pages {
        return Err(invalid_page());
    }
    let start = (req.page - 1) * req.size;
    Ok(start..(start + req.size).min(count))
}

/// Builds the envelope for one page of `count` items.
pub(crate) fn envelope(
    path: &str,
    query: &str,
    req: PageReq,
    count: usize,
    results: &[Value],
) -> Resp {
    // Serialised from borrowed parts: a page of 200 rendered jobs is not copied into a second tree.
    #[derive(serde::Serialize)]
    struct Envelope<'a> {
        count: usize,
        next: Option<String>,
        previous: Option<String>,
        results: &'a [Value],
    }
    #[derive(serde::Serialize)]
    struct Results<'a> {
        results: &'a [Value],
    }
    if req.count_disabled {
        return Resp::json(200, &Results { results });
    }
    let pages = count.div_ceil(req.size).max(1);
    let next = (req.page < pages).then(|| link(path, query, req.page + 1, req));
    let previous = (req.page > 1).then(|| link(path, query, req.page - 1, req));
    Resp::json(
        200,
        &Envelope {
            count,
            next,
            previous,
            results,
        },
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn links_are_sorted_and_capped() {
        let mut req = page_request("page_size=500&order_by=id").unwrap();
        assert_eq!(req.size, 200);
        assert_eq!(window(&mut req, 450).unwrap(), 0..200);
        let r = envelope("/api/v2/jobs/", "page_size=500&order_by=id", req, 450, &[]);
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["next"], "/api/v2/jobs/?order_by=id&page=2&page_size=200");
        assert_eq!(v["previous"], Value::Null);
        assert!(page_request("page=0").is_err());
        assert!(page_request("page=abc").is_err());
        let mut req = page_request("page=3&page_size=2").unwrap();
        assert!(window(&mut req, 4).is_err());
        let mut req = page_request("page=1").unwrap();
        assert_eq!(window(&mut req, 0).unwrap(), 0..0);
    }
}
