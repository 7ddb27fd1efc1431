//! Personal access tokens: `POST /api/gateway/v1/tokens/` (gateway), `POST /api/v2/tokens/` and
//! `/api/v2/users/<id|username>/personal_tokens/` (AWX), listing and `DELETE …/<id>/`.

use serde_json::{Value, json};

use super::super::app::{App, Ctx, Resp, UNAUTHENTICATED};
use super::super::ovalue::{OValue, omap_get};
use super::super::render::ts;
use super::super::spec::Scope;
use super::super::state::{State, Token};
use super::launch::parse_body;
use super::lists::paginate_values;

fn token_json(st: &State, t: &Token, prefix: &str, reveal: bool) -> Value {
    let gateway = prefix.starts_with("/api/gateway/");
    let hidden = if gateway {
        "$encrypted$"
    } else {
        "************"
    };
    let user = st.user(t.user_id);
    let mut v = json!({
        "id": t.id,
        "type": "o_auth2_access_token",
        "url": format!("{prefix}tokens/{}/", t.id),
        "related": {"user": format!("{prefix}users/{}/", t.user_id), "activity_stream": format!("{prefix}tokens/{}/activity_stream/", t.id)},
        "summary_fields": {"user": user.map(|u| json!({"id": u.id, "username": u.username, "first_name": "", "last_name": ""})),
                           "application": Value::Null},
        "created": ts(t.created),
        "modified": ts(t.created),
        "description": t.description,
        "user": t.user_id,
        "token": if reveal { t.token.clone() } else { hidden.to_owned() },
        "refresh_token": Value::Null,
        "application": Value::Null,
        "expires": ts(t.expires),
        "scope": t.scope.as_str(),
    });
    if gateway {
        v["last_used"] = Value::Null;
    }
    v
}

/// Token list / create.
pub(crate) fn tokens(app: &App, ctx: &Ctx<'_>, prefix: &str, for_user: Option<&String>) -> Resp {
    let Some(caller) = &ctx.caller else {
        return Resp::detail(401, UNAUTHENTICATED);
    };
    let mut st = app.lock();
    if let Some(u) = for_user {
        let target = st
            .users
            .iter()
            .find(|x| x.username == *u || x.id.to_string() == *u)
            .map(|x| x.id);
        match target {
            Some(id) if id == caller.user.id || caller.user.is_superuser => {}
            Some(_) => return Resp::detail(403, super::super::app::FORBIDDEN),
            None => return Resp::detail(404, "Not found."),
        }
    }
    if ctx.method == "GET" {
        let mut mine: Vec<&Token> = st
            .tokens
            .values()
            .filter(|t| t.user_id == caller.user.id)
            .collect();
        mine.sort_by_key(|t| t.id);
        let v = mine
            .iter()
            .map(|t| token_json(&st, t, prefix, false))
            .collect();
        drop(st);
        return paginate_values(ctx, v);
    }
    let body = match parse_body(ctx) {
        Ok(b) => b,
        Err(e) => return e,
    };
    let scope = match omap_get(&body, "scope") {
        None => Scope::Write,
        Some(OValue::String(s)) if s == "write" => Scope::Write,
        Some(OValue::String(s)) if s == "read" => Scope::Read,
        Some(other) => {
            return Resp::json(
                400,
                &json!({"scope": [format!("Invalid scope: {}. Must be a simple space-separated string with allowed scopes ['read', 'write'].", other.py_str())]}),
            );
        }
    };
    if matches!(omap_get(&body, "application"), Some(v) if *v != OValue::Null) {
        return Resp::json(
            400,
            &json!({"application": ["Invalid pk - object does not exist."]}),
        );
    }
    let description = match omap_get(&body, "description") {
        Some(OValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let secret: String = (0..30).map(|_| st.rng.alphanumeric()).collect();
    let id = st.next_token_id;
    st.next_token_id += 1;
    let gateway = prefix.starts_with("/api/gateway/");
    let lifetime = if gateway {
        chrono::TimeDelta::from_std(st.settings.gateway_token_lifetime)
            .unwrap_or(chrono::TimeDelta::days(365_000))
    } else {
        chrono::TimeDelta::days(365_000)
    };
    let token = Token {
        id,
        token: secret.clone(),
        user_id: caller.user.id,
        scope,
        expires: ctx.now + lifetime,
        description,
        created: ctx.now,
        controller_issued: !gateway,
    };
    let v = token_json(&st, &token, prefix, true);
    st.tokens.insert(secret, token);
    Resp::json(201, &v).header("location", format!("{prefix}tokens/{id}/"))
}

/// Token detail / delete.
pub(crate) fn token_detail(app: &App, ctx: &Ctx<'_>, prefix: &str, id: u64) -> Resp {
    let Some(caller) = &ctx.caller else {
        return Resp::detail(401, UNAUTHENTICATED);
    };
    let mut st = app.lock();
    let key = st
        .tokens
        .values()
        .find(|t| t.id == id && (t.user_id == caller.user.id || caller.user.is_superuser))
        .map(|t| t.token.clone());
    let Some(key) = key else {
        return Resp::detail(404, "Not found.");
    };
    if ctx.method == "DELETE" {
        st.tokens.remove(&key);
        return Resp::empty(204);
    }
    match st.tokens.get(&key) {
        Some(t) => Resp::json(200, &token_json(&st, t, prefix, false)),
        None => Resp::detail(404, "Not found."),
    }
}
