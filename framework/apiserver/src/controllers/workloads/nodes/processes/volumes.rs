//! What a container finds on its filesystem besides the host's own: the
//! pod's volumes, made under the pod's directory and bind-mounted at each
//! `volumeMounts[].mountPath` (with `subPath` and `readOnly`), as the
//! kubelet's volume manager sets them up:
//!
//! - `emptyDir` (a fresh directory), `hostPath` (with its `type` check);
//! - `configMap`, `secret`, `downwardAPI` and `projected` (those three
//!   and `serviceAccountToken`), files with their `items`, `defaultMode`
//!   and `optional`, always mounted read-only;
//! - the service-account files every container gets at
//!   `/var/run/secrets/kubernetes.io/serviceaccount` (`token`, `ca.crt`,
//!   `namespace`) unless the pod or its ServiceAccount opts out, which
//!   in-cluster clients read (client-go's `rest.InClusterConfig`, kube-rs's
//!   `Config::incluster`, ours). The token is refreshed once 80% of its
//!   lifetime has passed, as the kubelet's token manager does.
//!
//! Files are written once; later edits of a ConfigMap or Secret do not
//! reach a running pod. A volume that cannot be set up is the kubelet's
//! `FailedMount` message, and the pod waits in `ContainerCreating`.
//!
//! Sources: pkg/volume (emptydir, hostpath, configmap, secret,
//! downwardapi, projected), plugin/pkg/admission/serviceaccount (the
//! `kube-api-access-*` volume), pkg/kubelet/token (3607 s, refresh at 80%).

use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::env::{field, object, source, str_at};
use super::sandbox::BindMount;
use crate::auth::tokens;
use crate::machinery::util::Pointer;
use crate::registry::state::Shared;

/// Where in-cluster clients look for the service account's files.
pub(super) const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The lifetime the kubelet asks of the tokens it projects.
const TOKEN_SECONDS: i64 = 3607;
/// A file's mode when the volume names none (`0644`).
const DEFAULT_MODE: u32 = 0o644;

/// A pod's volumes, set up.
pub(super) struct PodVolumes {
    volumes: Vec<(String, PathBuf, bool)>,
    /// The service-account files, and when to write a new token.
    service_account: Option<(PathBuf, Instant)>,
}

/// A relative path inside a volume (validation forbids `..` and absolute
/// paths; checked again, since the files are written as root).
fn inside(root: &Path, relative: &str) -> Result<PathBuf, String> {
    let rel = Path::new(relative);
    if relative.is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(format!(
            "the path {relative:?} must be relative and must not contain '..'"
        ));
    }
    Ok(root.join(rel))
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot make {}: {e}", parent.display()))?;
    }
    std::fs::write(path, bytes)
        .and_then(|()| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o777))
        })
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn mode_of(v: &Value, field: &str) -> Option<u32> {
    v.get(field)
        .and_then(Value::as_u64)
        .and_then(|m| u32::try_from(m).ok())
}

/// What a pod's volumes are set up from.
pub(super) struct Setup<'a> {
    pub shared: &'a Shared,
    pub pod: &'a Value,
    pub pod_ip: String,
    pub ca_pem: &'a str,
    pub dir: &'a Path,
}

impl Setup<'_> {
    fn namespace(&self) -> &str {
        self.pod
            .at("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
    }

    /// Sets every volume up, or says which failed and why.
    pub(super) fn run(&self) -> Result<PodVolumes, String> {
        let mut volumes = Vec::new();
        for v in self
            .pod
            .at("/spec/volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = str_at(v, "name");
            let made = self
                .volume(name, v)
                .map_err(|why| format!("MountVolume.SetUp failed for volume \"{name}\" : {why}"))?;
            volumes.push((name.to_owned(), made.0, made.1));
        }
        let service_account = self
            .service_account()?
            .map(|dir| (dir, Instant::now() + refresh_after(TOKEN_SECONDS)));
        Ok(PodVolumes {
            volumes,
            service_account,
        })
    }

    /// One volume: its directory on the host and whether it is read-only.
    fn volume(&self, name: &str, v: &Value) -> Result<(PathBuf, bool), String> {
        let root = self.dir.join("volumes").join(name);
        let fresh = |root: &Path| {
            std::fs::create_dir_all(root)
                .map_err(|e| format!("cannot make {}: {e}", root.display()))
        };
        if v.get("emptyDir").is_some() {
            // World-writable, as the kubelet makes it (pkg/volume/emptydir:
            // 0777), so a container of any user can write it.
            fresh(&root)?;
            std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777))
                .map_err(|e| format!("cannot open {} to every user: {e}", root.display()))?;
            return Ok((root, false));
        }
        if let Some(h) = v.get("hostPath") {
            return host_path(h).map(|p| (p, false));
        }
        fresh(&root)?;
        if let Some(c) = v.get("configMap") {
            self.keyed(&root, c, false, mode_of(c, "defaultMode"))?;
        } else if let Some(s) = v.get("secret") {
            let reference = serde_json::json!({"name": s.get("secretName"), "items": s.get("items"), "optional": s.get("optional")});
            self.keyed(&root, &reference, true, mode_of(s, "defaultMode"))?;
        } else if let Some(d) = v.get("downwardAPI") {
            self.downward(&root, d, mode_of(d, "defaultMode"))?;
        } else if let Some(p) = v.get("projected") {
            let mode = mode_of(p, "defaultMode");
            for source in p
                .get("sources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(c) = source.get("configMap") {
                    self.keyed(&root, c, false, mode)?;
                } else if let Some(s) = source.get("secret") {
                    self.keyed(&root, s, true, mode)?;
                } else if let Some(d) = source.get("downwardAPI") {
                    self.downward(&root, d, mode)?;
                } else if let Some(t) = source.get("serviceAccountToken") {
                    let audience = str_at(t, "audience");
                    let audiences = if audience.is_empty() {
                        Vec::new()
                    } else {
                        vec![audience.to_owned()]
                    };
                    let secs = t
                        .get("expirationSeconds")
                        .and_then(Value::as_i64)
                        .unwrap_or(3600);
                    let token = self.token(audiences, secs)?;
                    write_file(
                        &inside(&root, str_at(t, "path"))?,
                        token.as_bytes(),
                        mode.unwrap_or(DEFAULT_MODE),
                    )?;
                } else if source.get("clusterTrustBundle").is_some()
                    || source.get("podCertificate").is_some()
                {
                    return Err("clusterTrustBundle and podCertificate projections are not set up by this kubelet".into());
                }
            }
        } else {
            let kind = v
                .as_object()
                .and_then(|m| m.keys().find(|k| *k != "name").cloned())
                .unwrap_or_else(|| "an unnamed".into());
            return Err(format!(
                "{kind} volumes are not set up by this kubelet (emptyDir, hostPath, configMap, secret, downwardAPI and projected are)"
            ));
        }
        Ok((root, true))
    }

    /// A ConfigMap's or Secret's keys (or its `items`) as files.
    fn keyed(
        &self,
        root: &Path,
        reference: &Value,
        secret: bool,
        mode: Option<u32>,
    ) -> Result<(), String> {
        let optional = reference.get("optional").and_then(Value::as_bool) == Some(true);
        let Some(all) = source(self.shared, self.namespace(), reference, secret)? else {
            return Ok(());
        };
        let mode = mode.unwrap_or(DEFAULT_MODE);
        match reference.get("items").and_then(Value::as_array) {
            Some(items) => {
                for item in items {
                    let key = str_at(item, "key");
                    match all.iter().find(|(k, _)| k == key) {
                        Some((_, bytes)) => {
                            let path = inside(root, str_at(item, "path"))?;
                            write_file(&path, bytes, mode_of(item, "mode").unwrap_or(mode))?;
                        }
                        None if optional => {}
                        None if secret => {
                            return Err(format!("references non-existent secret key: {key}"))
                        }
                        None => {
                            return Err(format!(
                                "configmap references non-existent config key: {key}"
                            ))
                        }
                    }
                }
            }
            None => {
                for (key, bytes) in &all {
                    write_file(&inside(root, key)?, bytes, mode)?;
                }
            }
        }
        Ok(())
    }

    /// Downward-API items as files.
    fn downward(&self, root: &Path, d: &Value, mode: Option<u32>) -> Result<(), String> {
        for item in d
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let value = match item.get("fieldRef") {
                Some(f) => field(self.pod, str_at(f, "fieldPath"), &self.pod_ip)?,
                None => {
                    return Err(
                        "resourceFieldRef items are not set up by this kubelet; use fieldRef"
                            .into(),
                    )
                }
            };
            let path = inside(root, str_at(item, "path"))?;
            write_file(
                &path,
                value.as_bytes(),
                mode_of(item, "mode").or(mode).unwrap_or(DEFAULT_MODE),
            )?;
        }
        Ok(())
    }

    fn token(&self, audiences: Vec<String>, secs: i64) -> Result<String, String> {
        let account = self
            .pod
            .at("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .unwrap_or("default");
        tokens::issue(self.shared, self.namespace(), account, audiences, secs)
            .map(|(token, _)| token)
            .map_err(|e| {
                format!(
                    "cannot issue a token for service account {}/{account}: {}",
                    self.namespace(),
                    e.message
                )
            })
    }

    /// Writes the service-account files, unless the pod opts out
    /// (`automountServiceAccountToken: false` on the pod, or on its
    /// ServiceAccount when the pod is silent).
    fn service_account(&self) -> Result<Option<PathBuf>, String> {
        let account = self
            .pod
            .at("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .unwrap_or("default");
        let automount = self
            .pod
            .at("/spec/automountServiceAccountToken")
            .and_then(Value::as_bool)
            .or_else(|| {
                object(self.shared, "serviceaccounts", self.namespace(), account).and_then(|sa| {
                    sa.get("automountServiceAccountToken")
                        .and_then(Value::as_bool)
                })
            });
        if automount == Some(false) {
            return Ok(None);
        }
        let files = self.dir.join("serviceaccount");
        let token = self.token(Vec::new(), TOKEN_SECONDS)?;
        write_file(&files.join("ca.crt"), self.ca_pem.as_bytes(), DEFAULT_MODE)?;
        write_file(
            &files.join("namespace"),
            self.namespace().as_bytes(),
            DEFAULT_MODE,
        )?;
        replace_token(&files, &token)?;
        Ok(Some(files))
    }
}

/// Writes `token` beside the old one and renames it into place, so a
/// reader never sees half a token.
fn replace_token(files: &Path, token: &str) -> Result<(), String> {
    let fresh = files.join("..token");
    write_file(&fresh, token.as_bytes(), DEFAULT_MODE)?;
    std::fs::rename(&fresh, files.join("token"))
        .map_err(|e| format!("cannot replace the token: {e}"))
}

fn refresh_after(secs: i64) -> Duration {
    Duration::from_secs((secs.max(0) as u64) * 4 / 5)
}

/// A `hostPath` volume's path, after its `type` check.
fn host_path(h: &Value) -> Result<PathBuf, String> {
    let path = PathBuf::from(str_at(h, "path"));
    let meta = std::fs::metadata(&path);
    let is = |want: fn(&std::fs::Metadata) -> bool| meta.as_ref().is_ok_and(want);
    let fail = |what: &str| {
        Err(format!(
            "hostPath type check failed: {} is not {what}",
            path.display()
        ))
    };
    match str_at(h, "type") {
        "" => {}
        "DirectoryOrCreate" => {
            if meta.is_err() {
                std::fs::create_dir_all(&path)
                    .and_then(|()| {
                        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                    })
                    .map_err(|e| format!("cannot make {}: {e}", path.display()))?;
            } else if !is(std::fs::Metadata::is_dir) {
                return fail("a directory");
            }
        }
        "Directory" if !is(std::fs::Metadata::is_dir) => return fail("a directory"),
        "FileOrCreate" => {
            if meta.is_err() {
                write_file(&path, b"", DEFAULT_MODE)?;
            } else if !is(std::fs::Metadata::is_file) {
                return fail("a file");
            }
        }
        "File" if !is(std::fs::Metadata::is_file) => return fail("a file"),
        "Socket" | "CharDevice" | "BlockDevice" => {
            use std::os::unix::fs::FileTypeExt;
            let ok = meta.as_ref().is_ok_and(|m| {
                let t = m.file_type();
                t.is_socket() || t.is_char_device() || t.is_block_device()
            });
            if !ok {
                return fail("a socket or device");
            }
        }
        _ => {}
    }
    Ok(path)
}

impl PodVolumes {
    /// The bind mounts of `container`: its `volumeMounts`, and the
    /// service-account files unless it mounts something at their path.
    pub(super) fn mounts(&self, container: &Value) -> Result<Vec<BindMount>, String> {
        let mut out = Vec::new();
        for m in container
            .get("volumeMounts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = str_at(m, "name");
            let Some((_, host, read_only)) = self.volumes.iter().find(|(n, _, _)| n == name) else {
                return Err(format!(
                    "the volume {name:?} of a volumeMount is not among the pod's volumes"
                ));
            };
            let sub = str_at(m, "subPath");
            let host = if sub.is_empty() {
                host.clone()
            } else {
                let p = inside(host, sub)?;
                if !p.exists() {
                    std::fs::create_dir_all(&p)
                        .map_err(|e| format!("cannot make the subPath {sub}: {e}"))?;
                }
                p
            };
            out.push(BindMount {
                host,
                container_path: PathBuf::from(str_at(m, "mountPath")),
                read_only: *read_only || m.get("readOnly").and_then(Value::as_bool) == Some(true),
            });
        }
        if let Some((files, _)) = &self.service_account {
            if !out
                .iter()
                .any(|m| m.container_path == Path::new(SERVICE_ACCOUNT_DIR))
            {
                out.push(BindMount {
                    host: files.clone(),
                    container_path: PathBuf::from(SERVICE_ACCOUNT_DIR),
                    read_only: true,
                });
            }
        }
        Ok(out)
    }

    /// Writes a new service-account token once 80% of the last one's
    /// lifetime has passed; returns when to look again.
    pub(super) fn refresh_token(&mut self, setup: &Setup<'_>, now: Instant) -> Option<Instant> {
        let (files, due) = self.service_account.as_mut()?;
        if now >= *due {
            match setup
                .token(Vec::new(), TOKEN_SECONDS)
                .and_then(|t| replace_token(files, &t))
            {
                Ok(()) => *due = now + refresh_after(TOKEN_SECONDS),
                // Tried again in a minute, as the token manager retries.
                Err(e) => {
                    tracing::warn!(error = %e, "cannot refresh a pod's service-account token");
                    *due = now + Duration::from_secs(60);
                }
            }
        }
        Some(*due)
    }
}
