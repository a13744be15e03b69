//! What a webhook answers: a [`Verdict`] (allowed, maybe with a JSON patch,
//! and warnings) or a [`Denial`] carrying the `Status` kube-apiserver
//! shows the client (code, reason, message and field causes).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};
use serde_json::Value;

/// Why a request is refused: the `Status` kube-apiserver returns to the
/// client (its code becomes the HTTP status; the message is shown as
/// `admission webhook "NAME" denied the request: MESSAGE`), and warnings
/// shown with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Denial {
    /// The status sent back (boxed: a denial travels in `Result`s).
    pub status: Box<Status>,
    /// Warnings sent with the denial.
    pub warnings: Vec<String>,
}

impl Denial {
    /// A denial with an explicit code (raised to 400 by kube-apiserver if
    /// lower), reason (e.g. `Forbidden`, `Invalid`) and message.
    pub fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Denial {
            status: Box::new(Status {
                code: Some(i32::from(code)),
                message: Some(message.into()),
                reason: Some(reason.into()),
                status: Some("Failure".into()),
                ..Status::default()
            }),
            warnings: Vec::new(),
        }
    }

    /// 403 Forbidden with `message` (controller-runtime's `Denied`).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Denial::new(403, "Forbidden", message)
    }

    /// 422 Invalid, as `apierrors.NewInvalid` makes it: `qualified_kind`
    /// is the kind with its group (`CronJob.batch.tutorial.kubebuilder.io`,
    /// or just `Pod` for the core group). The message is
    /// `<qualified kind> "<name>" is invalid: ` and the causes (add them
    /// with [`with_cause`](Self::with_cause)); the status details carry the
    /// kind and the group apart, split at the first dot as
    /// `schema.ParseGroupKind` splits them.
    pub fn invalid(qualified_kind: impl Into<String>, name: impl Into<String>) -> Self {
        let qualified_kind = qualified_kind.into();
        let name = name.into();
        let (kind, group) = match qualified_kind.split_once('.') {
            Some((kind, group)) => (kind.to_owned(), Some(group.to_owned())),
            None => (qualified_kind.clone(), None),
        };
        let mut denial = Denial::new(
            422,
            "Invalid",
            format!("{qualified_kind} {name:?} is invalid"),
        );
        denial.status.details = Some(StatusDetails {
            kind: Some(kind),
            group,
            name: Some(name),
            causes: Some(Vec::new()),
            ..StatusDetails::default()
        });
        denial
    }

    /// Adds a field cause: `field` is a path such as `spec.replicas`,
    /// `reason` one of `FieldValueInvalid`, `FieldValueRequired`,
    /// `FieldValueForbidden`, ... For a denial made with
    /// [`invalid`](Self::invalid), the message lists every cause as
    /// kube-apiserver does.
    pub fn with_cause(
        mut self,
        field: impl Into<String>,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        let details = self
            .status
            .details
            .get_or_insert_with(StatusDetails::default);
        details
            .causes
            .get_or_insert_with(Vec::new)
            .push(StatusCause {
                field: Some(field.into()),
                reason: Some(reason.into()),
                message: Some(message.into()),
            });
        if self.status.reason.as_deref() == Some("Invalid") {
            let causes = details.causes.as_deref().unwrap_or_default();
            // `ErrorList.ToAggregate` lists each message once.
            let mut listed: Vec<String> = Vec::with_capacity(causes.len());
            for c in causes {
                let text = format!(
                    "{}: {}",
                    c.field.as_deref().unwrap_or_default(),
                    c.message.as_deref().unwrap_or_default()
                );
                if !listed.contains(&text) {
                    listed.push(text);
                }
            }
            let kind = details.kind.as_deref().unwrap_or_default();
            let qualified_kind = match details.group.as_deref() {
                Some(group) if !group.is_empty() => format!("{kind}.{group}"),
                _ => kind.to_owned(),
            };
            let name = details.name.as_deref().unwrap_or_default();
            let listed = if listed.len() == 1 {
                listed.swap_remove(0)
            } else {
                format!("[{}]", listed.join(", "))
            };
            self.status.message = Some(format!("{qualified_kind} {name:?} is invalid: {listed}"));
        }
        self
    }

    /// Adds a warning shown to the client with the denial.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }
}

impl From<crate::Error> for Denial {
    /// An API error passes its `Status` through (controller-runtime does
    /// the same with an `APIStatus` error); any other error is a 500.
    fn from(error: crate::Error) -> Self {
        match error.status() {
            Some(status) => Denial::new(status.code, status.reason.clone(), status.message.clone()),
            None => Denial::new(500, "InternalError", error.to_string()),
        }
    }
}

/// A webhook's answer to one admission call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    /// Why the request is refused; `None` allows it.
    pub denial: Option<Denial>,
    /// The JSON patch to apply (mutating webhooks only).
    pub patch: Option<json_patch::Patch>,
    /// Warnings for the client (`Warning` headers; kubectl prints them).
    pub warnings: Vec<String>,
}

impl Verdict {
    /// Allows the request unchanged.
    pub fn allowed() -> Self {
        Verdict::default()
    }

    /// Refuses the request.
    pub fn denied(denial: Denial) -> Self {
        let warnings = denial.warnings.clone();
        Verdict {
            denial: Some(denial),
            patch: None,
            warnings,
        }
    }

    /// Allows the request with the object changed from `before` to
    /// `after`: the JSON patch between them (none when equal).
    pub fn patched(before: &Value, after: &Value) -> Self {
        let patch = json_patch::diff(before, after);
        Verdict {
            patch: (!patch.0.is_empty()).then_some(patch),
            ..Verdict::default()
        }
    }

    /// Adds warnings.
    pub fn with_warnings(mut self, warnings: impl IntoIterator<Item = String>) -> Self {
        self.warnings.extend(warnings);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_splits_the_group_from_the_kind_as_new_invalid_does() {
        let denial = Denial::invalid("CronJob.batch.tutorial.kubebuilder.io", "nightly")
            .with_cause(
                "spec.schedule",
                "FieldValueInvalid",
                "Invalid value: \"x\": bad",
            )
            .with_cause("metadata.name", "FieldValueRequired", "Required value")
            .with_cause("metadata.name", "FieldValueRequired", "Required value");
        let details = denial.status.details.as_ref().expect("details");
        assert_eq!(details.kind.as_deref(), Some("CronJob"));
        assert_eq!(
            details.group.as_deref(),
            Some("batch.tutorial.kubebuilder.io")
        );
        assert_eq!(details.name.as_deref(), Some("nightly"));
        assert_eq!(details.causes.as_ref().map(Vec::len), Some(3));
        assert_eq!(denial.status.code, Some(422));
        assert_eq!(denial.status.reason.as_deref(), Some("Invalid"));
        assert_eq!(
            denial.status.message.as_deref(),
            Some(
                "CronJob.batch.tutorial.kubebuilder.io \"nightly\" is invalid: \
                 [spec.schedule: Invalid value: \"x\": bad, metadata.name: Required value]"
            )
        );
    }

    #[test]
    fn a_core_kind_has_no_group() {
        let denial = Denial::invalid("Pod", "p").with_cause(
            "spec.containers",
            "FieldValueRequired",
            "Required value",
        );
        let details = denial.status.details.as_ref().expect("details");
        assert_eq!(details.kind.as_deref(), Some("Pod"));
        assert_eq!(details.group, None);
        assert_eq!(
            denial.status.message.as_deref(),
            Some("Pod \"p\" is invalid: spec.containers: Required value")
        );
        // Before any cause, the message is NewInvalid's without errors.
        assert_eq!(
            Denial::invalid("Pod", "p").status.message.as_deref(),
            Some("Pod \"p\" is invalid")
        );
    }
}
