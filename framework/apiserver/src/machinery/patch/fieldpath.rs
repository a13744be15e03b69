//! Field paths and field sets as structured-merge-diff defines them: the
//! path elements (`f:name`, `k:{...}`, `v:...`, `i:N`), their total order, the
//! set algebra server-side apply computes ownership with, and the `FieldsV1`
//! wire encoding of `metadata.managedFields[].fieldsV1`
//! (sigs.k8s.io/structured-merge-diff `fieldpath/{element,set,serialize,serialize-pe}.go`).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// A `fieldsV1` document or path element that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSetError {
    /// A path element key shorter than `x:`.
    #[error("key must be 2 characters long: {0:?}")]
    TooShort(String),
    /// A path element key whose second character is not `:`.
    #[error("missing colon: {0}")]
    MissingColon(String),
    /// A `k:`, `v:` or `i:` element whose payload does not parse.
    #[error("parsing key as path element: {0}")]
    BadElement(String),
    /// A node of the document that is not a JSON object.
    #[error("fieldsV1 nodes must be objects, got {0}")]
    NotAnObject(String),
}

/// One step of a field path.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of an object (struct field or map key): `f:name`.
    Field(String),
    /// An item of an associative list, by its key fields sorted by name:
    /// `k:{"name":"nginx"}`.
    Key(Vec<(String, Value)>),
    /// An item of a set (a list of scalars), by value: `v:"foo"`.
    Value(Value),
    /// An item of an atomic list, by position: `i:0`.
    Index(usize),
}

impl PathElement {
    /// A field element.
    pub fn field(name: impl Into<String>) -> Self {
        PathElement::Field(name.into())
    }

    /// A key element; the fields are sorted by name as the wire form requires.
    pub fn key(fields: impl IntoIterator<Item = (String, Value)>) -> Self {
        let mut fields: Vec<(String, Value)> = fields.into_iter().collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    /// The `fieldsV1` key for this element (`f:`, `k:`, `v:` or `i:` form).
    pub fn to_key_string(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                // Fields are kept sorted, so the object is emitted in key order
                // whether or not serde_json preserves insertion order.
                let mut map = Map::new();
                for (name, value) in fields {
                    map.insert(name.clone(), value.clone());
                }
                format!("k:{}", Value::Object(map))
            }
            PathElement::Value(value) => format!("v:{value}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `fieldsV1` key. Unknown element kinds yield `Ok(None)`: like
    /// structured-merge-diff, they are dropped rather than rejected.
    pub fn parse(key: &str) -> Result<Option<PathElement>, FieldSetError> {
        let mut chars = key.char_indices();
        let kind = match chars.next() {
            Some((_, c)) => c,
            None => return Err(FieldSetError::TooShort(key.to_string())),
        };
        match chars.next() {
            Some((_, ':')) => {}
            Some(_) => return Err(FieldSetError::MissingColon(key.to_string())),
            None => return Err(FieldSetError::TooShort(key.to_string())),
        }
        let rest = key.get(kind.len_utf8() + 1..).unwrap_or("");
        match kind {
            'f' => Ok(Some(PathElement::Field(rest.to_string()))),
            'v' => serde_json::from_str::<Value>(rest)
                .map(|v| Some(PathElement::Value(v)))
                .map_err(|e| FieldSetError::BadElement(format!("{key}: {e}"))),
            'k' => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(map)) => Ok(Some(PathElement::key(map))),
                Ok(other) => Err(FieldSetError::BadElement(format!(
                    "{key}: key must be an object, got {other}"
                ))),
                Err(e) => Err(FieldSetError::BadElement(format!("{key}: {e}"))),
            },
            'i' => rest
                .parse::<usize>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|e| FieldSetError::BadElement(format!("{key}: {e}"))),
            _ => Ok(None),
        }
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    /// Fields before keys before values before indexes, as in
    /// structured-merge-diff's `PathElement.Compare`.
    fn cmp(&self, other: &Self) -> Ordering {
        use PathElement::*;
        match (self, other) {
            (Field(a), Field(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Field(_), _) => Ordering::Less,
            (_, Field(_)) => Ordering::Greater,
            (Key(a), Key(b)) => compare_field_lists(a, b),
            (Key(_), _) => Ordering::Less,
            (_, Key(_)) => Ordering::Greater,
            (Value(a), Value(b)) => compare_values(a, b),
            (Value(_), _) => Ordering::Less,
            (_, Value(_)) => Ordering::Greater,
            (Index(a), Index(b)) => a.cmp(b),
        }
    }
}

impl fmt::Display for PathElement {
    /// The human form used in conflict messages: `.name`, `[name="x"]`,
    /// `[="x"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_str("[")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{name}={value}")?;
                }
                f.write_str("]")
            }
            PathElement::Value(value) => write!(f, "[={value}]"),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the object root, printable as `.spec.containers[name="c"].image`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Path(pub Vec<PathElement>);

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

/// Compares two key field lists lexically: name, then value, shorter first.
fn compare_field_lists(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b.iter()) {
        let c = an.as_bytes().cmp(bn.as_bytes());
        if c != Ordering::Equal {
            return c;
        }
        let c = compare_values(av, bv);
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// A total order on JSON values: numbers (compared numerically, integers and
/// floats together), strings, booleans, lists, maps, null — the order of
/// structured-merge-diff's `value.Compare`.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x.cmp(&y)
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x.cmp(&y)
            } else {
                let x = x.as_f64().unwrap_or(f64::NAN);
                let y = y.as_f64().unwrap_or(f64::NAN);
                x.partial_cmp(&y).unwrap_or(Ordering::Equal)
            }
        }
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (xv, yv) in x.iter().zip(y.iter()) {
                let c = compare_values(xv, yv);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<(&String, &Value)> = x.iter().collect();
            let mut ys: Vec<(&String, &Value)> = y.iter().collect();
            xs.sort_by(|a, b| a.0.cmp(b.0));
            ys.sort_by(|a, b| a.0.cmp(b.0));
            for ((xk, xv), (yk, yv)) in xs.iter().zip(ys.iter()) {
                let c = xk.as_bytes().cmp(yk.as_bytes());
                if c != Ordering::Equal {
                    return c;
                }
                let c = compare_values(xv, yv);
                if c != Ordering::Equal {
                    return c;
                }
            }
            xs.len().cmp(&ys.len())
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Deep equality of JSON values with numbers compared numerically (`1 == 1.0`).
pub fn values_equal(a: &Value, b: &Value) -> bool {
    compare_values(a, b) == Ordering::Equal
}

/// A set of field paths, stored as a tree: `members` are the paths that end
/// here, `children` hold the paths that continue. A node can be both a member
/// and have children (serialized with a `"."` entry). Invariant: no child set
/// is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set of the given paths.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a [PathElement]>) -> Self {
        let mut set = Self::new();
        for p in paths {
            set.insert(p);
        }
        set
    }

    /// Adds a path. The empty path (the whole object) is never tracked.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether the path is a member (not merely a prefix of one).
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether the set has no members at any depth.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// The number of member paths.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(FieldSet::len).sum::<usize>()
    }

    /// The elements that are members at this level.
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The subsets below this level, by their first element.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    /// The subset of paths that begin with `pe`, without `pe`.
    pub fn with_prefix(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    /// Whether `pe` is a member at this level.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    pub(crate) fn insert_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    pub(crate) fn insert_child(&mut self, pe: PathElement, child: FieldSet) {
        if !child.is_empty() {
            self.children.insert(pe, child);
        }
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// Adds every path of `other` to `self`.
    pub fn union_with(&mut self, other: &FieldSet) {
        self.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            match self.children.get_mut(pe) {
                Some(mine) => mine.union_with(child),
                None => {
                    self.children.insert(pe.clone(), child.clone());
                }
            }
        }
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    children.insert(pe.clone(), both);
                }
            }
        }
        FieldSet { members, children }
    }

    /// Paths of `self` that are not paths of `other`. Like
    /// structured-merge-diff, a member of `other` does not remove the paths
    /// below it: `parent - child = parent`, `child - parent = child`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            match other.children.get(pe) {
                Some(theirs) => {
                    let rest = child.difference(theirs);
                    if !rest.is_empty() {
                        children.insert(pe.clone(), rest);
                    }
                }
                None => {
                    children.insert(pe.clone(), child.clone());
                }
            }
        }
        FieldSet { members, children }
    }

    /// Like [`difference`](Self::difference), but a member of `other` also
    /// removes every path below it.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            match other.children.get(pe) {
                Some(theirs) => {
                    let rest = child.recursive_difference(theirs);
                    if !rest.is_empty() {
                        children.insert(pe.clone(), rest);
                    }
                }
                None => {
                    children.insert(pe.clone(), child.clone());
                }
            }
        }
        FieldSet { members, children }
    }

    /// Every member path, members of a level before the paths below it, each
    /// level in element order (structured-merge-diff's `Set.Iterate`).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect_paths(&mut prefix, &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for pe in &self.members {
            let mut p = prefix.clone();
            p.push(pe.clone());
            out.push(Path(p));
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The `fieldsV1` form: an object keyed by serialized path elements,
    /// `{}` for a member leaf, and a `"."` entry for a member with children.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        for pe in &self.members {
            if !self.children.contains_key(pe) {
                map.insert(pe.to_key_string(), Value::Object(Map::new()));
            }
        }
        for (pe, child) in &self.children {
            let mut inner = match child.to_fields_v1() {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            if self.members.contains(pe) {
                inner.insert(".".to_string(), Value::Object(Map::new()));
            }
            map.insert(pe.to_key_string(), Value::Object(inner));
        }
        Value::Object(map)
    }

    /// Parses a `fieldsV1` document.
    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, FieldSetError> {
        let map = match value {
            Value::Object(map) => map,
            Value::Null => return Ok(FieldSet::new()),
            other => return Err(FieldSetError::NotAnObject(other.to_string())),
        };
        let (set, _) = Self::read_node(map)?;
        Ok(set)
    }

    /// Returns the set below a node and whether the node itself is a member.
    fn read_node(map: &Map<String, Value>) -> Result<(FieldSet, bool), FieldSetError> {
        let mut set = FieldSet::new();
        let mut is_member = false;
        for (key, value) in map {
            if key == "." {
                is_member = true;
                continue;
            }
            let Some(pe) = PathElement::parse(key)? else {
                continue;
            };
            let child_map = match value {
                Value::Object(m) => m,
                other => return Err(FieldSetError::NotAnObject(other.to_string())),
            };
            let (grandchildren, child_is_member) = Self::read_node(child_map)?;
            if child_is_member {
                set.members.insert(pe.clone());
            }
            if !grandchildren.is_empty() {
                set.children.insert(pe, grandchildren);
            }
        }
        // `{}` (no children, no ".") marks a leaf member.
        if set.is_empty() {
            is_member = true;
        }
        Ok((set, is_member))
    }
}
