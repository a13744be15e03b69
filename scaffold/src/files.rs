//! What a project's files hold, computed from its record: the files `init`
//! writes, the registries and kustomization blocks every `create api`
//! rewrites, and the files `create api` writes once for a new resource.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::context;

use crate::blocks::{self, MarkerError};
use crate::names;
use crate::plan::Plan;
use crate::project::{Project, Resource};
use crate::templates::{rust_header, rustfmt, Templates};

/// The marked block of `config/crd/kustomization.yaml`.
pub const CRD_BLOCK: &str = "crd-bases";
/// The marked block of `config/samples/kustomization.yaml`.
pub const SAMPLES_BLOCK: &str = "samples";
/// The marked block of `config/rbac/kustomization.yaml`.
pub const ROLES_BLOCK: &str = "per-kind-roles";

/// The kustomization files with a marked block, and the block's name.
pub const KUSTOMIZATIONS: [(&str, &str); 3] = [
    ("config/crd/kustomization.yaml", CRD_BLOCK),
    ("config/samples/kustomization.yaml", SAMPLES_BLOCK),
    ("config/rbac/kustomization.yaml", ROLES_BLOCK),
];

/// Why files could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// A template failed to render (a bug in this CLI).
    #[error("cannot render {name}: {source:#}")]
    Template {
        /// The template.
        name: String,
        /// minijinja's error.
        #[source]
        source: minijinja::Error,
    },
    /// A kustomization's markers are missing or broken.
    #[error(transparent)]
    Marker(#[from] MarkerError),
    /// A kustomization the CLI maintains a block of is missing.
    #[error("cannot read {}: {source} (kubeforge init writes it)", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Renders templates for one project.
pub struct Files<'a> {
    project: &'a Project,
    templates: &'a Templates,
    header: String,
}

/// The CRD file `kubeforge generate` writes for a kind (controller-gen's
/// name: `<group>_<plural>.yaml`).
pub fn crd_file(api_group: &str, plural: &str) -> String {
    format!("{api_group}_{plural}.yaml")
}

impl<'a> Files<'a> {
    /// Files for `project`.
    pub fn new(project: &'a Project, templates: &'a Templates) -> Self {
        Self {
            project,
            templates,
            header: rust_header(project),
        }
    }

    fn render(&self, name: &str, context: minijinja::Value) -> Result<String, FilesError> {
        let text = self
            .templates
            .render(name, context)
            .map_err(|source| FilesError::Template {
                name: name.to_owned(),
                source,
            })?;
        Ok(if name.ends_with(".rs") {
            rustfmt(text)
        } else {
            text
        })
    }

    fn base(&self) -> minijinja::Value {
        let p = self.project;
        context! {
            name => p.name.as_str(),
            crate => names::crate_name(&p.name),
            domain => p.domain.as_str(),
            header => self.header.as_str(),
            license => match p.license {
                crate::project::License::Apache2 => "apache2",
                crate::project::License::None => "none",
            },
        }
    }

    fn with(&self, extra: minijinja::Value) -> minijinja::Value {
        context! { ..extra, ..self.base() }
    }

    /// Every file `init` writes: user-owned ones to create, and the
    /// registries and kustomizations (with their blocks) the CLI keeps.
    pub fn init(&self, plan: &mut Plan, kubeforge_dep: &str) -> Result<(), FilesError> {
        let p = self.project;
        let path_dependency = p.kubeforge.path.is_some();
        let project = [
            ("Cargo.toml", "Cargo.toml"),
            ("Dockerfile", "Dockerfile"),
            (".dockerignore", ".dockerignore"),
            (".gitignore", ".gitignore"),
            (".github/workflows/ci.yml", "ci.yml"),
            ("README.md", "README.md"),
            ("src/main.rs", "main.rs"),
            ("src/lib.rs", "lib.rs"),
            ("tests/manifests.rs", "manifests_test.rs"),
            (
                "config/default/kustomization.yaml",
                "default_kustomization.yaml",
            ),
            (
                "config/default/metrics_service.yaml",
                "metrics_service.yaml",
            ),
            (
                "config/manager/kustomization.yaml",
                "manager_kustomization.yaml",
            ),
            ("config/manager/manager.yaml", "manager.yaml"),
            ("config/rbac/service_account.yaml", "service_account.yaml"),
            (
                "config/prometheus/kustomization.yaml",
                "prometheus_kustomization.yaml",
            ),
            ("config/prometheus/monitor.yaml", "monitor.yaml"),
            (
                "config/network-policy/kustomization.yaml",
                "network_policy_kustomization.yaml",
            ),
            (
                "config/network-policy/allow-metrics-traffic.yaml",
                "allow_metrics_traffic.yaml",
            ),
        ];
        for (path, template) in project {
            let contents = self.render(
                template,
                self.with(context! {
                    kubeforge => kubeforge_dep,
                    path_dependency => path_dependency,
                    cli_version => env!("CARGO_PKG_VERSION"),
                }),
            )?;
            plan.create(path, contents);
        }
        for (path, name) in KUSTOMIZATIONS {
            let template = match name {
                CRD_BLOCK => "crd_kustomization.yaml",
                SAMPLES_BLOCK => "samples_kustomization.yaml",
                _ => "rbac_kustomization.yaml",
            };
            let block = blocks::block(name, &self.block_lines(name));
            plan.create(
                path,
                self.render(template, self.with(context! { block => block }))?,
            );
        }
        self.registries(plan)?;
        Ok(())
    }

    /// The lines of the block `name`, from the record.
    fn block_lines(&self, name: &str) -> Vec<String> {
        let p = self.project;
        match name {
            CRD_BLOCK => self
                .kinds()
                .map(|r| format!("- bases/{}", crd_file(&r.api_group(&p.domain), &r.plural)))
                .collect(),
            SAMPLES_BLOCK => p.apis().map(|r| format!("- {}", r.sample_file())).collect(),
            _ => self
                .kinds()
                .flat_map(|r| {
                    ["admin", "editor", "viewer"]
                        .map(|role| format!("- {}", kind_role_file(r, role)))
                })
                .collect(),
        }
    }

    /// The first API version of each kind the project defines.
    fn kinds(&self) -> impl Iterator<Item = &Resource> {
        let apis: Vec<&Resource> = self.project.apis().collect();
        apis.clone()
            .into_iter()
            .enumerate()
            .filter(move |(i, r)| !apis[..*i].iter().any(|o| o.same_kind(r)))
            .map(|(_, r)| r)
    }

    /// Rewrites the marked blocks of the kustomizations under `root`.
    pub fn kustomization_blocks(&self, plan: &mut Plan, root: &Path) -> Result<(), FilesError> {
        for (path, name) in KUSTOMIZATIONS {
            let full = root.join(path);
            let text = std::fs::read_to_string(&full).map_err(|source| FilesError::Read {
                path: PathBuf::from(path),
                source,
            })?;
            let updated =
                blocks::replace_block(Path::new(path), &text, name, &self.block_lines(name))?;
            plan.replace(path, updated);
        }
        Ok(())
    }

    /// The registries: `src/api/mod.rs` and its group and version modules,
    /// `src/controllers/mod.rs` and its group modules, rewritten whole.
    pub fn registries(&self, plan: &mut Plan) -> Result<(), FilesError> {
        let p = self.project;
        // group -> version -> kinds, in creation order.
        let mut api_tree: BTreeMap<String, (String, BTreeMap<String, Vec<&Resource>>)> =
            BTreeMap::new();
        for r in p.apis() {
            api_tree
                .entry(r.group_module())
                .or_insert_with(|| (r.api_group(&p.domain), BTreeMap::new()))
                .1
                .entry(r.version.clone())
                .or_default()
                .push(r);
        }
        let apis: Vec<minijinja::Value> = p
            .apis()
            .map(|r| {
                context! {
                    group_module => r.group_module(),
                    version => r.version.as_str(),
                    kind => r.kind.as_str(),
                    sample_file => r.sample_file(),
                }
            })
            .collect();
        let groups: Vec<minijinja::Value> = api_tree
            .keys()
            .map(|module| context! { module => module })
            .collect();
        plan.replace(
            "src/api/mod.rs",
            self.render(
                "api_mod.rs",
                self.with(context! { groups => groups, apis => apis }),
            )?,
        );
        for (module, (api_group, versions)) in &api_tree {
            let names: Vec<String> = versions.keys().cloned().collect();
            plan.replace(
                format!("src/api/{module}/mod.rs"),
                self.render(
                    "api_group_mod.rs",
                    self.with(context! { api_group => api_group.as_str(), versions => names }),
                )?,
            );
            for (version, kinds) in versions {
                let kinds: Vec<minijinja::Value> = kinds
                    .iter()
                    .map(|r| context! { kind => r.kind.as_str(), module => r.kind_module() })
                    .collect();
                plan.replace(
                    format!("src/api/{module}/{version}/mod.rs"),
                    self.render(
                        "api_version_mod.rs",
                        self.with(context! {
                            api_group => api_group.as_str(),
                            version => version.as_str(),
                            kinds => kinds,
                        }),
                    )?,
                );
            }
        }

        let mut controller_tree: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
        for r in p.controllers() {
            controller_tree
                .entry(r.group_module())
                .or_insert_with(|| (r.api_group(&p.domain), Vec::new()))
                .1
                .push(r.kind_module());
        }
        let controllers: Vec<minijinja::Value> = p
            .controllers()
            .map(|r| context! { group_module => r.group_module(), module => r.kind_module() })
            .collect();
        let groups: Vec<minijinja::Value> = controller_tree
            .keys()
            .map(|module| context! { module => module })
            .collect();
        plan.replace(
            "src/controllers/mod.rs",
            self.render(
                "controllers_mod.rs",
                self.with(context! { groups => groups, controllers => controllers }),
            )?,
        );
        for (module, (api_group, modules)) in &controller_tree {
            plan.replace(
                format!("src/controllers/{module}/mod.rs"),
                self.render(
                    "controllers_group_mod.rs",
                    self.with(
                        context! { api_group => api_group.as_str(), modules => modules.clone() },
                    ),
                )?,
            );
        }
        Ok(())
    }

    fn resource_context(&self, r: &Resource) -> minijinja::Value {
        self.with(context! {
            group => r.group.as_str(),
            group_module => r.group_module(),
            api_group => r.api_group(&self.project.domain),
            version => r.version.as_str(),
            kind => r.kind.as_str(),
            module => r.kind_module(),
            plural => r.plural.as_str(),
            namespaced => r.namespaced,
            sample_file => r.sample_file(),
            sample_name => r.sample_name(),
        })
    }

    /// The files written once for a new API: the types, the sample, and
    /// (for the kind's first version) its admin, editor and viewer roles.
    /// `storage` marks the types as the kind's storage version.
    pub fn api(
        &self,
        plan: &mut Plan,
        r: &Resource,
        storage: bool,
        first_version: bool,
    ) -> Result<(), FilesError> {
        let ctx = context! { storage => storage, ..self.resource_context(r) };
        plan.create(
            format!(
                "src/api/{}/{}/{}.rs",
                r.group_module(),
                r.version,
                r.kind_module()
            ),
            self.render("types.rs", ctx.clone())?,
        );
        plan.create(
            format!("config/samples/{}", r.sample_file()),
            self.render("sample.yaml", ctx)?,
        );
        if first_version {
            let roles = [
                ("admin", "Grants full permissions ('*') over", vec!["'*'"]),
                (
                    "editor",
                    "Grants create, read, update and delete permissions over",
                    vec![
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                ),
                (
                    "viewer",
                    "Grants read-only permissions over",
                    vec!["get", "list", "watch"],
                ),
            ];
            for (role, what, verbs) in roles {
                let description =
                    format!("{what} {}.{}.", r.plural, r.api_group(&self.project.domain));
                plan.create(
                    format!("config/rbac/{}", kind_role_file(r, role)),
                    self.render(
                        "kind_role.yaml",
                        context! {
                            role_name => format!("{}-{}-{role}-role", r.group, r.kind.to_ascii_lowercase()),
                            description => description,
                            verbs => verbs,
                            ..self.resource_context(r)
                        },
                    )?,
                );
            }
        }
        Ok(())
    }

    /// The files written once for a new controller: the controller and its
    /// test.
    pub fn controller(&self, plan: &mut Plan, r: &Resource) -> Result<(), FilesError> {
        let ctx = self.resource_context(r);
        plan.create(
            format!(
                "src/controllers/{}/{}.rs",
                r.group_module(),
                r.kind_module()
            ),
            self.render("controller.rs", ctx.clone())?,
        );
        plan.create(
            format!("tests/{}_{}.rs", r.group_module(), r.kind_module()),
            self.render("controller_test.rs", ctx)?,
        );
        Ok(())
    }
}

/// A kind's role file under `config/rbac/`.
fn kind_role_file(r: &Resource, role: &str) -> String {
    format!(
        "{}_{}_{role}_role.yaml",
        r.group,
        r.kind.to_ascii_lowercase()
    )
}
