//! [`Write`]: how a reconcile writes objects of a kind, declared on the
//! controller builder (`Owns::writes`, `writes_status`) so the derived
//! RBAC grants the verbs those writes are authorized for and no others.

use super::Verb;

/// One way a reconcile writes objects, as the client helpers name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Write {
    /// `create` (a POST: `client().create(..)`).
    Create,
    /// A server-side apply (`client().apply(..)`, `apply_status(..)`): a
    /// `patch`, which the API server also authorizes as `create` when it
    /// creates the object (never on a subresource).
    Apply,
    /// `update`: a PUT (`client().replace(..)`, `replace_status(..)`).
    Update,
    /// `patch`: a merge or JSON patch (`client().patch(..)`,
    /// `patch_status(..)`).
    Patch,
    /// `delete` (`client().delete(..)`).
    Delete,
}

impl Write {
    /// The verbs these writes of an object need.
    pub fn verbs(self) -> &'static [Verb] {
        match self {
            Write::Create => &[Verb::Create],
            Write::Apply => &[Verb::Create, Verb::Patch],
            Write::Update => &[Verb::Update],
            Write::Patch => &[Verb::Patch],
            Write::Delete => &[Verb::Delete],
        }
    }

    /// The verbs these writes of a subresource (`/status`) need: an apply
    /// there patches what exists, it never creates.
    pub fn subresource_verbs(self) -> &'static [Verb] {
        match self {
            Write::Apply => &[Verb::Patch],
            other => other.verbs(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apply_creates_and_patches_objects_and_patches_subresources() {
        assert_eq!(Write::Apply.verbs(), [Verb::Create, Verb::Patch]);
        assert_eq!(Write::Apply.subresource_verbs(), [Verb::Patch]);
        assert_eq!(Write::Update.subresource_verbs(), [Verb::Update]);
    }
}
