//! EndpointSlices: a required `addressType` (`IPv4`, `IPv6` or `FQDN`,
//! immutable), and the `ADDRESSTYPE PORTS ENDPOINTS` row. Written by the
//! EndpointSlice controller for Services with a selector, and for the
//! `kubernetes` Service by the server itself. Source:
//! `pkg/apis/discovery/validation`, `printEndpointSlice` (Kubernetes 1.35).

use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::{json, Value};

use crate::machinery::status::Cause;
use crate::registry::printers::{age, name, str_at, Col::*, Printer};
use crate::registry::strategy::{builtin, Builtin};

pub(crate) static ENDPOINTSLICE: Builtin = Builtin {
    printer: Printer {
        columns: &[
            Name,
            Str("AddressType", 0),
            Str("Ports", 0),
            Str("Endpoints", 0),
            Age,
        ],
        cells,
    },
    validate,
    ..builtin::<EndpointSlice>("discovery.k8s.io", "endpointslices", "EndpointSlice")
};

fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let kind = obj.get("addressType").and_then(Value::as_str);
    match kind {
        None | Some("") => return vec![Cause::required("addressType")],
        Some("IPv4" | "IPv6" | "FQDN") => {}
        Some(other) => {
            return vec![Cause::invalid(
                "addressType",
                format!(
                "Unsupported value: \"{other}\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""
            ),
            )]
        }
    }
    if let Some(old) = old {
        if old.get("addressType") != obj.get("addressType") {
            return vec![Cause::invalid(
                "addressType",
                "Invalid value: field is immutable",
            )];
        }
    }
    Vec::new()
}

/// At most three, then how many more (`formatEndpointSlice...`).
fn listed(items: Vec<String>) -> String {
    if items.is_empty() {
        return "<unset>".into();
    }
    let shown = items.iter().take(3).cloned().collect::<Vec<_>>().join(",");
    if items.len() > 3 {
        format!("{shown} + {} more...", items.len() - 3)
    } else {
        shown
    }
}

fn cells(o: &Value) -> Vec<Value> {
    let ports = o
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("port").and_then(Value::as_i64).map(|n| n.to_string()))
        .collect();
    let addresses = o
        .get("endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|e| {
            e.get("addresses")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    vec![
        name(o),
        json!(str_at(o, "/addressType")),
        json!(listed(ports)),
        json!(listed(addresses)),
        age(o),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_type_is_required_known_and_immutable_and_rows_list_three() {
        assert_eq!(validate(&json!({}), None).len(), 1);
        assert_eq!(validate(&json!({"addressType": "IPX"}), None).len(), 1);
        let v4 = json!({"addressType": "IPv4"});
        assert!(validate(&v4, None).is_empty());
        assert_eq!(
            validate(&json!({"addressType": "IPv6"}), Some(&v4)).len(),
            1
        );
        let endpoints: Vec<Value> = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
            .map(|a| json!({"addresses": [a]}))
            .into();
        let slice = json!({"metadata": {"name": "s"}, "addressType": "IPv4",
            "ports": [{"port": 80}], "endpoints": endpoints});
        let row = cells(&slice);
        assert_eq!(row[2], "80");
        assert_eq!(row[3], "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...");
        assert_eq!(cells(&json!({}))[3], "<unset>");
    }
}
