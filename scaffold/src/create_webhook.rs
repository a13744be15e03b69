//! `kubeforge create webhook`: a defaulter and/or validator for a version
//! of a kind, or the conversions between its versions through a hub
//! (kubebuilder's `create webhook --defaulting --programmatic-validation
//! --conversion --spoke`). The webhook module, its test and the
//! conversions are written once and are the user's; the registries, the
//! kustomizations' marked blocks and `kubeforge.toml` are rewritten; the
//! kustomize pieces (`config/webhook`, `config/certmanager`, the manager's
//! webhook patch, the CRD's conversion patch) are written with the first
//! webhook that needs them.

use anyhow::{bail, Context as _};

use crate::files::{admission_module_file, Files};
use crate::names;
use crate::plan::Plan;
use crate::project::{AdmissionWebhook, Project, Resource, WebhookRecord, RECORD_FILE};
use crate::templates::Templates;

/// `kubeforge create webhook`'s flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The API group, without the project's domain (e.g. `webapp`).
    #[arg(long)]
    pub group: String,

    /// The version the webhooks are for (with --conversion: the hub every
    /// other version converts through).
    #[arg(long)]
    pub version: String,

    /// The kind, created already with `kubeforge create api`.
    #[arg(long)]
    pub kind: String,

    /// A defaulter: a mutating webhook that fills in what objects leave
    /// out.
    #[arg(long)]
    pub defaulting: bool,

    /// A validator: a validating webhook that checks creates, updates and
    /// deletes beyond what the schema can say.
    #[arg(long)]
    pub validation: bool,

    /// With --defaulting: serve the defaulter at PATH instead of
    /// `/mutate-<group>-<version>-<kind>` (e.g. `/custom-default`).
    #[arg(long, value_name = "PATH")]
    pub defaulting_path: Option<String>,

    /// With --validation: serve the validator at PATH instead of
    /// `/validate-<group>-<version>-<kind>` (e.g. `/custom-validate`).
    #[arg(long, value_name = "PATH")]
    pub validation_path: Option<String>,

    /// Conversions between the kind's versions through this one, the hub,
    /// served at /convert.
    #[arg(long)]
    pub conversion: bool,

    /// With --conversion: a version converted to and from the hub
    /// (repeat, or separate with commas).
    #[arg(long, value_name = "VERSION", value_delimiter = ',', num_args = 1..)]
    pub spoke: Vec<String>,
}

/// The command that would run, for examples in errors.
fn example(args: &Args, flags: &str) -> String {
    format!(
        "kubeforge create webhook --group {} --version {} --kind {} {flags}",
        args.group, args.version, args.kind
    )
}

impl Args {
    /// Whether this command adds `which`.
    fn adds(&self, which: AdmissionWebhook) -> bool {
        match which {
            AdmissionWebhook::Defaulting => self.defaulting,
            AdmissionWebhook::Validation => self.validation,
        }
    }

    /// The path given for `which`, if any.
    fn path_of(&self, which: AdmissionWebhook) -> Option<&str> {
        match which {
            AdmissionWebhook::Defaulting => self.defaulting_path.as_deref(),
            AdmissionWebhook::Validation => self.validation_path.as_deref(),
        }
    }

    /// The command with a valid path for `which`, for errors.
    fn example_with_path(&self, which: AdmissionWebhook) -> String {
        let what = which.as_str();
        example(
            self,
            &format!("--{what} --{what}-path {}", which.example_path()),
        )
    }
}

const ADMISSION_WEBHOOKS: [AdmissionWebhook; 2] =
    [AdmissionWebhook::Defaulting, AdmissionWebhook::Validation];

/// Where the webhook server serves conversions (the framework's
/// `CONVERT_PATH`, controller-runtime's `/convert`).
const CONVERT_PATH: &str = "/convert";

/// `--defaulting-path`/`--validation-path`: each only with its webhook (as
/// kubebuilder's), and a path the API server and a webhook server accept.
fn check_path_flags(args: &Args) -> anyhow::Result<()> {
    for which in ADMISSION_WEBHOOKS {
        let Some(path) = args.path_of(which) else {
            continue;
        };
        let what = which.as_str();
        if !args.adds(which) {
            bail!(
                "--{what}-path sets where the {what} webhook is served, so it needs --{what} (for example `{}`)",
                args.example_with_path(which)
            );
        }
        names::check_webhook_path(which.path_flag(), path, which.example_path())?;
        if path == CONVERT_PATH {
            bail!(
                "--{what}-path {CONVERT_PATH}: the webhook server serves conversions there; give the {what} webhook a path of its own (for example `{}`)",
                args.example_with_path(which)
            );
        }
    }
    Ok(())
}

/// The webhooks this command adds (to `project.resources[index]`, already
/// recorded) are each served at a path no other webhook of the project
/// uses: of two registrations at one path only the last would be served.
fn check_paths_unique(args: &Args, project: &Project, index: usize) -> anyhow::Result<()> {
    let resource = &project.resources[index];
    let describe = |r: &Resource, which: AdmissionWebhook| {
        format!(
            "the {} webhook of {}/{} {}",
            which.as_str(),
            r.api_group(&project.domain),
            r.version,
            r.kind
        )
    };
    let mut taken: Vec<(String, String)> = Vec::new();
    for (i, r) in project.resources.iter().enumerate() {
        for (which, path) in r.admission_paths(&project.domain) {
            if i != index || !args.adds(which) {
                taken.push((path, describe(r, which)));
            }
        }
    }
    // A default path first, so a custom path that clashes with it is the
    // one named.
    let mut new = resource.admission_paths(&project.domain);
    new.retain(|(which, _)| args.adds(*which));
    new.sort_by_key(|(which, _)| args.path_of(*which).is_some());
    for (which, path) in new {
        if let Some((_, who)) = taken.iter().find(|(p, _)| *p == path) {
            let what = which.as_str();
            let at = match args.path_of(which) {
                Some(custom) => format!("--{what}-path {custom}"),
                None => format!("the {what} webhook's default path {path}"),
            };
            bail!(
                "{at}: {who} is served there already ({RECORD_FILE}); each webhook needs a path of its own (for example `{}`)",
                args.example_with_path(which)
            );
        }
        taken.push((path, describe(resource, which)));
    }
    Ok(())
}

/// The command adding the webhook types `record` lacks, for examples in
/// errors; `None` when it has them all.
fn missing_types_example(args: &Args, record: &WebhookRecord) -> Option<String> {
    let mut flags = Vec::new();
    if !record.defaulting {
        flags.push("--defaulting");
    }
    if !record.validation {
        flags.push("--validation");
    }
    (!flags.is_empty()).then(|| example(args, &flags.join(" ")))
}

/// Asking again for an admission webhook the kind has is refused, naming it
/// (kubebuilder: "defaulting webhook already exists for this resource"):
/// the file is the user's by then, and a second registration at one path
/// would replace the first.
fn check_not_there_already(
    args: &Args,
    gvk: &str,
    file: &str,
    before: &WebhookRecord,
) -> anyhow::Result<()> {
    let again: Vec<&str> = ADMISSION_WEBHOOKS
        .into_iter()
        .filter(|&which| args.adds(which) && before.has(which))
        .map(AdmissionWebhook::as_str)
        .collect();
    if again.is_empty() {
        return Ok(());
    }
    let what = again.join(" and ");
    let webhooks = if again.len() > 1 {
        "webhooks"
    } else {
        "webhook"
    };
    let hint = match missing_types_example(args, before) {
        Some(example) => format!("add a type it lacks instead (for example `{example}`)"),
        None => format!("it has a defaulter and a validator: change them in {file}"),
    };
    bail!("{gvk} has a {what} {webhooks} already ({RECORD_FILE}); {hint}")
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let (root, mut project) = Project::find(&cwd)?;

    names::check_group(&args.group, &project.domain)?;
    names::check_version(&args.version)?;
    names::check_kind(&args.kind)?;
    for spoke in &args.spoke {
        names::check_version(spoke)?;
    }
    if !args.spoke.is_empty() && !args.conversion {
        bail!(
            "--spoke names a version converted through this one, so it needs --conversion (for example `{}`)",
            example(&args, &format!("--conversion --spoke {}", args.spoke.join(",")))
        );
    }
    check_path_flags(&args)?;
    if !(args.defaulting || args.validation || args.conversion) {
        bail!(
            "no webhook asked for: pass --defaulting, --validation or --conversion with --spoke (for example `{}`)",
            example(&args, "--defaulting --validation")
        );
    }
    if args.conversion && args.spoke.is_empty() {
        bail!(
            "--conversion converts other versions through {} (the hub): name them with --spoke (for example `{}`)",
            args.version,
            example(&args, "--conversion --spoke v2")
        );
    }
    if args.spoke.contains(&args.version) {
        bail!(
            "--spoke {0} is the hub itself: a spoke is another version of {1}, converted to and from {0} (for example `{2}`)",
            args.version,
            args.kind,
            example(&args, "--conversion --spoke v2")
        );
    }

    let api_group = names::full_group(&args.group, &project.domain);
    let gvk = format!("{api_group}/{} {}", args.version, args.kind);
    let create_api = |version: &str| {
        format!(
            "kubeforge create api --group {} --version {version} --kind {}",
            args.group, args.kind
        )
    };
    let index = project
        .resources
        .iter()
        .position(|r| {
            r.api && r.group == args.group && r.kind == args.kind && r.version == args.version
        })
        .with_context(|| {
            format!(
                "{gvk} is not a kind of this project ({RECORD_FILE}): webhooks are for kinds the project defines; create it first with `{}`",
                create_api(&args.version)
            )
        })?;
    let resource = project.resources[index].clone();
    for spoke in &args.spoke {
        let exists = project
            .resources
            .iter()
            .any(|r| r.api && r.same_kind(&resource) && &r.version == spoke);
        if !exists {
            bail!(
                "--spoke {spoke}: {api_group}/{spoke} {} is not a version of this project ({RECORD_FILE}); create it first with `{}`",
                args.kind,
                create_api(spoke)
            );
        }
    }

    let before = resource.webhooks.clone().unwrap_or_default();
    let module = admission_module_file(&resource);
    check_not_there_already(&args, &gvk, &module, &before)?;
    let new_admission = args.defaulting || args.validation;
    // A second admission type goes into the module the first one wrote.
    let splice_admission = new_admission && (before.defaulting || before.validation);
    if let Some(other) = project
        .conversion_hubs()
        .find(|r| r.same_kind(&resource) && r.version != resource.version)
    {
        if args.conversion {
            bail!(
                "{} converts through {} already (its hub); a kind has one hub: add spokes there (for example `kubeforge create webhook --group {} --version {} --kind {} --conversion --spoke {}`)",
                args.kind,
                other.version,
                args.group,
                other.version,
                args.kind,
                args.spoke.join(",")
            );
        }
    }
    let new_spokes: Vec<String> = args
        .spoke
        .iter()
        .filter(|s| !before.spokes.contains(s))
        .fold(Vec::new(), |mut acc, s| {
            if !acc.contains(s) {
                acc.push(s.clone());
            }
            acc
        });
    if args.conversion && new_spokes.is_empty() {
        bail!(
            "{gvk} has a conversion webhook already ({RECORD_FILE}) with the spokes {}: name a version it does not convert yet with --spoke{}",
            before.spokes.join(", "),
            missing_types_example(&args, &before)
                .map(|e| format!(", or add another webhook type (for example `{e}`)"))
                .unwrap_or_default()
        );
    }

    let first_webhook = !project.has_webhooks();
    let first_conversion = project.conversion_hubs().next().is_none();
    let new_hub = args.conversion && !before.conversion;
    let after = WebhookRecord {
        defaulting: before.defaulting || args.defaulting,
        defaulting_path: before
            .defaulting_path
            .clone()
            .or(args.defaulting_path.clone()),
        validation: before.validation || args.validation,
        validation_path: before
            .validation_path
            .clone()
            .or(args.validation_path.clone()),
        conversion: before.conversion || args.conversion,
        spokes: before.spokes.iter().chain(&new_spokes).cloned().collect(),
    };
    project.resources[index].webhooks = Some(after);
    let resource = project.resources[index].clone();
    check_paths_unique(&args, &project, index)?;

    let templates = Templates::new().context("the CLI's templates")?;
    let files = Files::new(&project, &templates);
    let mut plan = Plan::new();
    if splice_admission {
        let added: Vec<AdmissionWebhook> = ADMISSION_WEBHOOKS
            .into_iter()
            .filter(|&which| args.adds(which))
            .collect();
        files.add_admission_webhooks(&mut plan, &root, &resource, &added)?;
    } else if new_admission {
        files.admission_webhook(&mut plan, &resource)?;
    }
    if args.conversion {
        files.conversion(&mut plan, &resource, new_hub, &new_spokes)?;
    }
    files.webhook_config(&mut plan, first_webhook, new_hub && first_conversion)?;
    files.registries(&mut plan)?;
    files.kustomization_blocks(&mut plan, &root)?;
    plan.replace(RECORD_FILE, project.to_toml());
    let written = plan.apply(&root)?;

    let mut kinds = Vec::new();
    if args.defaulting {
        kinds.push("defaulting".to_owned());
    }
    if args.validation {
        kinds.push("validation".to_owned());
    }
    if args.conversion {
        kinds.push(format!("conversion from {}", new_spokes.join(", ")));
    }
    println!("created the {} webhook of {gvk}:", kinds.join(", "));
    for path in &written {
        println!("  {}", path.display());
    }
    println!(
        "next: `cargo test`, then `kubeforge generate` for the webhook configurations (config/webhook/manifests.yaml)"
    );
    Ok(())
}
