//! Request bodies into JSON values, noting what kube-apiserver's strict
//! decoder notes and refusing what its YAML decoder refuses:
//!
//! - JSON: duplicate keys are kept last-wins (as encoding/json does) and
//!   their paths collected, for `fieldValidation` to warn about or refuse
//!   (`duplicate field "metadata.name"`, sigs.k8s.io/json).
//! - YAML: aliases are expanded, but not without bound. go-yaml, which
//!   kube-apiserver's YAML decoder uses, fails a document with
//!   `document contains excessive aliasing` once alias expansion has
//!   produced about 400,000 nodes (`allowedAliasRatio`, yaml.v2
//!   `decode.go`: 99% of up to 400,000 decodes, falling to 10% of
//!   4,000,000). That count is kept here, and so is a bound it lacks: the
//!   decoded document may be at most [`MAX_EXPANSION`] larger than the
//!   body, counted as the JSON it becomes, so a few kilobytes of anchors
//!   and long strings cannot become megabytes.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};
use serde_saphyr::budget::BudgetBreach;

/// Nodes that alias expansion may add (go-yaml's bound, see above).
const MAX_ALIAS_NODES: usize = 400_000;

/// Nodes a document may have: go-yaml's decode count past which at most
/// 10% may come from aliases (`alias_ratio_range_high`), more than a 3 MiB
/// body holds.
const MAX_NODES: usize = 4_000_000;

/// How much larger than its body a YAML document may decode to: one more
/// request body's worth (kube-apiserver's `MaxRequestBodyBytes`, 3 MiB).
/// A document without aliases stays well under it.
const MAX_EXPANSION: usize = 3 * 1024 * 1024;

/// go-yaml's message, which kube-apiserver passes on.
pub(crate) const EXCESSIVE_ALIASING: &str = "yaml: document contains excessive aliasing";

/// A decoded body.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub value: Value,
    /// Paths of keys that appeared twice in one object, in order.
    pub duplicates: Vec<String>,
}

/// Parses a JSON body.
pub(crate) fn json(bytes: &[u8]) -> Result<Decoded, serde_json::Error> {
    let state = State::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Node {
        state: &state,
        at: None,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(Decoded {
        value,
        duplicates: state.duplicates.into_inner(),
    })
}

/// Parses a YAML body, bounding alias expansion.
pub(crate) fn yaml(text: &str) -> Result<Decoded, String> {
    let mut options = serde_saphyr::Options::default();
    options.alias_limits.max_total_replayed_events = MAX_ALIAS_NODES;
    if let Some(budget) = options.budget.as_mut() {
        // go-yaml bounds what aliases add, not documents: no node, event
        // or alias-to-anchor limits below what a 3 MiB body can hold.
        budget.enforce_alias_anchor_ratio = false;
        budget.max_nodes = MAX_NODES;
        budget.max_events = 2 * MAX_NODES;
    }
    let state = State::with_budget(text.len().saturating_add(MAX_EXPANSION));
    let result = serde_saphyr::with_deserializer_from_str_with_options(text, options, |d| {
        Node {
            state: &state,
            at: None,
        }
        .deserialize(d)
    });
    match result {
        Ok(value) => Ok(Decoded {
            value,
            duplicates: state.duplicates.into_inner(),
        }),
        Err(e) => {
            let mut inner = &e;
            while let serde_saphyr::Error::WithSnippet { error, .. }
            | serde_saphyr::Error::AliasError { error, .. } = inner
            {
                inner = error;
            }
            let aliasing = matches!(
                inner,
                serde_saphyr::Error::AliasReplayLimitExceeded { .. }
                    | serde_saphyr::Error::AliasReplayCounterOverflow { .. }
                    | serde_saphyr::Error::AliasExpansionLimitExceeded { .. }
                    | serde_saphyr::Error::AliasReplayStackDepthExceeded { .. }
                    | serde_saphyr::Error::Budget {
                        breach: BudgetBreach::Aliases { .. }
                            | BudgetBreach::AliasAnchorRatio { .. },
                        ..
                    }
            );
            if state.exhausted.get() || aliasing {
                Err(EXCESSIVE_ALIASING.to_owned())
            } else {
                Err(e.to_string())
            }
        }
    }
}

/// What a decode collects and how much it may still produce. Sizes are
/// charged as the JSON a value becomes, roughly (numbers as two bytes).
#[derive(Default)]
struct State {
    duplicates: RefCell<Vec<String>>,
    /// JSON bytes the document may still grow by; `None`: unbounded.
    budget: Cell<Option<usize>>,
    exhausted: Cell<bool>,
}

impl State {
    fn with_budget(bytes: usize) -> Self {
        State {
            budget: Cell::new(Some(bytes)),
            ..State::default()
        }
    }

    fn charge<E: de::Error>(&self, bytes: usize) -> Result<(), E> {
        let Some(left) = self.budget.get() else {
            return Ok(());
        };
        match left.checked_sub(bytes) {
            Some(left) => {
                self.budget.set(Some(left));
                Ok(())
            }
            None => {
                self.exhausted.set(true);
                Err(E::custom(EXCESSIVE_ALIASING))
            }
        }
    }
}

/// A step of the path to a value, linked to its parent (no allocation
/// unless a duplicate is found).
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

struct At<'a> {
    parent: Option<&'a At<'a>>,
    step: Step<'a>,
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.parent {
            p.fmt(f)?;
        }
        match self.step {
            Step::Key(k) if self.parent.is_some() => write!(f, ".{k}"),
            Step::Key(k) => f.write_str(k),
            Step::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// Decodes one value at a place in the document.
struct Node<'s, 'a> {
    state: &'s State,
    at: Option<&'a At<'a>>,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.state.charge(5)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.state.charge(2)?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.state.charge(2)?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.state.charge(2)?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.state.charge(v.len() + 2)?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.state.charge(v.len() + 2)?;
        Ok(Value::String(v))
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.state.charge(4)?;
        Ok(Value::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.state.charge(4)?;
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.state.charge(2)?;
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        loop {
            let at = At {
                parent: self.at,
                step: Step::Index(out.len()),
            };
            let node = Node {
                state: self.state,
                at: Some(&at),
            };
            match seq.next_element_seed(node)? {
                Some(v) => out.push(v),
                None => break,
            }
            self.state.charge(1)?;
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.state.charge(2)?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.state.charge(key.len() + 4)?;
            let at = At {
                parent: self.at,
                step: Step::Key(&key),
            };
            let value = map.next_value_seed(Node {
                state: self.state,
                at: Some(&at),
            })?;
            match out.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(mut slot) => {
                    let at = At {
                        parent: self.at,
                        step: Step::Key(slot.key()),
                    };
                    self.state.duplicates.borrow_mut().push(at.to_string());
                    slot.insert(value);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_duplicates_are_found_with_their_paths() {
        let d = json(br#"{"a": 1, "m": {"x": [{"k": 1, "k": 2}], "x": 3}, "a": 4}"#).unwrap();
        assert_eq!(d.value, serde_json::json!({"a": 4, "m": {"x": 3}}));
        assert_eq!(d.duplicates, ["m.x[0].k", "m.x", "a"]);
        assert!(json(b"{\"a\": 1} x").is_err());
    }

    #[test]
    fn yaml_alias_bombs_are_refused() {
        let mut doc = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let mut prev = 'a';
        for name in 'b'..='i' {
            let refs = vec![format!("*{prev}"); 9].join(",");
            doc.push_str(&format!("{name}: &{name} [{refs}]\n"));
            prev = name;
        }
        assert_eq!(yaml(&doc).unwrap_err(), EXCESSIVE_ALIASING);
        // Long strings behind a few aliases: bounded in bytes.
        let long = "x".repeat(1 << 20);
        let doc = format!("a: &a \"{long}\"\nb: [*a, *a, *a, *a, *a]\n");
        assert_eq!(yaml(&doc).unwrap_err(), EXCESSIVE_ALIASING);
        // Ordinary anchors are fine.
        let d = yaml("base: &b {x: 1}\nuse: *b\n").unwrap();
        assert_eq!(
            d.value,
            serde_json::json!({"base": {"x": 1}, "use": {"x": 1}})
        );
    }
}
