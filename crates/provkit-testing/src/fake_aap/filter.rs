//! List filtering (`field[__lookup]=value`, `not__`/`or__` prefixes), `search`, `type` and
//! `order_by`, as DAB rest_filters applies them.

use std::cmp::Ordering;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use super::app::Resp;
use super::query::parse_query;

/// A field value of a listed object.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum FVal {
    Int(i64),
    Str(String),
    Time(DateTime<Utc>),
    Bool(bool),
    Null,
}

impl FVal {
    fn cmp_key(&self, other: &FVal) -> Ordering {
        match (self, other) {
            (FVal::Null, FVal::Null) => Ordering::Equal,
            (FVal::Null, _) => Ordering::Less,
            (_, FVal::Null) => Ordering::Greater,
            (FVal::Int(a), FVal::Int(b)) => a.cmp(b),
            (FVal::Str(a), FVal::Str(b)) => a.cmp(b),
            (FVal::Time(a), FVal::Time(b)) => a.cmp(b),
            (FVal::Bool(a), FVal::Bool(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }
}

const RESERVED: &[&str] = &[
    "page",
    "page_size",
    "format",
    "order",
    "order_by",
    "search",
    "type",
    "host_filter",
    "count_disabled",
    "no_truncate",
    "limit",
    "validate",
];

const LOOKUPS: &[&str] = &[
    "exact",
    "iexact",
    "contains",
    "icontains",
    "startswith",
    "istartswith",
    "endswith",
    "iendswith",
    "regex",
    "iregex",
    "gt",
    "gte",
    "lt",
    "lte",
    "in",
    "isnull",
];

/// One parsed filter term.
#[derive(Clone, Debug)]
pub(crate) struct Term {
    negate: bool,
    or: bool,
    pub field: String,
    lookup: String,
    raw: String,
}

/// Parsed list query.
#[derive(Clone, Debug, Default)]
pub(crate) struct ListQuery {
    pub terms: Vec<Term>,
    pub order: Vec<(String, bool)>,
    pub types: Option<Vec<String>>,
    pub search: Option<String>,
}

fn bad(detail: &str) -> Resp {
    Resp::detail(400, detail)
}

/// Parses the query; `known(field)` says whether a field exists on the listed objects.
///
/// `model` names the listed model in errors (`Job has no field named 'x'`, as AWX says).
pub(crate) fn parse_list_query(
    query: &str,
    model: &str,
    known: &dyn Fn(&str) -> bool,
) -> Result<ListQuery, Resp> {
    let mut out = ListQuery::default();
    for (key, value) in parse_query(query) {
        match key.as_str() {
            "order_by" | "order" => {
                for part in value.split(',').filter(|p| !p.is_empty()) {
                    let (desc, f) = part.strip_prefix('-').map_or((false, part), |f| (true, f));
                    if !known(f) {
                        return Err(bad(&format!("Invalid field name: {f}")));
                    }
                    out.order.push((f.to_owned(), desc));
                }
                continue;
            }
            "type" => {
                out.types = Some(value.split(',').map(str::to_owned).collect());
                continue;
            }
            "search" => {
                out.search = Some(value);
                continue;
            }
            k if RESERVED.contains(&k) => continue,
            _ => {}
        }
        let mut k = key.as_str();
        let mut negate = false;
        let mut or = false;
        loop {
            if let Some(rest) = k.strip_prefix("not__") {
                negate = true;
                k = rest;
            } else if let Some(rest) = k.strip_prefix("or__") {
                or = true;
                k = rest;
            } else if let Some(rest) = k.strip_prefix("chain__") {
                k = rest;
            } else {
                break;
            }
        }
        let (field, lookup) = match k.rsplit_once("__") {
            Some((f, l)) if LOOKUPS.contains(&l) => (f, l),
            _ => (k, "exact"),
        };
        // 403 with production settings (§13.3; development settings answered 400).
        if field == "extra_vars" || field.starts_with("extra_vars__") {
            return Err(Resp::detail(403, "Filtering on extra_vars is not allowed."));
        }
        if field.contains("password") || field.starts_with("token") {
            return Err(bad(&format!("Filtering on {field} is not allowed.")));
        }
        if !known(field) {
            let first = field.split("__").next().unwrap_or(field);
            return Err(bad(&format!("{model} has no field named '{first}'")));
        }
        if matches!(lookup, "regex" | "iregex") {
            return Err(bad(&format!(
                "Lookup {lookup} is not supported by this fake server."
            )));
        }
        out.terms.push(Term {
            negate,
            or,
            field: field.to_owned(),
            lookup: lookup.to_owned(),
            raw: value,
        });
    }
    Ok(out)
}

fn parse_time(raw: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(raw.trim()) {
        return Some(t.with_timezone(&Utc));
    }
    let s = raw.trim().trim_end_matches('Z');
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(t.and_utc());
        }
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

fn parse_bool(raw: &str) -> Option<bool> {
    match raw {
        "true" | "True" | "1" => Some(true),
        "false" | "False" | "0" => Some(false),
        _ => None,
    }
}

fn convert(field: &str, sample: &FVal, raw: &str) -> Result<FVal, Resp> {
    match sample {
        FVal::Int(_) => raw
            .trim()
            .parse::<i64>()
            .map(FVal::Int)
            .map_err(|_| bad(&format!("Field '{field}' expected a number but got '{raw}'."))),
        // AWX puts Django's ValidationError list into `detail` as a JSON-encoded string.
        FVal::Time(_) => parse_time(raw).map(FVal::Time).ok_or_else(|| {
            let message = format!(
                "“{raw}” value has an invalid format. It must be in YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ] format."
            );
            bad(&serde_json::to_string(&[message]).unwrap_or_default())
        }),
        FVal::Bool(_) => parse_bool(raw)
            .map(FVal::Bool)
            .ok_or_else(|| bad(&format!("“{raw}” value must be either True or False."))),
        FVal::Str(_) | FVal::Null => Ok(FVal::Str(raw.to_owned())),
    }
}

/// Evaluates one term against a value (`kind` is a sample of the field's type when `value` is null).
pub(crate) fn term_matches(term: &Term, value: &FVal, kind: &FVal) -> Result<bool, Resp> {
    let sample = if *value == FVal::Null { kind } else { value };
    let hit = match term.lookup.as_str() {
        "isnull" => {
            let want = parse_bool(&term.raw).ok_or_else(|| {
                bad(&format!(
                    "“{}” value must be either True or False.",
                    term.raw
                ))
            })?;
            (*value == FVal::Null) == want
        }
        "in" => {
            let mut any = false;
            for part in term.raw.split(',') {
                if convert(&term.field, sample, part)? == *value {
                    any = true;
                }
            }
            any
        }
        lookup => {
            let want = convert(&term.field, sample, &term.raw)?;
            if *value == FVal::Null {
                false
            } else if let Some(hit) = ordered_lookup(lookup, value, &want) {
                hit
            } else {
                let text = |v: &FVal| match v {
                    FVal::Str(s) => s.clone(),
                    FVal::Int(i) => i.to_string(),
                    FVal::Bool(b) => b.to_string(),
                    FVal::Time(t) => t.to_rfc3339(),
                    FVal::Null => String::new(),
                };
                let (a, b) = (text(value), text(&want));
                let (al, bl) = (a.to_lowercase(), b.to_lowercase());
                match lookup {
                    "iexact" => al == bl,
                    "contains" => a.contains(&b),
                    "icontains" => al.contains(&bl),
                    "startswith" => a.starts_with(&b),
                    "istartswith" => al.starts_with(&bl),
                    "endswith" => a.ends_with(&b),
                    "iendswith" => al.ends_with(&bl),
                    _ => false,
                }
            }
        }
    };
    Ok(hit != term.negate)
}

/// The lookups that compare typed values (`exact`, `gt`, `gte`, `lt`, `lte`), answered without
/// rendering either side as text; `None` for the text lookups.
fn ordered_lookup(lookup: &str, value: &FVal, want: &FVal) -> Option<bool> {
    Some(match lookup {
        "exact" => value == want,
        "gt" => value.cmp_key(want) == Ordering::Greater,
        "gte" => value.cmp_key(want) != Ordering::Less,
        "lt" => value.cmp_key(want) == Ordering::Less,
        "lte" => value.cmp_key(want) != Ordering::Greater,
        _ => return None,
    })
}

impl Term {
    /// The integer a leading plain `field=<int>` term asks for: set only for an AND term without
    /// `not__` whose lookup is `exact` and whose value parses as an integer. A list may use it to
    /// skip, before evaluating anything else, the rows this term would reject first anyway.
    /// `(t, inclusive)` of a plain AND `created__gt=t` / `created__gte=t` term.
    pub(crate) fn plain_created_after(&self) -> Option<(DateTime<Utc>, bool)> {
        if self.negate || self.or || self.field != "created" {
            return None;
        }
        let inclusive = match self.lookup.as_str() {
            "gt" => false,
            "gte" => true,
            _ => return None,
        };
        parse_time(&self.raw).map(|t| (t, inclusive))
    }

    pub(crate) fn plain_int_exact(&self) -> Option<i64> {
        if self.negate || self.or || self.lookup != "exact" {
            return None;
        }
        self.raw.trim().parse::<i64>().ok()
    }
}

/// Applies all terms to one object: every AND term must match; if OR terms exist, one must.
pub(crate) fn row_matches(
    q: &ListQuery,
    get: &mut dyn FnMut(&str) -> (FVal, FVal),
) -> Result<bool, Resp> {
    let mut any_or = false;
    let mut or_hit = false;
    for term in &q.terms {
        let (value, kind) = get(&term.field);
        let hit = term_matches(term, &value, &kind)?;
        if term.or {
            any_or = true;
            or_hit |= hit;
        } else if !hit {
            return Ok(false);
        }
    }
    Ok(!any_or || or_hit)
}

/// Compares two rows by `order` keys.
pub(crate) fn compare(order: &[(String, bool)], a: &[FVal], b: &[FVal]) -> Ordering {
    for (i, (_, desc)) in order.iter().enumerate() {
        let (x, y) = (
            a.get(i).unwrap_or(&FVal::Null),
            b.get(i).unwrap_or(&FVal::Null),
        );
        let o = x.cmp_key(y);
        let o = if *desc { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_and_matches() {
        let known = |f: &str| matches!(f, "id" | "name" | "status" | "created");
        let q = parse_list_query(
            "name__icontains=OSAC&not__status=error&order_by=-id&page=2",
            "Job",
            &known,
        )
        .unwrap();
        assert_eq!(q.terms.len(), 2);
        assert_eq!(q.order, vec![("id".to_owned(), true)]);
        let mut row = |f: &str| match f {
            "name" => (FVal::Str("osac-x".into()), FVal::Str(String::new())),
            _ => (FVal::Str("pending".into()), FVal::Str(String::new())),
        };
        assert!(row_matches(&q, &mut row).unwrap());
        assert!(parse_list_query("extra_vars__icontains=x", "Job", &known).is_err());
        assert!(parse_list_query("bogus=1", "Job", &known).is_err());
        let q = parse_list_query("id__in=1,3", "Job", &known).unwrap();
        assert!(row_matches(&q, &mut |_| (FVal::Int(3), FVal::Int(0))).unwrap());
        assert!(!row_matches(&q, &mut |_| (FVal::Int(2), FVal::Int(0))).unwrap());
        let q = parse_list_query("id=abc", "Job", &known).unwrap();
        assert!(row_matches(&q, &mut |_| (FVal::Int(3), FVal::Int(0))).is_err());
    }
}
