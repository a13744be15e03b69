//! Secrets: type `Opaque` and `stringData` folded into `data`, the `type`
//! field selector, and the `TYPE DATA` row.

use k8s_openapi::api::core::v1::Secret;
use serde_json::{json, Value};

use crate::registry::fields::{fill, D};
use crate::registry::printers::{age, len_at, name, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin, Defaults, FieldLabelConversion};
use base64::Engine;

pub(crate) static SECRET: Builtin = Builtin {
    field_label_conversion: FieldLabelConversion::Own,
    field_labels: &[("type", "type")],
    printer: Printer {
        columns: &[Name, Str("Type", 0), Int("Data", 0), Age],
        cells,
    },
    defaults: Defaults::fields(defaults),
    ..builtin::<Secret>("", "secrets", "Secret")
};

/// `SetDefaults_Secret`, and `stringData` merged into `data` (base64) and
/// dropped, as the v1 conversion does on every write.
pub(super) fn defaults(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    fill(map, &[("type", D::Str("Opaque"))]);
    if let Some(Value::Object(sd)) = map.remove("stringData") {
        let data = map
            .entry("data")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(data) = data.as_object_mut() {
            for (k, v) in sd {
                if let Some(s) = v.as_str() {
                    data.insert(
                        k,
                        json!(base64::engine::general_purpose::STANDARD.encode(s)),
                    );
                }
            }
        }
    }
}

/// The cells of a Secret row.
fn cells(o: &Value) -> Vec<Value> {
    vec![
        name(o),
        json!(str_at(o, "/type")),
        json!(len_at(o, "/data")),
        age(o),
    ]
}
