//! Attempts tagged with their idempotency key as a skip tag ([`AapProviderBuilder::tag_attempts`](super::AapProviderBuilder::tag_attempts)):
//! what the provider knows of each template's skip-tag prompt, the marker it promises, and the
//! lookup by tag.
//!
//! The lookup's answer is trusted as far as the intent's promise holds: the intent recorded the
//! tag before the launch, the launch carried it or was refused unsent, and AWX keeps a prompted
//! skip tag. The one way it cannot hold is a template whose "Prompt on launch" for skip tags
//! was turned off while the launch was in AWX's hands (AWX then drops the tag into
//! `ignored_fields` and launches anyway) and whose answer was lost. An empty answer is
//! therefore trusted only when a read of the template made after the attempt's window closed
//! shows it still prompting for skip tags (one read serves every lookup whose window closed
//! before it, at most one read a second per template); otherwise the attempt's window is read
//! as without a tag. Turning the prompt off and on again between the read that promised the
//! tag and that later read is not detected (docs/aap.md of the repository).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use provkit_lifecycle::{FoundJob, IdempotencyKey, ProviderError, ResourceView};
use tokio::time::Instant;

use super::{AapProvider, map_status, query_error, window_open_for};
use crate::launch_check::LaunchRequirements;
use crate::skip_tag::TagLookup;
use crate::types::{Template, TemplateKind};

/// How long a template's skip-tag facts serve launches before its launch requirements are read
/// again: a change of the template's own skip tags reaches launches within this time.
pub(super) const PROMPT_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// How long a lookup waits while another lookup reads the template's prompt.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

/// The shortest time between two reads of a template's prompt made for lookups: a read serves
/// every lookup whose window closed before it, so lookups wait for the next one.
const PROMPT_READ_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// What the last read of a template's launch requirements said about skip tags.
#[derive(Clone, Debug)]
pub(super) struct Prompt {
    template_id: u64,
    /// A job template prompting for skip tags.
    tags: bool,
    /// The template's own skip tags.
    own: String,
    read: Instant,
    /// When the read was sent, on the provider's clock.
    read_at: DateTime<Utc>,
}

/// The provider's skip-tag state: each template's prompt (by the name the provider resolves)
/// and the tagged intents whose query, made after their window closed, found no job (waiting
/// for a read of the template's prompt).
#[derive(Debug, Default)]
pub(super) struct SkipTags {
    prompts: HashMap<String, Prompt>,
    untagged: HashSet<(String, DateTime<Utc>)>,
}

impl SkipTags {
    /// Notes a read of `template`'s (named `name`) launch requirements sent at `read`, unless
    /// a read sent later already answered (reads may finish out of order).
    pub(super) fn note(
        &mut self,
        name: &str,
        template: &Template,
        requirements: &LaunchRequirements,
        (read, read_at): (Instant, DateTime<Utc>),
    ) {
        if self
            .prompts
            .get(name)
            .is_some_and(|p| p.template_id == template.id && p.read_at > read_at)
        {
            return;
        }
        self.prompts.insert(
            name.to_owned(),
            Prompt {
                template_id: template.id,
                tags: template.kind == TemplateKind::JobTemplate
                    && requirements.ask_skip_tags_on_launch,
                own: requirements.skip_tags.clone(),
                read,
                read_at,
            },
        );
    }

    /// The template named `name` prompts for skip tags, as last read.
    pub(super) fn prompts(&self, name: &str) -> bool {
        self.prompts.get(name).is_some_and(|p| p.tags)
    }

    /// The facts of `name` are older than [`PROMPT_MAX_AGE`] (or unknown).
    pub(super) fn stale(&self, name: &str) -> bool {
        self.prompts
            .get(name)
            .is_none_or(|p| p.read.elapsed() >= PROMPT_MAX_AGE)
    }

    /// The `skip_tags` a launch of `name` carrying `tag` sends, if the template prompts for them.
    pub(super) fn launch_value(&self, name: &str, tag: &str) -> Option<String> {
        let prompt = self.prompts.get(name).filter(|p| p.tags)?;
        Some(crate::skip_tag::with_skip_tag(&prompt.own, tag))
    }

    /// AWX ignored the skip tags of a launch of `name`: the template no longer prompts for them.
    pub(super) fn ignored(&mut self, name: &str) {
        if let Some(p) = self.prompts.get_mut(name) {
            p.tags = false;
        }
    }

    /// What a read of template `template_id` (named `name`) sent at or after `after` (the
    /// provider's clock) said, if one was.
    fn read_since(&self, name: &str, template_id: u64, after: DateTime<Utc>) -> Option<bool> {
        self.prompts
            .get(name)
            .filter(|p| p.template_id == template_id && p.read_at >= after)
            .map(|p| p.tags)
    }

    /// How long until the template's prompt may be read again for lookups.
    fn read_wait(&self, name: &str) -> Option<std::time::Duration> {
        let since = self.prompts.get(name)?.read.elapsed();
        PROMPT_READ_INTERVAL
            .checked_sub(since)
            .filter(|d| !d.is_zero())
    }
}

impl AapProvider {
    fn skip_tags(&self) -> std::sync::MutexGuard<'_, SkipTags> {
        self.skip_tags
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The marker of attempt `key` on template `name`: the key itself as a skip tag, when
    /// attempts are tagged and the template (as last read) prompts for skip tags.
    pub(super) fn tag_for(&self, name: &str, key: &IdempotencyKey) -> Option<String> {
        (self.tag_attempts && self.skip_tags().prompts(name)).then(|| key.as_str().to_owned())
    }

    /// The launch requirements of `template` were read with a request sent at `read`.
    pub(super) fn note_requirements(
        &self,
        name: &str,
        template: &Template,
        requirements: &LaunchRequirements,
        read: (Instant, DateTime<Utc>),
    ) {
        self.skip_tags().note(name, template, requirements, read);
    }

    /// Whether the template's launch requirements should be read again before this launch.
    pub(super) fn prompt_stale(&self, name: &str) -> bool {
        self.tag_attempts && self.skip_tags().stale(name)
    }

    /// The `skip_tags` of a launch of `name` carrying `tag`; `None` when the template no longer
    /// prompts for them (the launch must then not be sent).
    pub(super) fn tagged_launch_value(&self, name: &str, tag: &str) -> Option<String> {
        self.skip_tags().launch_value(name, tag)
    }

    /// AWX answered a launch of `name` with its `skip_tags` ignored.
    pub(super) fn tag_ignored(&self, name: &str) {
        self.skip_tags().ignored(name);
    }

    /// The lookup of intent `(key, at)` whose launch carried the skip tag `tag`, once the
    /// intent's launch window has closed on AAP's clock (before, a
    /// [`RetryLater`](provkit_lifecycle::RetryLater) error and no request: its launch may still
    /// create the job): one query by the tag. A job found is the attempt's. An empty answer
    /// proves absence when a read of the template sent after the window closed shows it still
    /// prompting for skip tags (the last read, or one made now; the query is not repeated while
    /// the lookup waits for it). Otherwise — a workflow template, an API without the query, the
    /// prompt gone, a sliced job template's child — the attempt's window is read as for an
    /// untagged intent.
    pub(super) async fn tagged_lookup(
        &self,
        resource: &ResourceView,
        job_type: &provkit_core::JobType,
        key: &IdempotencyKey,
        at: DateTime<Utc>,
        tag: &str,
    ) -> Result<Option<FoundJob>, ProviderError> {
        use provkit_lifecycle::ProvisioningProvider as _;
        let window = || self.find_job_by_idempotency_key_since(resource, job_type, key, Some(at));
        let Some((name, template)) = self.lookup_template(resource, job_type).await? else {
            return Ok(None);
        };
        // Only this provider's own marker (the key) is a tag it launched with: another's (a
        // routed provider's, before a configuration change) proves nothing about this backend.
        if template.kind != TemplateKind::JobTemplate || tag != key.as_str() {
            return window().await;
        }
        if self.windows().is_jobless(key.as_str(), at) {
            return Ok(None);
        }
        self.measure_clock().await;
        let (aap_now_low, until, closed_at) = self.window_end(at);
        if let Some(wait) = window_open_for(until, aap_now_low) {
            return Err(deferred(key.as_str(), until, wait));
        }
        let intent = (key.as_str().to_owned(), at);
        if !self.skip_tags().untagged.contains(&intent) {
            let answer = self
                .api
                .job_with_skip_tag(template.id, tag)
                .await
                .map_err(|e| {
                    query_error(
                        format!(
                            "idempotency lookup: failed to list the jobs of template {} by skip tag",
                            template.id
                        ),
                        e,
                    )
                })?;
            match answer {
                TagLookup::Found(job) if job.launch_type.as_deref() != Some("workflow") => {
                    self.windows().done(key.as_str(), at);
                    self.remember_kind(job.id, job.kind);
                    return Ok(Some(FoundJob::new(
                        job.id.to_string(),
                        map_status(job.status.as_str()),
                        job.status.as_str(),
                    )));
                }
                TagLookup::Absent => {
                    let horizon = self.horizon(self.clock.now());
                    let mut tags = self.skip_tags();
                    tags.untagged.retain(|(_, t)| *t > horizon);
                    tags.untagged.insert(intent.clone());
                }
                // A sliced job template's child (its workflow job is what the launch made), or
                // no such query.
                _ => return window().await,
            }
        }
        let prompting = self.prompts_after(&name, &template, key, closed_at).await?;
        self.skip_tags().untagged.remove(&intent);
        if !prompting {
            tracing::warn!(key = %key, template = template.id, "the template no longer prompts for skip tags: the tagged intent's window is read instead");
            return window().await;
        }
        let mut windows = self.windows();
        windows.own_launch_absent(key.as_str(), at);
        windows.done(key.as_str(), at);
        Ok(None)
    }

    /// The end of intent `at`'s launch window on AAP's clock, with AAP's clock's low bound now
    /// and the time on this host's clock from which the window has certainly closed:
    /// `(now + offset.low, at + deadline + offset.high, end − offset.low)`.
    fn window_end(&self, at: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>, DateTime<Utc>) {
        let default =
            chrono::Duration::from_std(self.clock_skew).unwrap_or(chrono::Duration::minutes(5));
        let now = self.clock.now();
        let offset = self
            .skew
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .bounds(default, now);
        // An intent time of a writer that truncated it to the second: its attempt may have
        // been sent up to a second after the time read.
        let legacy = if provkit_core::timestamp::micro::is_whole_second(&at) {
            chrono::Duration::seconds(1)
        } else {
            chrono::Duration::zero()
        };
        let end = at + self.deadline() + legacy + offset.high;
        (now + offset.low, end, end - offset.low)
    }

    /// Whether template `name` prompts for skip tags on a read sent at or after `after` (this
    /// host's clock): the last read when it was, else one read now — one at a time and at most
    /// one a second per template; a lookup that would wait for another's read is deferred
    /// briefly instead (it would hold a worker of the caller's).
    async fn prompts_after(
        &self,
        name: &str,
        template: &Template,
        key: &IdempotencyKey,
        after: DateTime<Utc>,
    ) -> Result<bool, ProviderError> {
        let wait = {
            let tags = self.skip_tags();
            if let Some(prompting) = tags.read_since(name, template.id, after) {
                return Ok(prompting);
            }
            tags.read_wait(name)
        };
        let reading = self.prompt_reads.try_lock();
        let (Ok(_reading), None) = (reading, wait) else {
            return Err(awaiting_prompt(
                key.as_str(),
                template.id,
                wait.unwrap_or(BUSY_WAIT),
            ));
        };
        if let Some(prompting) = self.skip_tags().read_since(name, template.id, after) {
            return Ok(prompting);
        }
        let read = (Instant::now(), self.clock.now());
        let requirements = self.api.launch_requirements(template).await.map_err(|e| {
            query_error(
                format!(
                    "idempotency lookup: failed to read whether template {} still prompts for skip tags",
                    template.id
                ),
                e,
            )
        })?;
        self.note_requirements(name, template, &requirements, read);
        Ok(template.kind == TemplateKind::JobTemplate && requirements.ask_skip_tags_on_launch)
    }

    fn windows(&self) -> std::sync::MutexGuard<'_, super::windows::Windows> {
        self.windows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The tagged lookup waits (no request) until the window ends at `until` on AAP's clock.
fn deferred(key: &str, until: DateTime<Utc>, wait: std::time::Duration) -> ProviderError {
    ProviderError::other_with_source(
        "idempotency lookup deferred",
        provkit_lifecycle::RetryLater::new(
            format!(
                "the launch window of intent {key} ends at {} on AAP's clock, and a launch sent under it may still create its job until then (AWX finishes a request whose client left); it is looked up by its skip tag once the window has closed",
                until.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
            ),
            wait,
        ),
    )
}

/// The tagged lookup found no job and waits for the next read of the template's prompt.
fn awaiting_prompt(key: &str, template: u64, wait: std::time::Duration) -> ProviderError {
    ProviderError::other_with_source(
        "idempotency lookup deferred",
        provkit_lifecycle::RetryLater::new(
            format!(
                "no job carries the skip tag of intent {key}; its absence is proven by the next read of whether template {template} still prompts for skip tags"
            ),
            wait,
        ),
    )
}
