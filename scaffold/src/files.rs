//! What a project's files hold, computed from its record: the files `init`
//! writes, the registries and kustomization blocks every `create api` and
//! `create webhook` rewrites, and the files `create api` and `create
//! webhook` write once for a new resource or webhook.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::context;

use crate::blocks::{self, MarkerError};
use crate::names;
use crate::plan::Plan;
use crate::project::{AdmissionWebhook, Project, Resource, WebhookRecord};
use crate::splice::{self, SpliceError};
use crate::templates::{rust_header, rustfmt, Templates};

/// The marked block of `config/crd/kustomization.yaml`.
pub const CRD_BLOCK: &str = "crd-bases";
/// The marked block of `config/samples/kustomization.yaml`.
pub const SAMPLES_BLOCK: &str = "samples";
/// The marked block of `config/rbac/kustomization.yaml`.
pub const ROLES_BLOCK: &str = "per-kind-roles";
/// The marked block of `config/crd/kustomization.yaml` patching converted
/// CRDs.
pub const CRD_PATCHES_BLOCK: &str = "crd-webhook-patches";
/// The marked block of `config/default/kustomization.yaml`'s resources
/// adding the webhook and cert-manager directories.
pub const WEBHOOK_RESOURCES_BLOCK: &str = "webhook-resources";
/// The marked block of `config/default/kustomization.yaml` with the
/// manager's webhook patch and cert-manager's CA injection.
pub const WEBHOOK_PATCHES_BLOCK: &str = "webhook-patches";

/// The kustomization files with a marked block, and the block's name.
pub const KUSTOMIZATIONS: [(&str, &str); 6] = [
    ("config/crd/kustomization.yaml", CRD_BLOCK),
    ("config/crd/kustomization.yaml", CRD_PATCHES_BLOCK),
    ("config/samples/kustomization.yaml", SAMPLES_BLOCK),
    ("config/rbac/kustomization.yaml", ROLES_BLOCK),
    ("config/default/kustomization.yaml", WEBHOOK_RESOURCES_BLOCK),
    ("config/default/kustomization.yaml", WEBHOOK_PATCHES_BLOCK),
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
    /// A generated file lacks what an addition to it is anchored on.
    #[error("{}: {source}; restore it as kubeforge wrote it, or add the webhook there by hand", .path.display())]
    Splice {
        /// The file.
        path: PathBuf,
        /// What is missing.
        #[source]
        source: SpliceError,
    },
    /// The webhook module a second webhook type goes into is unreadable.
    #[error("cannot read {}: {source}; create webhook adds a webhook type to the module the kind's first one wrote: restore it, or add the webhook there by hand", .path.display())]
    ReadWebhook {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
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

/// Where a webhook module's registrations are chained.
const REGISTER_CHAIN: &str = "mgr.webhooks()";

/// What a validator's example rule needs (`name_any`).
const RESOURCE_EXT_IMPORT: &str = "use kubeforge::prelude::ResourceExt as _;";

/// The webhook module of `r`'s defaulter and validator.
pub(crate) fn admission_module_file(r: &Resource) -> String {
    format!(
        "src/webhooks/{}/{}/{}.rs",
        r.group_module(),
        r.version,
        r.kind_module()
    )
}

/// The test of `r`'s defaulter and validator.
fn admission_test_file(r: &Resource) -> String {
    format!(
        "tests/{}_{}_{}_webhook.rs",
        r.group_module(),
        r.kind_module(),
        r.version
    )
}

/// The link of `register`'s chain that registers `which` for `r`: at the
/// path its record gives, or the default.
fn registration(r: &Resource, which: AdmissionWebhook) -> String {
    let record = r.webhooks.clone().unwrap_or_default();
    let (method, custom, constant) = match which {
        AdmissionWebhook::Defaulting => ("defaulter", record.defaulting_path, "DEFAULTING_PATH"),
        AdmissionWebhook::Validation => ("validator", record.validation_path, "VALIDATION_PATH"),
    };
    let (kind, ty) = (&r.kind, format!("{}Webhook", r.kind));
    match custom {
        Some(_) => {
            format!(".{method}_with::<{kind}, _>({ty}, WebhookOptions::default().path({constant}))")
        }
        None => format!(".{method}::<{kind}, _>({ty})"),
    }
}

/// What `kubeforge::webhook` exports that `which`'s section and
/// registration use.
fn webhook_imports(r: &Resource, which: AdmissionWebhook) -> Vec<&'static str> {
    let record = r.webhooks.clone().unwrap_or_default();
    let (mut names, custom) = match which {
        AdmissionWebhook::Defaulting => (vec!["Defaulter"], record.defaulting_path.is_some()),
        AdmissionWebhook::Validation => (
            vec!["Denial", "Validator"],
            record.validation_path.is_some(),
        ),
    };
    if custom {
        names.push("WebhookOptions");
    }
    names
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
        let text = self.render_raw(name, context)?;
        Ok(if name.ends_with(".rs") {
            rustfmt(text)
        } else {
            text
        })
    }

    /// The template `name` rendered, unformatted (a part of a Rust file).
    fn render_raw(&self, name: &str, context: minijinja::Value) -> Result<String, FilesError> {
        self.templates
            .render(name, context)
            .map_err(|source| FilesError::Template {
                name: name.to_owned(),
                source,
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
            ("tests/rbac.rs", "rbac_test.rs"),
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
        let block = |name: &str| blocks::block(name, &self.block_lines(name));
        plan.create(
            "config/crd/kustomization.yaml",
            self.render(
                "crd_kustomization.yaml",
                self.with(
                    context! { block => block(CRD_BLOCK), patches => block(CRD_PATCHES_BLOCK) },
                ),
            )?,
        );
        plan.create(
            "config/samples/kustomization.yaml",
            self.render(
                "samples_kustomization.yaml",
                self.with(context! { block => block(SAMPLES_BLOCK) }),
            )?,
        );
        plan.create(
            "config/rbac/kustomization.yaml",
            self.render(
                "rbac_kustomization.yaml",
                self.with(context! { block => block(ROLES_BLOCK) }),
            )?,
        );
        plan.create(
            "config/default/kustomization.yaml",
            self.render(
                "default_kustomization.yaml",
                self.with(context! {
                    resources_block => block(WEBHOOK_RESOURCES_BLOCK),
                    patches_block => block(WEBHOOK_PATCHES_BLOCK),
                }),
            )?,
        );
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
            CRD_PATCHES_BLOCK => crd_patch_lines(p),
            WEBHOOK_RESOURCES_BLOCK => {
                if p.has_webhooks() {
                    vec!["- ../webhook".to_owned(), "- ../certmanager".to_owned()]
                } else {
                    Vec::new()
                }
            }
            WEBHOOK_PATCHES_BLOCK => webhook_patch_lines(p),
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
        let mut texts: BTreeMap<&str, String> = BTreeMap::new();
        for (path, name) in KUSTOMIZATIONS {
            let text = match texts.remove(path) {
                Some(text) => text,
                None => {
                    std::fs::read_to_string(root.join(path)).map_err(|source| FilesError::Read {
                        path: PathBuf::from(path),
                        source,
                    })?
                }
            };
            let updated =
                blocks::replace_block(Path::new(path), &text, name, &self.block_lines(name))?;
            texts.insert(path, updated);
        }
        for (path, text) in texts {
            plan.replace(path, text);
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
                    .map(|r| {
                        context! {
                            kind => r.kind.as_str(),
                            module => r.kind_module(),
                            conversion => self.converts(r),
                        }
                    })
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
        self.webhook_registries(plan)?;

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

    /// Whether `r`'s version takes part in its kind's conversions (as the
    /// hub or a spoke): its version module then has a `<kind>_conversion`
    /// module.
    fn converts(&self, r: &Resource) -> bool {
        self.project.conversion_hubs().any(|hub| {
            hub.same_kind(r)
                && (hub.version == r.version
                    || hub
                        .conversion_spokes()
                        .is_some_and(|spokes| spokes.contains(&r.version)))
        })
    }

    /// `src/webhooks/mod.rs` and its group and version modules, rewritten
    /// whole.
    fn webhook_registries(&self, plan: &mut Plan) -> Result<(), FilesError> {
        let p = self.project;
        // group -> version -> (kinds, modules), in creation order.
        type Versions = BTreeMap<String, (Vec<String>, Vec<String>)>;
        let mut tree: BTreeMap<String, (String, Versions)> = BTreeMap::new();
        for r in p.admission_webhooks() {
            let (kinds, modules) = tree
                .entry(r.group_module())
                .or_insert_with(|| (r.api_group(&p.domain), BTreeMap::new()))
                .1
                .entry(r.version.clone())
                .or_default();
            kinds.push(r.kind.clone());
            modules.push(r.kind_module());
        }
        let admission: Vec<minijinja::Value> = p
            .admission_webhooks()
            .map(|r| {
                context! {
                    group_module => r.group_module(),
                    version => r.version.as_str(),
                    module => r.kind_module(),
                }
            })
            .collect();
        let conversions: Vec<minijinja::Value> = p
            .conversion_hubs()
            .map(|r| {
                context! {
                    group_module => r.group_module(),
                    hub => r.version.as_str(),
                    kind => r.kind.as_str(),
                    spokes => r.conversion_spokes().unwrap_or_default().to_vec(),
                }
            })
            .collect();
        let groups: Vec<minijinja::Value> = tree
            .keys()
            .map(|module| context! { module => module })
            .collect();
        plan.replace(
            "src/webhooks/mod.rs",
            self.render(
                "webhooks_mod.rs",
                self.with(context! {
                    groups => groups,
                    admission => admission,
                    conversions => conversions,
                }),
            )?,
        );
        for (module, (api_group, versions)) in &tree {
            let names: Vec<String> = versions.keys().cloned().collect();
            plan.replace(
                format!("src/webhooks/{module}/mod.rs"),
                self.render(
                    "webhooks_group_mod.rs",
                    self.with(context! { api_group => api_group.as_str(), versions => names }),
                )?,
            );
            for (version, (kinds, modules)) in versions {
                plan.replace(
                    format!("src/webhooks/{module}/{version}/mod.rs"),
                    self.render(
                        "webhooks_version_mod.rs",
                        self.with(context! {
                            api_group => api_group.as_str(),
                            version => version.as_str(),
                            kinds => kinds.clone(),
                            modules => modules.clone(),
                        }),
                    )?,
                );
            }
        }
        Ok(())
    }

    /// The webhook module of `r`'s defaulter and/or validator and its test,
    /// written once with the webhooks `r`'s record has.
    pub fn admission_webhook(&self, plan: &mut Plan, r: &Resource) -> Result<(), FilesError> {
        let ctx = self.admission_context(r);
        plan.create(
            admission_module_file(r),
            self.render("webhook.rs", ctx.clone())?,
        );
        plan.create(admission_test_file(r), self.render("webhook_test.rs", ctx)?);
        Ok(())
    }

    /// `r`'s webhook module and test, already written, with the webhooks in
    /// `added` spliced in (kubebuilder's webhook updater): each one's
    /// section appended, its registration added to `register`'s chain, its
    /// imports to the `use` lists. A webhook whose `impl` (or test) is there
    /// already is left as it is.
    pub fn add_admission_webhooks(
        &self,
        plan: &mut Plan,
        root: &Path,
        r: &Resource,
        added: &[AdmissionWebhook],
    ) -> Result<(), FilesError> {
        let ctx = self.admission_context(r);
        let read = |path: &str| {
            std::fs::read_to_string(root.join(path)).map_err(|source| FilesError::ReadWebhook {
                path: PathBuf::from(path),
                source,
            })
        };
        let spliced = |path: &str, source: Result<String, SpliceError>| {
            source.map_err(|source| FilesError::Splice {
                path: PathBuf::from(path),
                source,
            })
        };
        let kind = r.kind.as_str();
        let module_path = admission_module_file(r);
        let test_path = admission_test_file(r);
        let mut module = read(&module_path)?;
        // A test the user removed stays removed.
        let mut test = if root.join(&test_path).exists() {
            Some(read(&test_path)?)
        } else {
            None
        };
        for &which in added {
            let (trait_name, section, test_section, test_fn) = match which {
                AdmissionWebhook::Defaulting => (
                    "Defaulter",
                    "webhook_defaulter.rs",
                    "webhook_test_defaulter.rs",
                    "fn the_defaulter_fills_in_spec_foo(",
                ),
                AdmissionWebhook::Validation => (
                    "Validator",
                    "webhook_validator.rs",
                    "webhook_test_validator.rs",
                    "fn the_validator_denies_an_invalid_spec_foo(",
                ),
            };
            if !module.contains(&format!("impl {trait_name}<{kind}> for")) {
                let registration = registration(r, which);
                module = spliced(
                    &module_path,
                    splice::extend_chain(&module, REGISTER_CHAIN, &registration),
                )?;
                module = splice::import(&module, "kubeforge::webhook", &webhook_imports(r, which));
                if which == AdmissionWebhook::Validation {
                    module = splice::add_use(&module, RESOURCE_EXT_IMPORT);
                }
                module = splice::append(&module, &self.render_raw(section, ctx.clone())?);
            }
            if let Some(test) = test.as_mut().filter(|t| !t.contains(test_fn)) {
                if which == AdmissionWebhook::Defaulting {
                    *test = splice::add_use(test, &self.defaulter_test_import(r));
                }
                *test = splice::append(test, &self.render_raw(test_section, ctx.clone())?);
            }
        }
        plan.replace(module_path, rustfmt(module));
        if let Some(test) = test {
            plan.replace(test_path, rustfmt(test));
        }
        Ok(())
    }

    /// What the webhook templates are rendered with.
    fn admission_context(&self, r: &Resource) -> minijinja::Value {
        let record = r.webhooks.clone().unwrap_or_default();
        let mut imports = vec!["AdmissionRequest", "AdmissionResult"];
        for (has, which) in [
            (record.defaulting, AdmissionWebhook::Defaulting),
            (record.validation, AdmissionWebhook::Validation),
        ] {
            if has {
                imports.extend(webhook_imports(r, which));
            }
        }
        imports.sort_unstable();
        imports.dedup();
        context! {
            defaulting => record.defaulting,
            validation => record.validation,
            // Set only for a path the record gives (not kubebuilder's).
            defaulting_path => record.defaulting_path,
            validation_path => record.validation_path,
            webhook_imports => imports,
            defaulter_registration => registration(r, AdmissionWebhook::Defaulting),
            validator_registration => registration(r, AdmissionWebhook::Validation),
            defaulter_test_import => self.defaulter_test_import(r),
            ..self.resource_context(r)
        }
    }

    /// The webhook test's import of the defaulter's default.
    fn defaulter_test_import(&self, r: &Resource) -> String {
        format!(
            "use {}::webhooks::{}::{}::{}::DEFAULT_FOO;",
            names::crate_name(&self.project.name),
            r.group_module(),
            r.version,
            r.kind_module()
        )
    }

    /// The files written once for conversions through the hub `hub`: its
    /// `Hub` marker and the kind's conversion test when `new_hub`, and each
    /// new spoke's conversion to and from the hub.
    pub fn conversion(
        &self,
        plan: &mut Plan,
        hub: &Resource,
        new_hub: bool,
        new_spokes: &[String],
    ) -> Result<(), FilesError> {
        let spokes = hub.conversion_spokes().unwrap_or_default().to_vec();
        let ctx = context! {
            hub => hub.version.as_str(),
            spokes => spokes,
            ..self.resource_context(hub)
        };
        let file = |version: &str| {
            format!(
                "src/api/{}/{version}/{}_conversion.rs",
                hub.group_module(),
                hub.kind_module()
            )
        };
        if new_hub {
            plan.create(
                file(&hub.version),
                self.render("conversion_hub.rs", ctx.clone())?,
            );
            plan.create(
                format!(
                    "tests/{}_{}_conversion.rs",
                    hub.group_module(),
                    hub.kind_module()
                ),
                self.render("conversion_test.rs", ctx.clone())?,
            );
            plan.create(
                format!("config/crd/patches/webhook_in_{}.yaml", hub.plural),
                self.render("crd_webhook_patch.yaml", ctx.clone())?,
            );
        }
        for spoke in new_spokes {
            plan.create(
                file(spoke),
                self.render(
                    "conversion_spoke.rs",
                    context! { version => spoke.as_str(), ..ctx.clone() },
                )?,
            );
        }
        Ok(())
    }

    /// The kustomize files written once, with a project's first webhook
    /// (`config/webhook`, `config/certmanager`, the manager's webhook
    /// patch) and first conversion (`config/crd/kustomizeconfig.yaml`).
    pub fn webhook_config(
        &self,
        plan: &mut Plan,
        first_webhook: bool,
        first_conversion: bool,
    ) -> Result<(), FilesError> {
        let mut files = Vec::new();
        if first_webhook {
            files.extend([
                (
                    "config/webhook/kustomization.yaml",
                    "webhook_kustomization.yaml",
                ),
                ("config/webhook/service.yaml", "webhook_service.yaml"),
                (
                    "config/webhook/kustomizeconfig.yaml",
                    "webhook_kustomizeconfig.yaml",
                ),
                (
                    "config/certmanager/kustomization.yaml",
                    "certmanager_kustomization.yaml",
                ),
                ("config/certmanager/issuer.yaml", "certmanager_issuer.yaml"),
                (
                    "config/certmanager/certificate-webhook.yaml",
                    "certmanager_certificate.yaml",
                ),
                (
                    "config/certmanager/kustomizeconfig.yaml",
                    "certmanager_kustomizeconfig.yaml",
                ),
                (
                    "config/default/manager_webhook_patch.yaml",
                    "manager_webhook_patch.yaml",
                ),
            ]);
        }
        if first_conversion {
            files.push((
                "config/crd/kustomizeconfig.yaml",
                "crd_kustomizeconfig.yaml",
            ));
        }
        for (path, template) in files {
            plan.create(path, self.render(template, self.base())?);
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

/// The `config/crd/kustomization.yaml` block: each converted CRD's patch,
/// and the configuration that renames its conversion Service.
fn crd_patch_lines(p: &Project) -> Vec<String> {
    let hubs: Vec<&Resource> = p.conversion_hubs().collect();
    if hubs.is_empty() {
        return Vec::new();
    }
    let mut lines = vec!["patches:".to_owned()];
    for hub in hubs {
        lines.push(format!("- path: patches/webhook_in_{}.yaml", hub.plural));
    }
    lines.push("configurations:".to_owned());
    lines.push("- kustomizeconfig.yaml".to_owned());
    lines
}

/// The `config/default/kustomization.yaml` block: the manager's webhook
/// patch, the webhook Service's name in the certificate, and cert-manager's
/// CA injection into the webhook configurations and converted CRDs (the
/// `cert-manager.io/inject-ca-from` annotations `kubeforge generate`
/// writes, renamed as kustomize renames the Certificate).
fn webhook_patch_lines(p: &Project) -> Vec<String> {
    if !p.has_webhooks() {
        return Vec::new();
    }
    let has = |pick: fn(&WebhookRecord) -> bool| {
        p.resources
            .iter()
            .any(|r| r.webhooks.as_ref().is_some_and(pick))
    };
    // What carries the annotation: a `select` each.
    let mut selects: Vec<Vec<String>> = Vec::new();
    if has(|w| w.defaulting) {
        selects.push(vec!["kind: MutatingWebhookConfiguration".to_owned()]);
    }
    if has(|w| w.validation) {
        selects.push(vec!["kind: ValidatingWebhookConfiguration".to_owned()]);
    }
    for hub in p.conversion_hubs() {
        selects.push(vec![
            "kind: CustomResourceDefinition".to_owned(),
            format!("name: {}.{}", hub.plural, hub.api_group(&p.domain)),
        ]);
    }
    let mut lines: Vec<String> = [
        "patches:",
        "- path: manager_webhook_patch.yaml",
        "replacements:",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut push = |indent: usize, text: &str| lines.push(format!("{}{text}", " ".repeat(indent)));
    // The Service's name and namespace into the certificate's DNS names.
    for (field, index) in [(".metadata.name", 0), (".metadata.namespace", 1)] {
        push(0, "- source:");
        for line in ["kind: Service", "version: v1", "name: webhook-service"] {
            push(4, line);
        }
        push(4, &format!("fieldPath: {field}"));
        push(2, "targets:");
        push(2, "- select:");
        for line in [
            "kind: Certificate",
            "group: cert-manager.io",
            "version: v1",
            "name: serving-cert",
        ] {
            push(6, line);
        }
        push(4, "fieldPaths:");
        push(4, "- .spec.dnsNames.0");
        push(4, "- .spec.dnsNames.1");
        push(4, "options:");
        push(6, "delimiter: '.'");
        push(6, &format!("index: {index}"));
        push(6, "create: true");
    }
    // The Certificate's namespace/name into the CA-injection annotations.
    for (field, index) in [(".metadata.namespace", 0), (".metadata.name", 1)] {
        push(0, "- source:");
        for line in [
            "kind: Certificate",
            "group: cert-manager.io",
            "version: v1",
            "name: serving-cert",
        ] {
            push(4, line);
        }
        push(4, &format!("fieldPath: {field}"));
        push(2, "targets:");
        for select in &selects {
            push(2, "- select:");
            for line in select {
                push(6, line);
            }
            push(4, "fieldPaths:");
            push(
                4,
                "- .metadata.annotations.[cert-manager.io/inject-ca-from]",
            );
            push(4, "options:");
            push(6, "delimiter: '/'");
            push(6, &format!("index: {index}"));
            push(6, "create: true");
        }
    }
    lines
}
