//! `manifests`: everything the operator knows about itself as files in
//! kubebuilder's `config/` layout: its CRDs
//! (`crd/bases/<group>_<plural>.yaml`, controller-gen's names) and its
//! RBAC (`rbac/role.yaml`, `rbac/role_binding.yaml`,
//! `rbac/leader_election_role.yaml`,
//! `rbac/leader_election_role_binding.yaml`), and, when it registers
//! webhooks, `webhook/manifests.yaml` (controller-gen's
//! `mutating-webhook-configuration` and `validating-webhook-configuration`
//! pointing at kubebuilder's `system/webhook-service`) and the
//! `spec.conversion` of converted CRDs, each with cert-manager's
//! `inject-ca-from` annotation naming kubebuilder's `serving-cert`.

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;

use super::Error;
use crate::crd::yaml::{object_to_yaml, to_yaml_documents, YamlOptions};
use crate::rbac::{render, Permissions, RoleOptions};
use crate::webhook::configurations::{self, Target};
use crate::webhook::Webhooks;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// How the manifests are rendered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManifestOptions {
    /// Render the manager's RBAC as a Role in this namespace (see
    /// [`RoleOptions::namespace`]).
    pub namespace: Option<String>,
}

/// One generated file: where it goes under the `config/` directory, and
/// what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestFile {
    /// The path relative to `config/`, e.g. `crd/bases/cache.example.com_memcacheds.yaml`.
    pub path: PathBuf,
    /// The YAML, a header comment then one `---` document per object.
    pub contents: String,
}

fn header(operator: &str) -> String {
    format!(
        "# Generated from the code of {operator} (its `manifests` command, which\n\
         # `kubeforge generate` runs): do not edit; change the code and regenerate.\n"
    )
}

fn documents(operator: &str, objects: &[&dyn ErasedSerialize]) -> Result<String, Error> {
    let mut out = header(operator);
    for object in objects {
        out.push_str("---\n");
        out.push_str(&object.to_yaml()?);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// A manifest object of any type, written as YAML.
trait ErasedSerialize {
    fn to_yaml(&self) -> Result<String, Error>;
}

impl<T: Serialize> ErasedSerialize for T {
    fn to_yaml(&self) -> Result<String, Error> {
        object_to_yaml(self).map_err(Error::Manifest)
    }
}

/// cert-manager's CA injection from kubebuilder's `serving-cert`
/// Certificate (in `system`, before kustomize renames it).
const INJECT_CA_FROM: (&str, &str) = ("cert-manager.io/inject-ca-from", "system/serving-cert");

fn inject_ca(metadata: &mut ObjectMeta) {
    metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(INJECT_CA_FROM.0.to_owned(), INJECT_CA_FROM.1.to_owned());
}

/// The webhook configurations, when any admission webhook is registered:
/// `webhook/manifests.yaml`, as controller-gen writes it.
fn webhook_file(
    operator: &str,
    webhooks: &Webhooks,
    target: &Target,
) -> Result<Option<ManifestFile>, Error> {
    let mut mutating = configurations::mutating(webhooks, target);
    let mut validating = configurations::validating(webhooks, target);
    let mut objects: Vec<&dyn ErasedSerialize> = Vec::new();
    if let Some(m) = &mut mutating {
        inject_ca(&mut m.metadata);
        objects.push(m);
    }
    if let Some(v) = &mut validating {
        inject_ca(&mut v.metadata);
        objects.push(v);
    }
    if objects.is_empty() {
        return Ok(None);
    }
    Ok(Some(ManifestFile {
        path: Path::new("webhook").join("manifests.yaml"),
        contents: documents(operator, &objects)?,
    }))
}

/// Renders the operator's manifests.
pub(crate) fn render_files(
    operator: &str,
    crds: &[CustomResourceDefinition],
    permissions: &Permissions,
    webhooks: &Webhooks,
    options: &ManifestOptions,
) -> Result<Vec<ManifestFile>, Error> {
    let mut files = Vec::new();
    let target = Target::kubebuilder_service();
    let converted = webhooks.conversion_crds();
    let mut crds = crds.to_vec();
    for crd in &mut crds {
        if converted
            .iter()
            .any(|name| crd.metadata.name.as_ref() == Some(name))
        {
            crd.spec.conversion = Some(configurations::conversion(&target));
            inject_ca(&mut crd.metadata);
        }
    }
    for crd in &crds {
        let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
        let mut contents = header(operator);
        contents.push_str(
            &to_yaml_documents(std::slice::from_ref(crd), &YamlOptions::default())
                .map_err(Error::Manifest)?,
        );
        files.push(ManifestFile {
            path: Path::new("crd").join("bases").join(file),
            contents,
        });
    }

    let roles = render(
        permissions,
        &RoleOptions {
            namespace: options.namespace.clone(),
            ..RoleOptions::default()
        },
    );
    let mut role: Vec<&dyn ErasedSerialize> = Vec::new();
    let mut binding: Vec<&dyn ErasedSerialize> = Vec::new();
    // controller-gen's order: the ClusterRole, then Roles by namespace.
    if let Some(r) = &roles.cluster_role {
        role.push(r);
    }
    if let Some(r) = &roles.role {
        role.push(r);
    }
    if let Some(b) = &roles.cluster_role_binding {
        binding.push(b);
    }
    if let Some(b) = &roles.role_binding {
        binding.push(b);
    }
    let rbac = Path::new("rbac");
    files.push(ManifestFile {
        path: rbac.join("role.yaml"),
        contents: documents(operator, &role)?,
    });
    files.push(ManifestFile {
        path: rbac.join("role_binding.yaml"),
        contents: documents(operator, &binding)?,
    });
    if let (Some(r), Some(b)) = (
        &roles.leader_election_role,
        &roles.leader_election_role_binding,
    ) {
        files.push(ManifestFile {
            path: rbac.join("leader_election_role.yaml"),
            contents: documents(operator, &[r])?,
        });
        files.push(ManifestFile {
            path: rbac.join("leader_election_role_binding.yaml"),
            contents: documents(operator, &[b])?,
        });
    }
    if let Some(file) = webhook_file(operator, webhooks, &target)? {
        files.push(file);
    }
    Ok(files)
}

/// Writes `files` under `dir`, creating directories; a file whose contents
/// are already right is left alone (its modification time too).
pub(crate) fn write_files(dir: &Path, files: &[ManifestFile]) -> Result<(), Error> {
    for file in files {
        let path = dir.join(&file.path);
        if std::fs::read_to_string(&path).is_ok_and(|c| c == file.contents) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| Error::Write {
                path: parent.to_owned(),
                source,
            })?;
        }
        std::fs::write(&path, &file.contents).map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

/// Every file as one YAML stream, each introduced by a comment naming its
/// path.
pub(crate) fn concatenate(files: &[ManifestFile]) -> String {
    let mut out = String::new();
    for file in files {
        out.push_str(&format!("# Source: {}\n", file.path.display()));
        out.push_str(&file.contents);
    }
    out
}
