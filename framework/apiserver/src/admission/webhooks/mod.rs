//! Admission webhooks, called as kube-apiserver's MutatingAdmissionWebhook
//! and ValidatingAdmissionWebhook plugins call them. [`Chain`] is the
//! [`Admission`] of one request: mutating webhooks one at a time
//! (configurations by name, webhooks in order), their JSONPatches applied
//! and `IfNeeded` webhooks reinvoked once when a later one changed the
//! object; validating webhooks in parallel, the first error winning; the
//! failure policy, timeout and dry-run rules; the messages clients see;
//! warnings gathered for the `Warning` headers.
//!
//! The write path runs on threads of its own ([`crate::machinery::work`]); a call is
//! spawned on the server's runtime and its thread waits for it. The CRD
//! conversions a write needs ([`crate::registry::conversion`]) wait the same way.

mod authorizer;
pub(crate) mod conditions;
pub(crate) mod config;
mod policies;
mod review;
mod versioned;

use std::borrow::Cow;
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;
use tokio::runtime::Handle;

use crate::admission::attributes::{Admission, Attributes};
use crate::apiextensions::authz::Session;
use crate::auth::UserInfo;
use crate::machinery::status::{ApiError, Cause, Details};
use crate::machinery::webhook_client::Target;
use crate::registry::conversion::Converter;
use crate::registry::conversion::{local_conversion, webhook_conversion};
use crate::registry::state::Shared;
use crate::registry::ResourceDef;
use conditions::Decision;
use config::Hook;

/// The admission of one API request.
pub(crate) struct Chain {
    shared: Arc<Shared>,
    runtime: Handle,
    /// Who makes the request (`None`: a server without authentication),
    /// whom admission CEL's `authorizer` asks about.
    user: Option<Arc<UserInfo>>,
    warnings: Mutex<Vec<String>>,
}

/// Why a call did not give a usable answer (`ErrCallingWebhook`'s reason).
type CallFailure = String;

impl Chain {
    /// The chain of a request handled on `runtime`.
    pub fn new(shared: Arc<Shared>, runtime: Handle) -> Self {
        Self {
            shared,
            runtime,
            user: None,
            warnings: Mutex::new(Vec::new()),
        }
    }

    /// The chain of a request made by `user`.
    pub fn for_user(mut self, user: Option<Arc<UserInfo>>) -> Self {
        self.user = user;
        self
    }

    /// What admission CEL's `authorizer` asks, for a request with `attrs`.
    fn authorizer(&self, attrs: &Attributes<'_>) -> Arc<Session> {
        authorizer::session(&self.shared, self.user.as_deref(), attrs)
    }

    /// Whether a write of `def` may wait on a webhook (and so should not
    /// hold one of the shared work threads).
    pub fn may_call_out(&self, def: &ResourceDef) -> bool {
        webhook_conversion(def).is_some()
            || (!def.is_admission_configuration() && config::any(&self.shared))
    }

    /// The warnings webhooks returned, without duplicates, in order.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn warn(&self, warnings: Vec<String>) {
        let mut all = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        for w in warnings {
            if !all.contains(&w) {
                all.push(w);
            }
        }
    }

    /// Runs `call` on the runtime and waits for it on this thread.
    fn block<T: Send + 'static>(
        &self,
        call: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, CallFailure> {
        if Handle::try_current().is_ok() {
            // Waiting here would stall the runtime that has to run it.
            return Err("a webhook call was made from the runtime's own thread".into());
        }
        futures::executor::block_on(self.runtime.spawn(call)).map_err(|e| e.to_string())
    }

    /// `object` as a webhook registered for `version` sees it: converted
    /// when that is not the request's version (an `Equivalent` match).
    /// A failed conversion is kube-apiserver's `NewInternalError` of the
    /// converter's error; the mutating dispatcher's versioned-attribute
    /// accessor wraps it once more before its caller does, so a mutating
    /// webhook's reads `Internal error occurred: Internal error occurred:
    /// ...`.
    fn at_version<'v>(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&'v Value>,
        version: &str,
        mutating: bool,
    ) -> Result<Option<Cow<'v, Value>>, ApiError> {
        versioned::at(self, attrs, object, version).map_err(|e| {
            let once = internal_error(&e.message);
            if mutating {
                internal_error(&once.message)
            } else {
                once
            }
        })
    }

    /// Calls a mutating webhook if it matches: `None` when it does not,
    /// else whether it changed `object`. A webhook matched at another
    /// version mutates the object converted to it, which is converted
    /// back.
    fn invoke_mutating(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<Option<bool>, ApiError> {
        let Some(version) = hook.matches(&self.shared, attrs, object.as_deref(), old) else {
            return Ok(None);
        };
        // The old object first, as `NewVersionedAttributes` converts.
        let old_seen = self.at_version(attrs, old, &version, true)?;
        let seen = self.at_version(attrs, object.as_deref(), &version, true)?;
        if !self.conditions_hold(hook, attrs, &version, seen.as_deref(), old_seen.as_deref())? {
            return Ok(None);
        }
        if version == attrs.version || attrs.sub_kind.is_some() {
            drop(seen);
            return self
                .call_mutating(hook, attrs, &version, object, old)
                .map(Some);
        }
        let mut converted = seen.map(Cow::into_owned);
        let changed = self.call_mutating(
            hook,
            attrs,
            &version,
            converted.as_mut(),
            old_seen.as_deref(),
        )?;
        if let (true, Some(object), Some(converted)) = (changed, object, converted) {
            // Back to the request's version: kube-apiserver converts the
            // dirty object back when the dispatch ends, and answers that
            // conversion's error unwrapped.
            let api_version = attrs.def.api_version(attrs.version);
            *object = self.convert(attrs.def, converted, &api_version)?;
        }
        Ok(Some(changed))
    }

    /// One mutating call with the object at `version`; whether it changed
    /// `object`.
    fn call_mutating(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        version: &str,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<bool, ApiError> {
        if attrs.dry_run && !hook.dry_run_safe {
            return Err(dry_run_unsupported(&hook.name));
        }
        let (uid, review) =
            review::request(attrs, version, object.as_deref(), old, self.user.as_deref());
        let answer = Target::from_client_config(hook.client_config(), hook.timeout)
            .map_err(|e| format!("could not get REST client: {e}"))
            .and_then(|target| self.block(send(target, review)))
            .and_then(|sent| sent)
            .and_then(|body| {
                review::verdict(&body, &uid, true)
                    .map_err(|e| format!("received invalid webhook response: {e}"))
            });
        let verdict = match answer {
            Ok(v) => v,
            Err(reason) => return self.failed(hook, &reason).map(|()| false),
        };
        self.warn(verdict.warnings);
        if !verdict.allowed {
            return Err(review::denial(&hook.name, &verdict.status));
        }
        let Some(patch) = verdict.patch.filter(|p| !p.0.is_empty()) else {
            return Ok(false);
        };
        let Some(object) = object else {
            return Err(ApiError::internal(format!(
                "admission webhook \"{}\" attempted to modify the object, which is not supported for this operation",
                hook.name
            )));
        };
        let before = object.clone();
        json_patch::patch(object, &patch).map_err(|e| internal_error(&format!("{e}")))?;
        let changed = *object != before;
        // kube-apiserver decodes the patched object with defaulting
        // (`webhook/mutating/dispatcher.go`), after telling whether the
        // webhook changed it.
        attrs.def.default_fields(object);
        Ok(changed)
    }

    /// Whether the webhook's `matchConditions` let it be called; their
    /// evaluation failing under `Fail` refuses the request (403).
    fn conditions_hold(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        version: &str,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<bool, ApiError> {
        let conditions = hook.match_conditions();
        if conditions.is_empty() {
            return Ok(true);
        }
        let (_, review) = review::request(attrs, version, object, old, self.user.as_deref());
        let request = review.get("request").unwrap_or(&Value::Null);
        let authorizer = self.authorizer(attrs);
        match conditions::decide(
            conditions,
            hook.ignore_failures,
            request,
            object,
            old,
            Some(&authorizer),
        ) {
            Decision::Call => Ok(true),
            Decision::Skip => Ok(false),
            Decision::Refuse(text) => {
                tracing::warn!(webhook = %hook.name, error = %text, "failed evaluating match conditions, failing closed");
                Err(review::forbidden(attrs, &text))
            }
        }
    }

    /// A failed call under the webhook's failure policy: skipped under
    /// Ignore, a 500 under Fail.
    fn failed(&self, hook: &Hook, reason: &str) -> Result<(), ApiError> {
        let text = format!("failed calling webhook \"{}\": {reason}", hook.name);
        if hook.ignore_failures {
            tracing::warn!(webhook = %hook.name, error = %reason, "failing open");
            Ok(())
        } else {
            Err(internal_error(&text))
        }
    }
}

/// kube-apiserver's `NewInternalError`.
fn internal_error(text: &str) -> ApiError {
    ApiError::internal(format!("Internal error occurred: {text}")).with_details(Details {
        causes: vec![Cause {
            reason: String::new(),
            message: text.to_owned(),
            field: String::new(),
        }],
        ..Details::default()
    })
}

fn dry_run_unsupported(name: &str) -> ApiError {
    ApiError::bad_request(format!(
        "admission webhook \"{name}\" does not support dry run"
    ))
}

/// Serializes and posts one review.
async fn send(target: Target, review: Value) -> Result<bytes::Bytes, CallFailure> {
    let body = serde_json::to_vec(&review).map_err(|e| e.to_string())?;
    crate::machinery::webhook_client::post(target, body)
        .await
        .map_err(|e| format!("failed to call webhook: {e}"))
}

impl Admission for Chain {
    fn mutate(
        &self,
        attrs: &Attributes<'_>,
        mut object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if attrs.def.is_admission_configuration() {
            return Ok(());
        }
        let hooks = config::hooks(&self.shared, &config::mutating_key());
        // `IfNeeded` webhooks called so far, and those to call again
        // because a later webhook changed the object.
        let mut invoked = Vec::new();
        let mut reinvoke = HashSet::new();
        for (i, hook) in hooks.iter().enumerate() {
            let Some(changed) = self.invoke_mutating(hook, attrs, object.as_deref_mut(), old)?
            else {
                continue;
            };
            if changed {
                reinvoke.extend(invoked.drain(..));
            }
            if hook.reinvoke_if_needed {
                invoked.push(i);
            }
        }
        for (i, hook) in hooks.iter().enumerate() {
            if reinvoke.contains(&i) {
                self.invoke_mutating(hook, attrs, object.as_deref_mut(), old)?;
            }
        }
        Ok(())
    }

    fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if attrs.def.is_admission_configuration() {
            return Ok(());
        }
        // The policies first: kube-apiserver's ValidatingAdmissionPolicy
        // plugin runs before its ValidatingAdmissionWebhook plugin.
        let authorizer = self.authorizer(attrs);
        let (warnings, judged) = policies::admit(
            &self.shared,
            self,
            attrs,
            object,
            old,
            self.user.as_deref(),
            &authorizer,
        );
        self.warn(warnings);
        judged?;
        let mut calls = Vec::new();
        for hook in config::hooks(&self.shared, &config::validating_key()) {
            let Some(version) = hook.matches(&self.shared, attrs, object, old) else {
                continue;
            };
            let old_seen = self.at_version(attrs, old, &version, false)?;
            let seen = self.at_version(attrs, object, &version, false)?;
            let (seen, old_seen) = (seen.as_deref(), old_seen.as_deref());
            if !self.conditions_hold(&hook, attrs, &version, seen, old_seen)? {
                continue;
            }
            if attrs.dry_run && !hook.dry_run_safe {
                return Err(dry_run_unsupported(&hook.name));
            }
            let (uid, review) =
                review::request(attrs, &version, seen, old_seen, self.user.as_deref());
            let target = Target::from_client_config(hook.client_config(), hook.timeout)
                .map_err(|e| format!("could not get REST client: {e}"));
            calls.push((hook, uid, target, review));
        }
        if calls.is_empty() {
            return Ok(());
        }
        // All at once; answers are judged as they come.
        let answers = self.block(async move {
            let mut pending: FuturesUnordered<_> = calls
                .into_iter()
                .map(|(hook, uid, target, review)| async move {
                    let body = match target {
                        Ok(target) => send(target, review).await,
                        Err(e) => Err(e),
                    };
                    let verdict = body.and_then(|body| {
                        review::verdict(&body, &uid, false)
                            .map_err(|e| format!("received invalid webhook response: {e}"))
                    });
                    (hook, verdict)
                })
                .collect();
            let mut answers = Vec::new();
            while let Some(answer) = pending.next().await {
                answers.push(answer);
            }
            answers
        });
        let answers = match answers {
            Ok(a) => a,
            Err(e) => return Err(internal_error(&e)),
        };
        let mut first_error = None;
        for (hook, verdict) in answers {
            let outcome = match verdict {
                Ok(v) => {
                    self.warn(v.warnings);
                    if v.allowed {
                        Ok(())
                    } else {
                        Err(review::denial(&hook.name, &v.status))
                    }
                }
                Err(reason) => self.failed(&hook, &reason),
            };
            if let Err(e) = outcome {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn convert(
        &self,
        def: &ResourceDef,
        object: Value,
        api_version: &str,
    ) -> Result<Value, ApiError> {
        let Some(converter) = Converter::of(def) else {
            return local_conversion(def, object, api_version);
        };
        if object.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
            return Ok(object);
        }
        let api_version = api_version.to_owned();
        let converted = self
            .block(async move { converter.convert(vec![object], &api_version, false).await })
            .map_err(|e| internal_error(&e))??;
        converted
            .into_iter()
            .next()
            .ok_or_else(|| ApiError::internal("the conversion returned no object"))
    }
}
