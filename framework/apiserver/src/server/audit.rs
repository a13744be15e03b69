//! The Rust API for the permission audit: what an identity asked for,
//! compared with what RBAC grants it (see [`PermissionAudit`]).

use super::ApiServer;
use crate::auth::audit::PermissionAudit;

impl ApiServer {
    /// The permission audit of the identity `user` (a user name, or
    /// `system:serviceaccount:NS:NAME`): every distinct request it made
    /// since the server started (or since
    /// [`clear_permission_audit`](Self::clear_permission_audit)), the
    /// requests denied as the rules it lacks, and the rules granted to it
    /// that allowed nothing, against the RBAC objects stored now.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), kubeforge_apiserver::Error> {
    /// let server = kubeforge_apiserver::ApiServer::start().await?;
    /// // ... run the operator as its service account ...
    /// let audit = server.permission_audit("system:serviceaccount:system:controller-manager");
    /// assert!(audit.is_least_privilege(), "{audit}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn permission_audit(&self, user: &str) -> PermissionAudit {
        let index = self.shared.rbac.index(&self.shared.storage);
        self.shared.audit.report(user, &index)
    }

    /// The identities the permission audit has recorded, sorted.
    pub fn audited_identities(&self) -> Vec<String> {
        self.shared.audit.identities()
    }

    /// Switches the permission audit's recording on or off while the
    /// server runs (it starts as
    /// [`ApiServerBuilder::permission_audit`](super::ApiServerBuilder::permission_audit)
    /// set it, on by default). Off, requests are authorized as before but
    /// not recorded, so its cost per request can be measured; what was
    /// recorded before stays until
    /// [`clear_permission_audit`](Self::clear_permission_audit).
    pub fn set_permission_audit(&self, record: bool) {
        self.shared.audit.set_recording(record);
    }

    /// Whether the permission audit is recording requests.
    pub fn permission_audit_recording(&self) -> bool {
        self.shared.audit.recording()
    }

    /// Forgets what the permission audit recorded (to audit one phase of a
    /// test on its own).
    pub fn clear_permission_audit(&self) {
        self.shared.audit.clear();
    }
}
