//! ValidatingAdmissionPolicies: cluster-scoped, their spec and match
//! resources defaulted and checked ([`super::policy_checks`]), generation
//! by `spec`, a status subresource, and the `VALIDATIONS PARAMKIND` row.

use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use serde_json::{json, Value};

use crate::machinery::status::Cause;
use crate::machinery::util::Pointer;
use crate::registry::printers::{age, len_at, name, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, Defaults, EXT, SPEC};

pub(crate) static VAP: Builtin = Builtin {
    namespaced: false,
    categories: EXT,
    status: true,
    generation: Some(SPEC),
    printer: Printer {
        columns: &[Name, Int("Validations", 0), Str("ParamKind", 0), Age],
        cells,
    },
    defaults: Defaults::fields(defaults),
    validate,
    ..builtin::<ValidatingAdmissionPolicy>(
        super::GROUP,
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
    )
};

/// `SetDefaults_ValidatingAdmissionPolicySpec` and its match resources.
pub(super) fn defaults(obj: &mut Value) {
    crate::registry::admissionregistration::policy_checks::default(obj, false);
}

fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    super::policy_checks::validate_policy(obj, old)
}

/// The cells of a ValidatingAdmissionPolicy row.
fn cells(o: &Value) -> Vec<Value> {
    let param_kind = match o.at("/spec/paramKind").filter(|k| !k.is_null()) {
        Some(k) => format!("{}/{}", str_at(k, "/apiVersion"), str_at(k, "/kind")),
        None => "<unset>".into(),
    };
    vec![
        name(o),
        json!(len_at(o, "/spec/validations")),
        json!(param_kind),
        age(o),
    ]
}
