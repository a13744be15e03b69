//! The `authorization.k8s.io/v1` group: the four access reviews,
//! create-only, answered by the `auth` wing and never stored. Only the
//! local review is namespaced.

use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview, SubjectAccessReview,
};

use crate::registry::strategy::{builtin, Builtin, CREATE_ONLY};

const GROUP: &str = "authorization.k8s.io";

pub(crate) static LOCAL_SUBJECT_ACCESS_REVIEW: Builtin = Builtin {
    verbs: CREATE_ONLY,
    ..builtin::<LocalSubjectAccessReview>(
        GROUP,
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
    )
};

pub(crate) static SELF_SUBJECT_ACCESS_REVIEW: Builtin = Builtin {
    namespaced: false,
    verbs: CREATE_ONLY,
    ..builtin::<SelfSubjectAccessReview>(
        GROUP,
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
    )
};

pub(crate) static SELF_SUBJECT_RULES_REVIEW: Builtin = Builtin {
    namespaced: false,
    verbs: CREATE_ONLY,
    ..builtin::<SelfSubjectRulesReview>(GROUP, "selfsubjectrulesreviews", "SelfSubjectRulesReview")
};

pub(crate) static SUBJECT_ACCESS_REVIEW: Builtin = Builtin {
    namespaced: false,
    verbs: CREATE_ONLY,
    ..builtin::<SubjectAccessReview>(GROUP, "subjectaccessreviews", "SubjectAccessReview")
};
