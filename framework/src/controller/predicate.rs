//! Predicates: filters that decide which watch events enqueue a reconcile,
//! with controller-runtime's semantics (`pkg/predicate`).
//!
//! A [`Predicate<K>`] answers four questions, one per event kind; each
//! defaults to `true`, as controller-runtime's `Funcs` does when a function
//! is unset. The built-in change detectors ([`GenerationChanged`],
//! [`ResourceVersionChanged`], [`LabelChanged`], [`AnnotationChanged`]) only
//! filter updates and let creates, deletes and generic events through;
//! [`LabelSelector`] filters every event (the new object on update).
//! [`and`], [`or`], [`not`], [`all`] and [`any`] combine them, and
//! [`from_fn`], [`from_update`] and [`Funcs`] turn closures into predicates.
//!
//! Missing values compare the way Go's accessors return them: an absent
//! `generation` is `0`, an absent `resourceVersion` is `""`, and absent
//! labels or annotations equal an empty map (Go's `maps.Equal(nil, {})`).
//! Controller-runtime also rejects update events whose old or new object is
//! nil; here both objects are references, so that case cannot be expressed
//! and the event handler is where a missing object must be dropped.
//!
//! ```
//! use kubeforge::controller::predicate::{self, GenerationChanged, LabelChanged, PredicateExt};
//! use kubeforge::k8s_openapi::api::apps::v1::Deployment;
//!
//! // Reconcile on spec changes or label changes, but never for objects
//! // labelled `skip=true`.
//! let filter = GenerationChanged
//!     .or(LabelChanged)
//!     .and(predicate::from_fn(|d: &Deployment| {
//!         d.metadata.labels.as_ref().and_then(|l| l.get("skip")).map(String::as_str) != Some("true")
//!     }));
//! # let _: &dyn predicate::Predicate<Deployment> = &filter;
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use kube_core::{Resource, Selector, SelectorExt as _};

/// Decides whether an event about a `K` should enqueue a reconcile.
///
/// Every method defaults to `true`. Predicates are shared between the
/// informer's handler and the controller, hence `Send + Sync`.
pub trait Predicate<K>: Send + Sync {
    /// Whether an object appearing (informer add) passes.
    fn create(&self, obj: &K) -> bool {
        let _ = obj;
        true
    }

    /// Whether a change from `old` to `new` passes.
    fn update(&self, old: &K, new: &K) -> bool {
        let _ = (old, new);
        true
    }

    /// Whether an object disappearing passes (`obj` is its last known state).
    fn delete(&self, obj: &K) -> bool {
        let _ = obj;
        true
    }

    /// Whether an event from outside the cluster passes: an object a
    /// [`Channel`](super::source::Channel) delivered.
    fn generic(&self, obj: &K) -> bool {
        let _ = obj;
        true
    }

    /// Dispatches `event` to the method for its kind.
    fn matches(&self, event: Event<'_, K>) -> bool {
        match event {
            Event::Create(obj) => self.create(obj),
            Event::Update { old, new } => self.update(old, new),
            Event::Delete(obj) => self.delete(obj),
            Event::Generic(obj) => self.generic(obj),
        }
    }

    /// Erases the type, for lists of predicates ([`all`], [`any`]).
    fn boxed(self) -> BoxPredicate<K>
    where
        Self: Sized + 'static,
    {
        Box::new(self)
    }
}

/// One watch event, for evaluating a predicate with a single call.
#[derive(Debug)]
pub enum Event<'a, K> {
    /// An object appeared.
    Create(&'a K),
    /// An object changed.
    Update {
        /// The state before the change.
        old: &'a K,
        /// The state after the change.
        new: &'a K,
    },
    /// An object disappeared.
    Delete(&'a K),
    /// An event from outside the cluster.
    Generic(&'a K),
}

impl<K> Clone for Event<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Event<'_, K> {}

/// Chaining combinators: `a.and(b)`, `a.or(b)`, `a.not()`.
///
/// Every predicate has them, the built-in ones and your own alike: the
/// trait is implemented for every `Send + Sync` type. It has no type
/// parameter, so chains need no annotations before the object type is
/// known (which is also why it cannot be limited to types implementing
/// [`Predicate`]: that trait's parameter is the object type). With
/// `std::ops::Not` in scope too, call `PredicateExt::not(p)` or use
/// [`not`].
///
/// ```
/// use kubeforge::controller::predicate::{GenerationChanged, Predicate, PredicateExt};
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
///
/// /// Only config maps that carry data.
/// struct HasData;
///
/// impl Predicate<ConfigMap> for HasData {
///     fn create(&self, cm: &ConfigMap) -> bool {
///         cm.data.as_ref().is_some_and(|d| !d.is_empty())
///     }
/// }
///
/// let filter = HasData.and(GenerationChanged);
/// assert!(!filter.create(&ConfigMap::default()));
/// ```
pub trait PredicateExt: Sized {
    /// Both `self` and `other` must pass (controller-runtime's `And`).
    fn and<P>(self, other: P) -> And<Self, P> {
        And(self, other)
    }

    /// Either `self` or `other` must pass (controller-runtime's `Or`).
    fn or<P>(self, other: P) -> Or<Self, P> {
        Or(self, other)
    }

    /// The opposite of `self` for every event kind (controller-runtime's
    /// `Not`).
    fn not(self) -> Not<Self> {
        Not(self)
    }
}

impl<P: Send + Sync> PredicateExt for P {}

/// A type-erased predicate.
pub type BoxPredicate<K> = Box<dyn Predicate<K>>;

impl<K, P: Predicate<K> + ?Sized> Predicate<K> for Box<P> {
    fn create(&self, obj: &K) -> bool {
        (**self).create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        (**self).update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        (**self).delete(obj)
    }
    fn generic(&self, obj: &K) -> bool {
        (**self).generic(obj)
    }
}

impl<K, P: Predicate<K> + ?Sized> Predicate<K> for Arc<P> {
    fn create(&self, obj: &K) -> bool {
        (**self).create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        (**self).update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        (**self).delete(obj)
    }
    fn generic(&self, obj: &K) -> bool {
        (**self).generic(obj)
    }
}

impl<K, P: Predicate<K> + ?Sized> Predicate<K> for &P {
    fn create(&self, obj: &K) -> bool {
        (**self).create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        (**self).update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        (**self).delete(obj)
    }
    fn generic(&self, obj: &K) -> bool {
        (**self).generic(obj)
    }
}

// ----- change detectors -----------------------------------------------------

/// Passes updates whose `metadata.generation` changed, i.e. spec changes on
/// types with a status subresource; passes every create, delete and generic
/// event (controller-runtime's `GenerationChangedPredicate`).
///
/// Status-only and metadata-only updates are filtered out, so a controller
/// using it alone does not repair a status someone else overwrote. Some
/// built-in kinds bump the generation on other writes too (Deployments on
/// annotation changes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GenerationChanged;

impl<K: Resource> Predicate<K> for GenerationChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        // Go's GetGeneration() is 0 when unset.
        old.meta().generation.unwrap_or(0) != new.meta().generation.unwrap_or(0)
    }
}

/// Passes updates whose `metadata.resourceVersion` changed, filtering the
/// periodic resyncs that replay an unchanged object; passes every create,
/// delete and generic event (controller-runtime's
/// `ResourceVersionChangedPredicate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceVersionChanged;

impl<K: Resource> Predicate<K> for ResourceVersionChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        old.meta().resource_version.as_deref().unwrap_or("")
            != new.meta().resource_version.as_deref().unwrap_or("")
    }
}

/// Passes updates whose labels changed; passes every create, delete and
/// generic event (controller-runtime's `LabelChangedPredicate`). Usually
/// combined with [`GenerationChanged`] through [`or`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LabelChanged;

impl<K: Resource> Predicate<K> for LabelChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        !maps_equal(old.meta().labels.as_ref(), new.meta().labels.as_ref())
    }
}

/// Passes updates whose annotations changed; passes every create, delete
/// and generic event (controller-runtime's `AnnotationChangedPredicate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnnotationChanged;

impl<K: Resource> Predicate<K> for AnnotationChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        !maps_equal(
            old.meta().annotations.as_ref(),
            new.meta().annotations.as_ref(),
        )
    }
}

/// Go's `maps.Equal`: a nil map equals an empty one.
fn maps_equal(a: Option<&BTreeMap<String, String>>, b: Option<&BTreeMap<String, String>>) -> bool {
    let a = a.filter(|m| !m.is_empty());
    let b = b.filter(|m| !m.is_empty());
    a == b
}

/// Passes objects whose labels match a selector, for every event kind (the
/// new object on update), as controller-runtime's `LabelSelectorPredicate`.
/// An empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Selector);

impl LabelSelector {
    /// A predicate matching `selector`.
    pub fn new(selector: Selector) -> Self {
        Self(selector)
    }

    fn selects<K: Resource>(&self, obj: &K) -> bool {
        match obj.meta().labels.as_ref() {
            Some(labels) => self.0.matches(labels),
            None => self.0.matches(&BTreeMap::new()),
        }
    }
}

impl From<Selector> for LabelSelector {
    fn from(selector: Selector) -> Self {
        Self(selector)
    }
}

impl TryFrom<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector> for LabelSelector {
    type Error = kube_core::ParseExpressionError;

    /// Converts a `metav1.LabelSelector`; an unknown operator or an `In`
    /// without values is an error, as in `LabelSelectorAsSelector`.
    fn try_from(
        selector: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    ) -> Result<Self, Self::Error> {
        Selector::try_from(selector).map(Self)
    }
}

impl<K: Resource> Predicate<K> for LabelSelector {
    fn create(&self, obj: &K) -> bool {
        self.selects(obj)
    }
    fn update(&self, _old: &K, new: &K) -> bool {
        self.selects(new)
    }
    fn delete(&self, obj: &K) -> bool {
        self.selects(obj)
    }
    fn generic(&self, obj: &K) -> bool {
        self.selects(obj)
    }
}

// ----- combinators ----------------------------------------------------------

/// Both predicates must pass; see [`and`].
#[derive(Clone, Copy, Debug, Default)]
pub struct And<A, B>(pub A, pub B);

/// Either predicate must pass; see [`or`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Or<A, B>(pub A, pub B);

/// The inverse of a predicate; see [`not`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Not<P>(pub P);

/// Both `a` and `b` must pass; `b` is not asked when `a` refuses.
pub fn and<A, B>(a: A, b: B) -> And<A, B> {
    And(a, b)
}

/// Either `a` or `b` must pass; `b` is not asked when `a` accepts.
pub fn or<A, B>(a: A, b: B) -> Or<A, B> {
    Or(a, b)
}

/// Inverts every answer of `p`, including its defaults: `not(GenerationChanged)`
/// refuses creates, as controller-runtime's `Not` does.
pub fn not<P>(p: P) -> Not<P> {
    Not(p)
}

impl<K, A: Predicate<K>, B: Predicate<K>> Predicate<K> for And<A, B> {
    fn create(&self, obj: &K) -> bool {
        self.0.create(obj) && self.1.create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        self.0.update(old, new) && self.1.update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        self.0.delete(obj) && self.1.delete(obj)
    }
    fn generic(&self, obj: &K) -> bool {
        self.0.generic(obj) && self.1.generic(obj)
    }
}

impl<K, A: Predicate<K>, B: Predicate<K>> Predicate<K> for Or<A, B> {
    fn create(&self, obj: &K) -> bool {
        self.0.create(obj) || self.1.create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        self.0.update(old, new) || self.1.update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        self.0.delete(obj) || self.1.delete(obj)
    }
    fn generic(&self, obj: &K) -> bool {
        self.0.generic(obj) || self.1.generic(obj)
    }
}

impl<K, P: Predicate<K>> Predicate<K> for Not<P> {
    fn create(&self, obj: &K) -> bool {
        !self.0.create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        !self.0.update(old, new)
    }
    fn delete(&self, obj: &K) -> bool {
        !self.0.delete(obj)
    }
    fn generic(&self, obj: &K) -> bool {
        !self.0.generic(obj)
    }
}

/// Every predicate in a list must pass; an empty list passes everything
/// (controller-runtime's variadic `And`).
pub struct All<K>(pub Vec<BoxPredicate<K>>);

/// At least one predicate in a list must pass; an empty list passes nothing
/// (controller-runtime's variadic `Or`).
pub struct Any<K>(pub Vec<BoxPredicate<K>>);

/// Every predicate in `predicates` must pass.
pub fn all<K>(predicates: impl IntoIterator<Item = BoxPredicate<K>>) -> All<K> {
    All(predicates.into_iter().collect())
}

/// At least one predicate in `predicates` must pass.
pub fn any<K>(predicates: impl IntoIterator<Item = BoxPredicate<K>>) -> Any<K> {
    Any(predicates.into_iter().collect())
}

impl<K> fmt::Debug for All<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "All({} predicates)", self.0.len())
    }
}

impl<K> fmt::Debug for Any<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Any({} predicates)", self.0.len())
    }
}

impl<K> Predicate<K> for All<K> {
    fn create(&self, obj: &K) -> bool {
        self.0.iter().all(|p| p.create(obj))
    }
    fn update(&self, old: &K, new: &K) -> bool {
        self.0.iter().all(|p| p.update(old, new))
    }
    fn delete(&self, obj: &K) -> bool {
        self.0.iter().all(|p| p.delete(obj))
    }
    fn generic(&self, obj: &K) -> bool {
        self.0.iter().all(|p| p.generic(obj))
    }
}

impl<K> Predicate<K> for Any<K> {
    fn create(&self, obj: &K) -> bool {
        self.0.iter().any(|p| p.create(obj))
    }
    fn update(&self, old: &K, new: &K) -> bool {
        self.0.iter().any(|p| p.update(old, new))
    }
    fn delete(&self, obj: &K) -> bool {
        self.0.iter().any(|p| p.delete(obj))
    }
    fn generic(&self, obj: &K) -> bool {
        self.0.iter().any(|p| p.generic(obj))
    }
}

// ----- closures -------------------------------------------------------------

type ObjFn<K> = Box<dyn Fn(&K) -> bool + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&K, &K) -> bool + Send + Sync>;

/// A predicate built from optional closures, one per event kind; an unset
/// closure passes (controller-runtime's `Funcs`).
///
/// ```
/// use kubeforge::controller::predicate::{Funcs, Predicate};
/// use kubeforge::k8s_openapi::api::core::v1::ConfigMap;
///
/// // Ignore deletes, pass everything else.
/// let p = Funcs::<ConfigMap>::new().on_delete(|_| false);
/// assert!(!p.delete(&ConfigMap::default()));
/// assert!(p.create(&ConfigMap::default()));
/// ```
pub struct Funcs<K> {
    create: Option<ObjFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<ObjFn<K>>,
    generic: Option<ObjFn<K>>,
}

impl<K> Default for Funcs<K> {
    fn default() -> Self {
        Self {
            create: None,
            update: None,
            delete: None,
            generic: None,
        }
    }
}

impl<K> fmt::Debug for Funcs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Funcs")
            .field("create", &self.create.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .field("generic", &self.generic.is_some())
            .finish()
    }
}

impl<K> Funcs<K> {
    /// A predicate that passes everything until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Filters creates with `f`.
    pub fn on_create(mut self, f: impl Fn(&K) -> bool + Send + Sync + 'static) -> Self {
        self.create = Some(Box::new(f));
        self
    }

    /// Filters updates with `f(old, new)`.
    pub fn on_update(mut self, f: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Filters deletes with `f`.
    pub fn on_delete(mut self, f: impl Fn(&K) -> bool + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }

    /// Filters generic events with `f`.
    pub fn on_generic(mut self, f: impl Fn(&K) -> bool + Send + Sync + 'static) -> Self {
        self.generic = Some(Box::new(f));
        self
    }
}

impl<K> Predicate<K> for Funcs<K> {
    fn create(&self, obj: &K) -> bool {
        self.create.as_ref().is_none_or(|f| f(obj))
    }
    fn update(&self, old: &K, new: &K) -> bool {
        self.update.as_ref().is_none_or(|f| f(old, new))
    }
    fn delete(&self, obj: &K) -> bool {
        self.delete.as_ref().is_none_or(|f| f(obj))
    }
    fn generic(&self, obj: &K) -> bool {
        self.generic.as_ref().is_none_or(|f| f(obj))
    }
}

/// Applies one filter to every event kind, to the new object on update
/// (controller-runtime's `NewPredicateFuncs`).
pub fn from_fn<K>(filter: impl Fn(&K) -> bool + Send + Sync + 'static) -> Funcs<K> {
    let filter = Arc::new(filter);
    let (c, u, d) = (filter.clone(), filter.clone(), filter.clone());
    Funcs::new()
        .on_create(move |o| c(o))
        .on_update(move |_, n| u(n))
        .on_delete(move |o| d(o))
        .on_generic(move |o| filter(o))
}

/// Filters updates with `f(old, new)` and passes every other event.
pub fn from_update<K>(f: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Funcs<K> {
    Funcs::new().on_update(f)
}

/// Filters creates with `f` and passes every other event.
pub fn from_create<K>(f: impl Fn(&K) -> bool + Send + Sync + 'static) -> Funcs<K> {
    Funcs::new().on_create(f)
}

/// Filters deletes with `f` and passes every other event.
pub fn from_delete<K>(f: impl Fn(&K) -> bool + Send + Sync + 'static) -> Funcs<K> {
    Funcs::new().on_delete(f)
}

/// Filters generic events with `f` and passes every other event.
pub fn from_generic<K>(f: impl Fn(&K) -> bool + Send + Sync + 'static) -> Funcs<K> {
    Funcs::new().on_generic(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector as MetaLabelSelector, LabelSelectorRequirement, ObjectMeta,
    };
    use kube_core::Expression;

    fn cm(generation: Option<i64>, rv: Option<&str>) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                generation,
                resource_version: rv.map(Into::into),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn with_labels(pairs: &[(&str, &str)]) -> ConfigMap {
        let mut c = cm(Some(1), Some("1"));
        c.metadata.labels = Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        c
    }

    fn with_annotations(pairs: &[(&str, &str)]) -> ConfigMap {
        let mut c = cm(Some(1), Some("1"));
        c.metadata.annotations = Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        c
    }

    /// Answers of a predicate for (create, update old->new, delete, generic).
    fn answers<P: Predicate<ConfigMap>>(p: &P, old: &ConfigMap, new: &ConfigMap) -> [bool; 4] {
        [
            p.create(new),
            p.update(old, new),
            p.delete(new),
            p.generic(new),
        ]
    }

    /// A predicate with fixed answers, for the combinator truth tables
    /// (chained like any user predicate, with no `PredicateExt` impl).
    struct Fixed(bool);
    impl Predicate<ConfigMap> for Fixed {
        fn create(&self, _: &ConfigMap) -> bool {
            self.0
        }
        fn update(&self, _: &ConfigMap, _: &ConfigMap) -> bool {
            self.0
        }
        fn delete(&self, _: &ConfigMap) -> bool {
            self.0
        }
        fn generic(&self, _: &ConfigMap) -> bool {
            self.0
        }
    }

    #[test]
    fn default_methods_pass_everything() {
        struct Nothing;
        impl Predicate<ConfigMap> for Nothing {}
        let c = cm(None, None);
        assert_eq!(answers(&Nothing, &c, &c), [true; 4]);
    }

    #[test]
    fn generation_changed_compares_only_on_update() {
        // controller-runtime predicate_test.go: creates, deletes and generic
        // events pass; updates pass only when metadata.generation differs.
        let (g1, g2) = (cm(Some(1), Some("1")), cm(Some(2), Some("2")));
        assert_eq!(answers(&GenerationChanged, &g1, &g2), [true; 4]);
        let status_only = cm(Some(1), Some("2"));
        assert_eq!(
            answers(&GenerationChanged, &g1, &status_only),
            [true, false, true, true]
        );
    }

    #[test]
    fn generation_changed_treats_missing_generation_as_zero() {
        assert!(!GenerationChanged.update(&cm(None, None), &cm(Some(0), None)));
        assert!(GenerationChanged.update(&cm(None, None), &cm(Some(1), None)));
    }

    #[test]
    fn resource_version_changed_filters_resyncs() {
        let (a, b) = (cm(Some(1), Some("5")), cm(Some(1), Some("6")));
        assert_eq!(answers(&ResourceVersionChanged, &a, &b), [true; 4]);
        assert_eq!(
            answers(&ResourceVersionChanged, &a, &a.clone()),
            [true, false, true, true]
        );
        // Missing and empty resourceVersions are the same "" in Go.
        assert!(!ResourceVersionChanged.update(&cm(None, None), &cm(None, Some(""))));
    }

    #[test]
    fn label_changed_detects_added_removed_and_changed_labels() {
        let base = with_labels(&[("app", "web")]);
        let cases = [
            (with_labels(&[("app", "web")]), false),
            (with_labels(&[("app", "db")]), true),
            (with_labels(&[("app", "web"), ("tier", "1")]), true),
            (with_labels(&[]), true),
            (cm(Some(1), Some("1")), true),
        ];
        for (new, changed) in cases {
            assert_eq!(LabelChanged.update(&base, &new), changed, "{new:?}");
            assert!(LabelChanged.create(&new) && LabelChanged.delete(&new));
            assert!(LabelChanged.generic(&new));
        }
        // nil and empty maps are equal, as with Go's maps.Equal.
        assert!(!LabelChanged.update(&cm(None, None), &with_labels(&[])));
    }

    #[test]
    fn annotation_changed_detects_annotation_edits_only() {
        let base = with_annotations(&[("a", "1")]);
        assert!(!AnnotationChanged.update(&base, &with_annotations(&[("a", "1")])));
        assert!(AnnotationChanged.update(&base, &with_annotations(&[("a", "2")])));
        assert!(AnnotationChanged.update(&base, &with_annotations(&[])));
        assert!(!AnnotationChanged.update(&cm(None, None), &with_annotations(&[])));
        // Label edits do not count.
        let mut relabelled = base.clone();
        relabelled.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
        assert!(!AnnotationChanged.update(&base, &relabelled));
        assert!(AnnotationChanged.create(&base));
    }

    #[test]
    fn label_selector_filters_every_event_kind_using_the_new_object() {
        let p = LabelSelector::new(Expression::Equal("app".into(), "web".into()).into());
        let web = with_labels(&[("app", "web")]);
        let db = with_labels(&[("app", "db")]);
        assert_eq!(answers(&p, &db, &web), [true; 4]);
        assert_eq!(answers(&p, &web, &db), [false; 4]);
        // An object without labels only matches selectors that allow absence.
        let bare = cm(None, None);
        assert!(!p.create(&bare));
        let absent = LabelSelector::new(Expression::DoesNotExist("app".into()).into());
        assert!(absent.create(&bare));
        // The empty selector matches everything.
        assert!(LabelSelector::default().create(&bare));
    }

    #[test]
    fn label_selector_from_meta_label_selector() {
        let sel = MetaLabelSelector {
            match_labels: Some([("app".to_string(), "web".to_string())].into()),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "In".into(),
                values: Some(vec!["1".into(), "2".into()]),
            }]),
        };
        let p = LabelSelector::try_from(sel).unwrap();
        assert!(p.create(&with_labels(&[("app", "web"), ("tier", "2")])));
        assert!(!p.create(&with_labels(&[("app", "web"), ("tier", "3")])));
        assert!(!p.create(&with_labels(&[("tier", "1")])));

        let bad = MetaLabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "Near".into(),
                values: None,
            }]),
        };
        assert!(LabelSelector::try_from(bad).is_err());
    }

    #[test]
    fn and_or_not_truth_tables_for_every_event_kind() {
        let c = cm(None, None);
        for a in [false, true] {
            for b in [false, true] {
                assert_eq!(answers(&and(Fixed(a), Fixed(b)), &c, &c), [a && b; 4]);
                assert_eq!(answers(&or(Fixed(a), Fixed(b)), &c, &c), [a || b; 4]);
                assert_eq!(answers(&Fixed(a).and(Fixed(b)), &c, &c), [a && b; 4]);
                assert_eq!(answers(&Fixed(a).or(Fixed(b)), &c, &c), [a || b; 4]);
            }
            assert_eq!(answers(&not(Fixed(a)), &c, &c), [!a; 4]);
            assert_eq!(answers(&Fixed(a).not(), &c, &c), [!a; 4]);
        }
    }

    #[test]
    fn variadic_all_and_any_match_go_semantics_for_empty_lists() {
        let c = cm(None, None);
        assert_eq!(answers(&all::<ConfigMap>([]), &c, &c), [true; 4]);
        assert_eq!(answers(&any::<ConfigMap>([]), &c, &c), [false; 4]);
        for (a, b, x) in [
            (false, false, false),
            (true, false, true),
            (true, true, false),
        ] {
            let list = || [Fixed(a).boxed(), Fixed(b).boxed(), Fixed(x).boxed()];
            assert_eq!(answers(&all(list()), &c, &c), [a && b && x; 4]);
            assert_eq!(answers(&any(list()), &c, &c), [a || b || x; 4]);
        }
    }

    #[test]
    fn combinators_short_circuit() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = |answer: bool| {
            let calls = calls.clone();
            from_fn(move |_: &ConfigMap| {
                calls.fetch_add(1, Ordering::SeqCst);
                answer
            })
        };
        let c = cm(None, None);
        assert!(!and(Fixed(false), counted(true)).create(&c));
        assert!(or(Fixed(true), counted(false)).create(&c));
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert!(and(Fixed(true), counted(true)).create(&c));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn generation_or_label_changed_is_the_documented_combination() {
        let p = or(GenerationChanged, LabelChanged);
        let base = with_labels(&[("app", "web")]);
        let mut spec_change = base.clone();
        spec_change.metadata.generation = Some(2);
        let relabel = with_labels(&[("app", "db")]);
        let mut status_only = base.clone();
        status_only.metadata.resource_version = Some("9".into());
        assert!(p.update(&base, &spec_change));
        assert!(p.update(&base, &relabel));
        assert!(!p.update(&base, &status_only));
        assert!(p.create(&base) && p.delete(&base) && p.generic(&base));
    }

    #[test]
    fn not_inverts_the_defaults_too() {
        // controller-runtime's Not(GenerationChanged) refuses creates.
        let p = not(GenerationChanged);
        let (a, b) = (cm(Some(1), None), cm(Some(1), None));
        assert_eq!(answers(&p, &a, &b), [false, true, false, false]);
    }

    #[test]
    fn and_with_selector_and_generation() {
        let p = and(
            LabelSelector::new(Expression::Exists("app".into()).into()),
            GenerationChanged,
        );
        let old = with_labels(&[("app", "web")]);
        let mut new = old.clone();
        new.metadata.generation = Some(5);
        assert!(p.update(&old, &new));
        assert!(!p.update(&old, &old.clone()));
        assert!(!p.create(&cm(Some(1), None)));
        assert!(p.create(&old));
    }

    #[test]
    fn closures_become_predicates() {
        let c = cm(Some(1), Some("1"));
        let mut bigger = c.clone();
        bigger.metadata.generation = Some(3);

        let only_growth = from_update(|o: &ConfigMap, n: &ConfigMap| {
            n.metadata.generation > o.metadata.generation
        });
        assert_eq!(answers(&only_growth, &c, &bigger), [true; 4]);
        assert_eq!(
            answers(&only_growth, &bigger, &c),
            [true, false, true, true]
        );

        let named_a = from_fn(|o: &ConfigMap| o.metadata.name.as_deref() == Some("a"));
        let mut b = c.clone();
        b.metadata.name = Some("b".into());
        assert_eq!(answers(&named_a, &b, &c), [true; 4]);
        // On update the filter sees the new object only.
        assert_eq!(answers(&named_a, &c, &b), [false; 4]);

        assert_eq!(
            answers(&from_create(|_: &ConfigMap| false), &c, &c),
            [false, true, true, true]
        );
        assert_eq!(
            answers(&from_delete(|_: &ConfigMap| false), &c, &c),
            [true, true, false, true]
        );
        assert_eq!(
            answers(&from_generic(|_: &ConfigMap| false), &c, &c),
            [true, true, true, false]
        );
    }

    #[test]
    fn events_dispatch_to_the_matching_method() {
        let p = Funcs::<ConfigMap>::new()
            .on_create(|_| true)
            .on_update(|_, _| false)
            .on_delete(|_| true)
            .on_generic(|_| false);
        let c = cm(None, None);
        assert!(p.matches(Event::Create(&c)));
        assert!(!p.matches(Event::Update { old: &c, new: &c }));
        assert!(p.matches(Event::Delete(&c)));
        assert!(!p.matches(Event::Generic(&c)));
        // Through a trait object too.
        let dynamic: BoxPredicate<ConfigMap> = Box::new(p);
        assert!(dynamic.matches(Event::Create(&c)));
        assert!(!dynamic.matches(Event::Generic(&c)));
        let shared: Arc<dyn Predicate<ConfigMap>> = Arc::new(GenerationChanged);
        assert!(shared.matches(Event::Create(&c)));
    }

    #[test]
    fn predicates_work_on_dynamic_objects() {
        use kube_core::DynamicObject;
        let mut a: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "ex.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "generation": 1, "labels": {"app": "web"}}
        }))
        .unwrap();
        let b = a.clone();
        assert!(!GenerationChanged.update(&a, &b));
        a.metadata.generation = Some(2);
        assert!(GenerationChanged.update(&b, &a));
        let sel = LabelSelector::new(Expression::Equal("app".into(), "web".into()).into());
        assert!(sel.create(&a));
    }
}
