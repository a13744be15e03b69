//! Leases: no defaults, a positive `leaseDurationSeconds`
//! (`ValidateLeaseSpec`), created by a PUT
//! (`pkg/registry/coordination/lease/strategy.go`), and the `HOLDER` row.

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::{json, Value};

use crate::machinery::status::Cause;
use crate::registry::printers::{age, name, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin};

pub(crate) static LEASE: Builtin = Builtin {
    printer: Printer {
        columns: &[Name, Str("Holder", 0), Age],
        cells,
    },
    create_on_update: true,
    validate,
    ..builtin::<Lease>("coordination.k8s.io", "leases", "Lease")
};

fn validate(obj: &Value, _: Option<&Value>) -> Vec<Cause> {
    let duration = obj
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64);
    if duration.is_some_and(|d| d <= 0) {
        return vec![Cause::invalid(
            "spec.leaseDurationSeconds",
            "Invalid value: 0: must be greater than 0",
        )];
    }
    Vec::new()
}

fn cells(o: &Value) -> Vec<Value> {
    vec![name(o), json!(str_at(o, "/spec/holderIdentity")), age(o)]
}
