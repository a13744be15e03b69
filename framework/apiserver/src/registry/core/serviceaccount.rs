//! ServiceAccounts: no defaults, the `token` subresource (TokenRequest),
//! and the `SECRETS` row.

use k8s_openapi::api::core::v1::ServiceAccount;
use serde_json::{json, Value};

use crate::registry::printers::{age, len_at, name, Col::*, Printer};
use crate::registry::strategy::ExtraSubresource;
use crate::registry::strategy::{builtin, Builtin};

const TOKEN: ExtraSubresource = ExtraSubresource {
    name: "token",
    verbs: &["create"],
    kind: Some(("authentication.k8s.io", "v1", "TokenRequest")),
};

pub(crate) static SERVICEACCOUNT: Builtin = Builtin {
    short_names: &["sa"],
    extra_subresources: &[TOKEN],
    printer: Printer {
        columns: &[Name, Int("Secrets", 0), Age],
        cells,
    },
    ..builtin::<ServiceAccount>("", "serviceaccounts", "ServiceAccount")
};

fn cells(o: &Value) -> Vec<Value> {
    vec![name(o), json!(len_at(o, "/secrets")), age(o)]
}
