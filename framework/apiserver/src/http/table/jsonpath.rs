//! The JSONPath subset printer columns use: `.a.b`, `['a']`, `[0]`,
//! `[*]` and `[?(@.k=="v")]`.

use serde_json::Value;

/// Evaluates `path` against `root`: every value it selects.
pub(crate) fn json_path<'a>(root: &'a Value, path: &str) -> Vec<&'a Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut cur: Vec<&Value> = vec![root];
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'$' => i += 1,
            b'.' => {
                let start = i + 1;
                let mut end = start;
                while end < bytes.len() && bytes[end] != b'.' && bytes[end] != b'[' {
                    end += 1;
                }
                let field = &path[start..end];
                if !field.is_empty() {
                    cur = cur.into_iter().filter_map(|v| v.get(field)).collect();
                }
                i = end;
            }
            b'[' => {
                let Some(close) = find_close(path, i) else {
                    return Vec::new();
                };
                let inner = path[i + 1..close].trim();
                cur = step_bracket(cur, inner);
                i = close + 1;
            }
            _ => {
                // A leading field name without a dot.
                let start = i;
                let mut end = start;
                while end < bytes.len() && bytes[end] != b'.' && bytes[end] != b'[' {
                    end += 1;
                }
                let field = &path[start..end];
                cur = cur.into_iter().filter_map(|v| v.get(field)).collect();
                i = end;
            }
        }
    }
    cur
}

fn find_close(path: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    for (j, c) in path[open..].char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + j);
                }
            }
            _ => {}
        }
    }
    None
}

fn step_bracket<'a>(cur: Vec<&'a Value>, inner: &str) -> Vec<&'a Value> {
    if inner == "*" {
        return cur
            .into_iter()
            .flat_map(|v| match v {
                Value::Array(a) => a.iter().collect::<Vec<_>>(),
                Value::Object(m) => m.values().collect(),
                _ => Vec::new(),
            })
            .collect();
    }
    if let Ok(n) = inner.parse::<i64>() {
        return cur
            .into_iter()
            .filter_map(|v| {
                let a = v.as_array()?;
                let idx = if n < 0 { a.len() as i64 + n } else { n };
                usize::try_from(idx).ok().and_then(|i| a.get(i))
            })
            .collect();
    }
    if let Some(q) = inner
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
    {
        return cur.into_iter().filter_map(|v| v.get(q)).collect();
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|s| s.strip_suffix(')')) {
        let (lhs, rhs, negate) = if let Some((l, r)) = filter.split_once("!=") {
            (l, r, true)
        } else if let Some((l, r)) = filter.split_once("==") {
            (l, r, false)
        } else {
            return Vec::new();
        };
        let field = lhs.trim().trim_start_matches('@').trim_start_matches('.');
        let want = rhs.trim().trim_matches('"').trim_matches('\'');
        return cur
            .into_iter()
            .flat_map(|v| {
                v.as_array()
                    .map(|a| a.iter().collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .filter(|item| {
                let got = json_path(item, &format!(".{field}"));
                let text = got.first().map(|g| match g {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                (text.as_deref() == Some(want)) != negate
            })
            .collect();
    }
    Vec::new()
}
