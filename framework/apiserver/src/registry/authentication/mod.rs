//! The `authentication.k8s.io/v1` group: SelfSubjectReview, answered by
//! the `auth` wing and never stored.

use k8s_openapi::api::authentication::v1::SelfSubjectReview;

use crate::registry::strategy::{builtin, Builtin, CREATE_ONLY};

pub(crate) static SELF_SUBJECT_REVIEW: Builtin = Builtin {
    namespaced: false,
    verbs: CREATE_ONLY,
    ..builtin::<SelfSubjectReview>(
        "authentication.k8s.io",
        "selfsubjectreviews",
        "SelfSubjectReview",
    )
};
