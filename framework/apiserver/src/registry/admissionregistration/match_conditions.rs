//! What a webhook's or an admission policy's `matchConditions` must be to
//! be stored (`ValidateMatchConditions`): at most 64, each with a
//! qualified name unique among them and an expression that compiles.

use std::collections::HashSet;

use serde_json::Value;

use crate::apiextensions::parse_unbound;
use crate::machinery::status::Cause;
use crate::machinery::util;

/// The most conditions one webhook may have.
const MAX_CONDITIONS: usize = 64;

/// The field errors of one webhook's `matchConditions` at `path`
/// (`webhooks[0].matchConditions`).
pub(crate) fn validate(conditions: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(conditions) = conditions.filter(|c| !c.is_null()) else {
        return causes;
    };
    let Some(conditions) = conditions.as_array() else {
        causes.push(Cause::invalid(path, "Invalid value: must be a list"));
        return causes;
    };
    if conditions.len() > MAX_CONDITIONS {
        // Nothing else is checked past the limit.
        causes.push(Cause {
            reason: "FieldValueTooMany".into(),
            message: format!(
                "Too many: {}: must have at most {MAX_CONDITIONS} items",
                conditions.len()
            ),
            field: path.to_owned(),
        });
        return causes;
    }
    // Per condition as `validateMatchCondition` goes: the expression, the
    // name, then whether an earlier condition had the name.
    let mut names = HashSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let expression = condition
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        if expression.is_empty() {
            causes.push(Cause::required(format!("{at}.expression")));
        } else if let Err(e) = parse_unbound(expression) {
            causes.push(Cause::invalid(
                format!("{at}.expression"),
                format!(
                    "Invalid value: {}: compilation failed: {e}",
                    serde_json::to_string(expression).unwrap_or_default()
                ),
            ));
        }
        let name = condition.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(Cause::required(format!("{at}.name")));
            continue;
        }
        if let Err(msg) = qualified_name(name) {
            causes.push(Cause::invalid(
                format!("{at}.name"),
                format!("Invalid value: \"{name}\": {msg}"),
            ));
        }
        if !names.insert(name) {
            causes.push(Cause {
                reason: "FieldValueDuplicate".into(),
                message: format!("Duplicate value: \"{name}\""),
                field: format!("{at}.name"),
            });
        }
    }
    causes
}

/// `IsQualifiedName`, the first message only.
fn qualified_name(name: &str) -> Result<(), String> {
    let part = match name.split_once('/') {
        Some((prefix, part)) => {
            util::validate_name(prefix, util::NameRule::Subdomain)
                .map_err(|e| format!("prefix part {e}"))?;
            part
        }
        None => name,
    };
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if part.is_empty() {
        Err("name part must be non-empty".into())
    } else if part.len() > 63 {
        Err("name part must be no more than 63 characters".into())
    } else if !(alnum(part.chars().next())
        && alnum(part.chars().last())
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        Err("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into())
    } else {
        Ok(())
    }
}
