//! Named health checks and the `/healthz` / `/readyz` answers built from
//! them, in the text format of kube-apiserver's and controller-runtime's
//! `healthz` packages:
//!
//! - all checks pass: `200 ok` (with `?verbose`, one `[+]name ok` line per
//!   check and `<endpoint> check passed`);
//! - any check fails: `500`, always verbose, failing checks as
//!   `[-]name failed: reason withheld` (the reason goes to the log, not to
//!   an unauthenticated endpoint) and `<endpoint> check failed`;
//! - `?exclude=name` skips a check (`[+]name excluded: ok`);
//! - `/<endpoint>/<name>` runs one check: `200 ok` or
//!   `500 internal server error: <reason>`; an unknown name is `404`;
//! - with no checks, a built-in `ping` check passes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::future::Future;
use std::sync::{Arc, PoisonError, RwLock};

use futures::future::{join_all, BoxFuture};
use futures::FutureExt as _;

use crate::manager::Error;

/// The error a check reports; `Err("caches not synced".into())` works.
pub type CheckError = Box<dyn std::error::Error + Send + Sync>;

type CheckFn = Arc<dyn Fn() -> BoxFuture<'static, Result<(), CheckError>> + Send + Sync>;

/// A set of named checks behind one endpoint. Cheap to clone; clones share
/// the set, so checks added after the server started are served too.
#[derive(Clone, Default)]
pub struct Checks {
    checks: Arc<RwLock<BTreeMap<String, CheckFn>>>,
}

impl std::fmt::Debug for Checks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

impl Checks {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a check that answers at once. Names must be unique, non-empty
    /// and usable as one URL path segment.
    pub fn add<F, E>(&self, name: &str, check: F) -> Result<(), Error>
    where
        F: Fn() -> Result<(), E> + Send + Sync + 'static,
        E: Into<CheckError>,
    {
        let check = Arc::new(check);
        self.insert(
            name,
            Arc::new(move || {
                let result = check().map_err(Into::into);
                futures::future::ready(result).boxed()
            }),
        )
    }

    /// Adds a check that has to wait for something (e.g. a request).
    /// Keep it short: probes have timeouts of their own.
    pub fn add_async<F, Fut, E>(&self, name: &str, check: F) -> Result<(), Error>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<CheckError>,
    {
        self.insert(
            name,
            Arc::new(move || check().map(|r| r.map_err(Into::into)).boxed()),
        )
    }

    /// Removes a check; true if it was there.
    pub fn remove(&self, name: &str) -> bool {
        self.write().remove(name).is_some()
    }

    /// The checks' names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    fn insert(&self, name: &str, check: CheckFn) -> Result<(), Error> {
        validate_name(name)?;
        let mut checks = self.write();
        if checks.contains_key(name) {
            return Err(Error::InvalidCheck {
                name: name.to_owned(),
                problem: "a check with this name already exists".to_owned(),
            });
        }
        checks.insert(name.to_owned(), check);
        Ok(())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, CheckFn>> {
        self.checks.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, CheckFn>> {
        self.checks.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// A snapshot, so no lock is held while checks run.
    fn snapshot(&self) -> Vec<(String, CheckFn)> {
        self.read()
            .iter()
            .map(|(name, check)| (name.clone(), check.clone()))
            .collect()
    }

    fn get(&self, name: &str) -> Option<CheckFn> {
        self.read().get(name).cloned()
    }
}

fn validate_name(name: &str) -> Result<(), Error> {
    let problem = if name.is_empty() {
        "the name is empty"
    } else if name == "." || name == ".." {
        "the name is a relative path"
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    {
        "the name may only contain ASCII letters, digits, '-', '_', '.' and ':'"
    } else {
        return Ok(());
    };
    Err(Error::InvalidCheck {
        name: name.to_owned(),
        problem: problem.to_owned(),
    })
}

/// Liveness and readiness checks, served as `/healthz` and `/readyz`.
/// Cheap to clone; clones share the checks.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use kubeforge::manager::Probes;
///
/// let probes = Probes::new();
/// let synced = Arc::new(AtomicBool::new(false));
/// let s = synced.clone();
/// probes
///     .add_readyz_check("informers", move || {
///         if s.load(Ordering::Acquire) { Ok(()) } else { Err("caches not synced") }
///     })
///     .unwrap();
/// probes.add_healthz_check("ping", || Ok::<(), &str>(())).unwrap();
/// ```
#[derive(Clone, Debug, Default)]
pub struct Probes {
    healthz: Checks,
    readyz: Checks,
}

impl Probes {
    /// No checks yet (both endpoints answer `ok` through `ping`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a liveness check (`/healthz`).
    pub fn add_healthz_check<F, E>(&self, name: &str, check: F) -> Result<(), Error>
    where
        F: Fn() -> Result<(), E> + Send + Sync + 'static,
        E: Into<CheckError>,
    {
        self.healthz.add(name, check)
    }

    /// Adds a readiness check (`/readyz`).
    pub fn add_readyz_check<F, E>(&self, name: &str, check: F) -> Result<(), Error>
    where
        F: Fn() -> Result<(), E> + Send + Sync + 'static,
        E: Into<CheckError>,
    {
        self.readyz.add(name, check)
    }

    /// The liveness checks, e.g. to add an async one.
    pub fn healthz(&self) -> &Checks {
        &self.healthz
    }

    /// The readiness checks, e.g. to add an async one.
    pub fn readyz(&self) -> &Checks {
        &self.readyz
    }
}

/// An answer to a probe request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
}

/// The query parameters the probe endpoints understand.
#[derive(Debug, Default)]
pub(crate) struct ProbeQuery {
    pub(crate) verbose: bool,
    pub(crate) exclude: BTreeSet<String>,
}

impl ProbeQuery {
    pub(crate) fn parse(query: Option<&str>) -> Self {
        let mut q = Self::default();
        for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match &*key {
                "verbose" => q.verbose = true,
                "exclude" => {
                    q.exclude.insert(value.into_owned());
                }
                _ => {}
            }
        }
        q
    }
}

enum Outcome {
    Ok,
    Excluded,
    Failed,
}

/// Runs every check (concurrently) and answers for `endpoint` (`healthz`
/// or `readyz`).
pub(crate) async fn aggregated(endpoint: &str, checks: &Checks, query: &ProbeQuery) -> Answer {
    let snapshot = checks.snapshot();
    let mut unknown_excludes = query.exclude.clone();
    let results = join_all(snapshot.iter().map(|(name, check)| {
        let excluded = unknown_excludes.remove(name);
        async move {
            if excluded {
                return Outcome::Excluded;
            }
            match check().await {
                Ok(()) => Outcome::Ok,
                Err(error) => {
                    tracing::info!(endpoint, check = %name, %error, "health check failed");
                    Outcome::Failed
                }
            }
        }
    }))
    .await;

    let mut lines: Vec<(&str, Outcome)> = snapshot
        .iter()
        .map(|(name, _)| name.as_str())
        .zip(results)
        .collect();
    if lines.is_empty() {
        lines.push(("ping", Outcome::Ok));
    }
    let failed = lines.iter().any(|(_, o)| matches!(o, Outcome::Failed));
    if !failed && !query.verbose {
        return Answer {
            status: 200,
            body: "ok".to_owned(),
        };
    }
    let mut body = String::new();
    for (name, outcome) in &lines {
        // Writing to a String cannot fail.
        let _ = match outcome {
            Outcome::Ok => writeln!(body, "[+]{name} ok"),
            Outcome::Excluded => writeln!(body, "[+]{name} excluded: ok"),
            Outcome::Failed => writeln!(body, "[-]{name} failed: reason withheld"),
        };
    }
    if !unknown_excludes.is_empty() {
        let quoted: Vec<String> = unknown_excludes.iter().map(|n| format!("{n:?}")).collect();
        let _ = writeln!(
            body,
            "warn: some health checks cannot be excluded: no matches for {}",
            quoted.join(",")
        );
    }
    if failed {
        let _ = writeln!(body, "{endpoint} check failed");
        Answer { status: 500, body }
    } else {
        let _ = writeln!(body, "{endpoint} check passed");
        Answer { status: 200, body }
    }
}

/// Runs the one check `name`; `None` if there is no such check.
pub(crate) async fn single(checks: &Checks, name: &str) -> Option<Answer> {
    let Some(check) = checks.get(name) else {
        // The built-in ping exists only while there are no checks.
        return (name == "ping" && checks.read().is_empty()).then(|| Answer {
            status: 200,
            body: "ok".to_owned(),
        });
    };
    Some(match check().await {
        Ok(()) => Answer {
            status: 200,
            body: "ok".to_owned(),
        },
        Err(error) => Answer {
            status: 500,
            body: format!("internal server error: {error}\n"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> ProbeQuery {
        ProbeQuery::parse(Some(s))
    }

    #[tokio::test]
    async fn no_checks_means_ping() {
        let checks = Checks::new();
        let a = aggregated("healthz", &checks, &q("")).await;
        assert_eq!(
            a,
            Answer {
                status: 200,
                body: "ok".into()
            }
        );
        let a = aggregated("healthz", &checks, &q("verbose")).await;
        assert_eq!(a.body, "[+]ping ok\nhealthz check passed\n");
        assert_eq!(single(&checks, "ping").await.unwrap().status, 200);
        assert!(single(&checks, "other").await.is_none());
    }

    #[tokio::test]
    async fn failures_are_listed_sorted_with_reasons_withheld() {
        let checks = Checks::new();
        checks.add("zeta", || Ok::<(), &str>(())).unwrap();
        checks.add("alpha", || Err("secret detail")).unwrap();
        checks
            .add_async("mid", || async { Err::<(), _>("also failing") })
            .unwrap();
        let a = aggregated("readyz", &checks, &q("")).await;
        assert_eq!(a.status, 500);
        assert_eq!(
            a.body,
            "[-]alpha failed: reason withheld\n[-]mid failed: reason withheld\n[+]zeta ok\nreadyz check failed\n"
        );
        assert!(!a.body.contains("secret"));
        // The single-check endpoint gives the reason.
        let one = single(&checks, "alpha").await.unwrap();
        assert_eq!(one.status, 500);
        assert_eq!(one.body, "internal server error: secret detail\n");
        assert_eq!(single(&checks, "zeta").await.unwrap().body, "ok");
        assert!(single(&checks, "ping").await.is_none());
    }

    #[tokio::test]
    async fn excluded_checks_are_skipped_and_unknown_excludes_warned() {
        let checks = Checks::new();
        checks.add("bad", || Err("no")).unwrap();
        checks.add("good", || Ok::<(), &str>(())).unwrap();
        let a = aggregated("healthz", &checks, &q("exclude=bad&exclude=nope&verbose=1")).await;
        assert_eq!(a.status, 200);
        assert_eq!(
            a.body,
            "[+]bad excluded: ok\n[+]good ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nhealthz check passed\n"
        );
    }

    #[test]
    fn names_are_validated_and_unique() {
        let checks = Checks::new();
        checks
            .add("informers-synced", || Ok::<(), &str>(()))
            .unwrap();
        for bad in ["", "a/b", "a b", "..", "ümlaut"] {
            assert!(checks.add(bad, || Ok::<(), &str>(())).is_err(), "{bad:?}");
        }
        let dup = checks
            .add("informers-synced", || Ok::<(), &str>(()))
            .unwrap_err();
        assert!(dup.to_string().contains("already exists"), "{dup}");
        assert!(checks.remove("informers-synced"));
        assert!(checks.names().is_empty());
    }
}
