//! Turns [`Fixtures`] into the initial [`State`].

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::FakeAapError;
use super::spec::{Fixtures, InventorySpec, OrganizationSpec, Scope, UserSpec};
use super::state::{
    Inventory, JobTemplate, Org, State, Template, Token, User, WfTemplate, WfTemplateNode,
};

fn invalid(reason: impl Into<String>) -> FakeAapError {
    FakeAapError::InvalidFixtures {
        reason: reason.into(),
    }
}

fn next_id(explicit: Option<u64>, used: &mut BTreeSet<u64>) -> u64 {
    let id = explicit.unwrap_or_else(|| used.last().map_or(1, |m| m + 1));
    used.insert(id);
    id
}

/// `specs` with `default()` in front unless one of them `is_default` already.
fn with_default<T: Clone>(
    specs: &[T],
    is_default: impl Fn(&T) -> bool,
    default: impl FnOnce() -> T,
) -> Vec<T> {
    let mut out = specs.to_vec();
    if !out.iter().any(is_default) {
        out.insert(0, default());
    }
    out
}

/// The default admin token when fixtures declare none.
pub(crate) const DEFAULT_TOKEN: &str = "fake-aap-admin-token";

pub(crate) fn build_state(fx: &Fixtures, now: DateTime<Utc>) -> Result<State, FakeAapError> {
    let mut rng = fastrand::Rng::with_seed(fx.settings.seed);
    // Organizations.
    let mut orgs: Vec<Org> = Vec::new();
    let mut org_ids = BTreeSet::new();
    let org_specs = with_default(
        &fx.organizations,
        |o| o.name == "Default",
        || OrganizationSpec {
            id: Some(1),
            name: "Default".into(),
            description: String::new(),
        },
    );
    for o in &org_specs {
        if orgs.iter().any(|x| x.name == o.name) {
            return Err(invalid(format!("duplicate organization {:?}", o.name)));
        }
        if o.id.is_some_and(|id| org_ids.contains(&id)) {
            return Err(invalid(format!("duplicate organization id {:?}", o.id)));
        }
        let id = next_id(o.id, &mut org_ids);
        orgs.push(Org {
            id,
            name: o.name.clone(),
            description: o.description.clone(),
        });
    }
    let org_id = |name: &str| -> Result<u64, FakeAapError> {
        orgs.iter()
            .find(|o| o.name == name)
            .map(|o| o.id)
            .ok_or_else(|| invalid(format!("unknown organization {name:?}")))
    };
    // Users.
    let mut users = Vec::new();
    let mut user_ids = BTreeSet::new();
    let user_specs = with_default(
        &fx.users,
        |u| u.username == "admin",
        || UserSpec {
            id: Some(1),
            username: "admin".into(),
            password: "password".into(),
            is_superuser: true,
        },
    );
    for u in &user_specs {
        if users.iter().any(|x: &User| x.username == u.username) {
            return Err(invalid(format!("duplicate user {:?}", u.username)));
        }
        let id = next_id(u.id, &mut user_ids);
        users.push(User {
            id,
            username: u.username.clone(),
            password: u.password.clone(),
            is_superuser: u.is_superuser,
        });
    }
    // Tokens.
    let mut tokens = HashMap::new();
    let thousand_years = chrono::TimeDelta::days(365_000);
    let mut next_token_id = 1;
    let mut token_specs = fx.tokens.clone();
    if token_specs.is_empty() {
        token_specs.push(super::spec::TokenSpec {
            token: DEFAULT_TOKEN.into(),
            user: "admin".into(),
            scope: Scope::Write,
            expires: None,
            description: "fake-aap default token".into(),
            controller_issued: false,
        });
    }
    for t in &token_specs {
        let user = users
            .iter()
            .find(|u| u.username == t.user)
            .ok_or_else(|| invalid(format!("token for unknown user {:?}", t.user)))?;
        if t.token.is_empty() {
            return Err(invalid("empty token"));
        }
        tokens.insert(
            t.token.clone(),
            Token {
                id: next_token_id,
                token: t.token.clone(),
                user_id: user.id,
                scope: t.scope,
                expires: t.expires.unwrap_or(now + thousand_years),
                description: t.description.clone(),
                created: now,
                controller_issued: t.controller_issued,
            },
        );
        next_token_id += 1;
    }
    // Inventories.
    let mut inventories: Vec<Inventory> = Vec::new();
    let mut inv_ids = BTreeSet::new();
    let inv_specs = with_default(
        &fx.inventories,
        |i| i.name == "Demo Inventory",
        || InventorySpec {
            id: Some(1),
            name: "Demo Inventory".into(),
            organization: "Default".into(),
            hosts: 3,
        },
    );
    for i in &inv_specs {
        let id = next_id(i.id, &mut inv_ids);
        inventories.push(Inventory {
            id,
            name: i.name.clone(),
            org_id: org_id(&i.organization)?,
            hosts: i.hosts,
        });
    }
    let inv_id = |name: &Option<String>| -> Result<Option<u64>, FakeAapError> {
        match name {
            None => Ok(None),
            Some(n) => inventories
                .iter()
                .find(|i| i.name == *n)
                .map(|i| Some(i.id))
                .ok_or_else(|| invalid(format!("unknown inventory {n:?}"))),
        }
    };
    // Templates (shared id sequence; explicit ids first).
    let mut templates: BTreeMap<u64, Template> = BTreeMap::new();
    let mut tpl_ids: BTreeSet<u64> = BTreeSet::new();
    for id in fx
        .job_templates
        .iter()
        .filter_map(|t| t.id)
        .chain(fx.workflow_job_templates.iter().filter_map(|t| t.id))
    {
        if !tpl_ids.insert(id) {
            return Err(invalid(format!("duplicate template id {id}")));
        }
    }
    for spec in &fx.job_templates {
        let org = org_id(&spec.organization)?;
        if templates
            .values()
            .any(|t| matches!(t, Template::Job(j) if j.spec.name == spec.name && j.org_id == org))
        {
            return Err(invalid(format!(
                "JobTemplate with this (name, organization) combination already exists: {:?}",
                spec.name
            )));
        }
        // Explicit ids are already in `tpl_ids`.
        let id = next_id(spec.id, &mut tpl_ids);
        templates.insert(
            id,
            Template::Job(Box::new(JobTemplate {
                id,
                spec: spec.clone(),
                org_id: org,
                inventory_id: inv_id(&spec.inventory)?,
                extra_vars: State::parse_template_vars(&spec.extra_vars),
                created: now,
                script: spec.script.clone().map(Arc::new),
                rules: spec.scripts.clone(),
                last_job: None,
                launches: 0,
            })),
        );
    }
    for spec in &fx.workflow_job_templates {
        let org = org_id(&spec.organization)?;
        if templates.values().any(
            |t| matches!(t, Template::Workflow(w) if w.spec.name == spec.name && w.org_id == org),
        ) {
            return Err(invalid(format!(
                "WorkflowJobTemplate with this (name, organization) combination already exists: {:?}",
                spec.name
            )));
        }
        // Explicit ids are already in `tpl_ids`.
        let id = next_id(spec.id, &mut tpl_ids);
        let mut nodes = Vec::new();
        for n in &spec.nodes {
            let ujt = if n.approval {
                None
            } else {
                let org_name = n.organization.as_deref().unwrap_or(&spec.organization);
                let node_org = org_id(org_name)?;
                let jt = templates
                    .values()
                    .find(|t| matches!(t, Template::Job(j) if j.spec.name == n.job_template && j.org_id == node_org))
                    .ok_or_else(|| invalid(format!("workflow node: unknown job template {:?}", n.job_template)))?;
                Some(jt.id())
            };
            let identifier = n
                .identifier
                .clone()
                .unwrap_or_else(|| super::state::uuid4(&mut rng));
            nodes.push(WfTemplateNode {
                ujt,
                identifier,
                failure_handled: n.failure_handled,
                approval: n.approval,
            });
        }
        templates.insert(
            id,
            Template::Workflow(Box::new(WfTemplate {
                id,
                spec: spec.clone(),
                org_id: org,
                inventory_id: inv_id(&spec.inventory)?,
                extra_vars: State::parse_template_vars(&spec.extra_vars),
                created: now,
                nodes,
                last_job: None,
                launches: 0,
            })),
        );
    }
    Ok(State {
        settings: fx.settings.clone(),
        started_at: now,
        orgs,
        users,
        tokens,
        next_token_id,
        inventories,
        templates,
        jobs: Vec::new(),
        created_order: super::state::CreatedOrder::default(),
        next_node_id: 1,
        default_script: Arc::new(fx.default_script.clone().unwrap_or_default()),
        wake: BinaryHeap::new(),
        stalled: BTreeSet::new(),
        announcer: super::announce::Announcer::default(),
        rng,
    })
}
