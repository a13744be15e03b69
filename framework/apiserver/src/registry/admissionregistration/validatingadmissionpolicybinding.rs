//! ValidatingAdmissionPolicyBindings: cluster-scoped, their match
//! resources defaulted and the binding checked
//! ([`super::policy_checks`]), generation by `spec`, and the `POLICYNAME
//! PARAMREF` row.

use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
use serde_json::{json, Value};

use crate::machinery::status::Cause;
use crate::machinery::util::Pointer;
use crate::registry::printers::{age, name, selector, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, Defaults, EXT, SPEC};

pub(crate) static VAP_BINDING: Builtin = Builtin {
    namespaced: false,
    categories: EXT,
    generation: Some(SPEC),
    printer: Printer {
        columns: &[Name, Str("PolicyName", 0), Str("ParamRef", 0), Age],
        cells,
    },
    defaults: Defaults::fields(defaults),
    validate,
    ..builtin::<ValidatingAdmissionPolicyBinding>(
        super::GROUP,
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
    )
};

/// The binding's match resources.
pub(super) fn defaults(obj: &mut Value) {
    crate::registry::admissionregistration::policy_checks::default(obj, true);
}

fn validate(obj: &Value, _: Option<&Value>) -> Vec<Cause> {
    super::policy_checks::validate_binding(obj)
}

/// The cells of a ValidatingAdmissionPolicyBinding row.
fn cells(o: &Value) -> Vec<Value> {
    let param_ref = match o.at("/spec/paramRef").filter(|r| !r.is_null()) {
        // Whether the parameter kind is namespaced is not known
        // here: a name without a namespace gets `*`.
        Some(r) if !str_at(r, "/name").is_empty() => {
            let namespace = match str_at(r, "/namespace") {
                "" => "*",
                ns => ns,
            };
            format!("{namespace}/{}", str_at(r, "/name"))
        }
        Some(r) if r.get("selector").is_some_and(|s| !s.is_null()) => selector(r, "/selector"),
        _ => "<unset>".into(),
    };
    vec![
        name(o),
        json!(str_at(o, "/spec/policyName")),
        json!(param_ref),
        age(o),
    ]
}
