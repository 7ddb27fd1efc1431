//! Tables for the summaries: AAP requests by endpoint, provider calls, aligned columns.

use provkit_testing::fake_aap::{Endpoint, FakeAap};

use crate::instrumented::{CallStats, Op};

/// The endpoints reported, with labels.
pub const ENDPOINTS: [(Endpoint, &str); 14] = [
    (Endpoint::Root, "API root / discovery"),
    (Endpoint::Ping, "ping"),
    (Endpoint::Me, "me / users / organizations"),
    (Endpoint::TemplateList, "template lookup (list)"),
    (Endpoint::TemplateDetail, "template detail"),
    (Endpoint::LaunchInfo, "GET launch/"),
    (Endpoint::Launch, "POST launch/"),
    (Endpoint::JobList, "job list (idempotency lookup)"),
    (Endpoint::JobDetail, "job detail (poll)"),
    (Endpoint::Cancel, "cancel"),
    (Endpoint::Stdout, "stdout"),
    (Endpoint::WorkflowNodes, "workflow nodes"),
    (Endpoint::Tokens, "tokens"),
    (Endpoint::Other, "other / injected fault answers"),
];

/// A snapshot of the fake's per-endpoint counters (to subtract a probe's requests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointCounts {
    /// Count per entry of [`ENDPOINTS`].
    pub counts: [u64; 14],
    /// Connection resets.
    pub resets: u64,
}

impl EndpointCounts {
    /// Reads the fake's counters now.
    pub fn read(aap: &FakeAap) -> Self {
        let c = aap.counters();
        let mut counts = [0; 14];
        for (i, (e, _)) in ENDPOINTS.iter().enumerate() {
            counts[i] = c.endpoint(*e);
        }
        Self {
            counts,
            resets: c.resets(),
        }
    }

    /// `self - earlier`.
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        let mut counts = [0; 14];
        for (i, c) in counts.iter_mut().enumerate() {
            *c = self.counts[i].saturating_sub(earlier.counts[i]);
        }
        Self {
            counts,
            resets: self.resets.saturating_sub(earlier.resets),
        }
    }

    /// All requests.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Requests to `endpoint`.
    pub fn get(&self, endpoint: Endpoint) -> u64 {
        ENDPOINTS
            .iter()
            .position(|(e, _)| *e == endpoint)
            .map_or(0, |i| self.counts[i])
    }
}

/// A simple aligned table.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    right: Vec<bool>,
}

impl Table {
    /// A table with these column headers; columns whose header starts with `>` are right-aligned.
    pub fn new(header: &[&str]) -> Self {
        Self {
            right: header.iter().map(|h| h.starts_with('>')).collect(),
            header: header
                .iter()
                .map(|h| h.trim_start_matches('>').to_owned())
                .collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders with two-space gaps and a rule under the header.
    pub fn render(&self) -> String {
        let n = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(n) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, w) in widths.iter().enumerate() {
                let cell = cells.get(i).map_or("", String::as_str);
                let pad = w.saturating_sub(cell.chars().count());
                if i > 0 {
                    out.push_str("  ");
                }
                if self.right[i] {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(cell);
                } else {
                    out.push_str(cell);
                    if i + 1 < n {
                        out.push_str(&" ".repeat(pad));
                    }
                }
            }
            out.trim_end().to_owned()
        };
        let mut out = line(&self.header);
        out.push('\n');
        out.push_str(
            &widths
                .iter()
                .map(|w| "-".repeat(*w))
                .collect::<Vec<_>>()
                .join("  "),
        );
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }
}

/// The "AAP requests by endpoint" table (server side, from the fake's counters).
pub fn endpoint_table(counts: &EndpointCounts, resources: usize) -> String {
    let mut t = Table::new(&["AAP endpoint (server side)", ">requests", ">per resource"]);
    for (i, (_, label)) in ENDPOINTS.iter().enumerate() {
        if counts.counts[i] > 0 {
            t.row(vec![
                label.to_string(),
                counts.counts[i].to_string(),
                per(counts.counts[i], resources),
            ]);
        }
    }
    t.row(vec![
        "total".into(),
        counts.total().to_string(),
        per(counts.total(), resources),
    ]);
    if counts.resets > 0 {
        t.row(vec![
            "(connections reset by faults)".into(),
            counts.resets.to_string(),
            String::new(),
        ]);
    }
    t.render()
}

/// The provider-call table (client side, one line per operation; client retries not included).
pub fn call_table(calls: &CallStats, resources: usize) -> String {
    let mut t = Table::new(&[
        "provider call (client side)",
        ">calls",
        ">failed",
        ">per resource",
    ]);
    for op in Op::ALL {
        let n = calls.total(op);
        if n > 0 {
            let label = if op == Op::GetTemplate {
                "GET template (first per name)"
            } else {
                op.label()
            };
            t.row(vec![
                label.to_owned(),
                n.to_string(),
                calls.errors(op).to_string(),
                per(n, resources),
            ]);
        }
    }
    t.render()
}

/// `n / d` with two decimals.
pub fn per(n: u64, d: usize) -> String {
    #[allow(clippy::cast_precision_loss)]
    let v = n as f64 / d.max(1) as f64;
    format!("{v:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let mut t = Table::new(&["name", ">n"]);
        t.row(vec!["a".into(), "1".into()]);
        t.row(vec!["long name".into(), "100".into()]);
        assert_eq!(
            t.render(),
            "name         n\n---------  ---\na            1\nlong name  100\n"
        );
    }
}
