//! `kubeforge create api`: a new kind (or version of one) and its
//! controller. The types, sample, roles, controller and test are written
//! once and are the user's; the registries and the kustomizations' marked
//! blocks are rewritten; the kind is recorded in `kubeforge.toml`.

use anyhow::{bail, Context as _};

use crate::files::Files;
use crate::names;
use crate::plan::Plan;
use crate::project::{Project, Resource, RECORD_FILE};
use crate::templates::Templates;

/// `kubeforge create api`'s flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The API group, without the project's domain (e.g. `webapp` for
    /// `webapp.my.domain`).
    #[arg(long)]
    pub group: String,

    /// The API version, e.g. `v1` or `v1alpha1`.
    #[arg(long)]
    pub version: String,

    /// The kind, in UpperCamelCase, e.g. `Guestbook`.
    #[arg(long)]
    pub kind: String,

    /// The plural resource name (default: the kind in lower case,
    /// pluralized in English, e.g. `guestbooks`).
    #[arg(long)]
    pub plural: Option<String>,

    /// Whether objects of the kind live in a namespace (`--namespaced=false`
    /// for a cluster-scoped kind).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub namespaced: bool,

    /// Write the kind's types (`--resource=false` adds only a controller
    /// for a kind the project already defines).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub resource: bool,

    /// Write a controller for the kind (default: unless another version of
    /// the kind has one).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub controller: Option<bool>,
}

/// Names a Rust file of the project would clash with: the generated code
/// imports them beside the kind.
const RESERVED_KINDS: [&str; 8] = [
    "Action",
    "Arc",
    "Condition",
    "ConditionStatus",
    "Context",
    "Duration",
    "Error",
    "Manager",
];

pub fn run(args: Args) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let (root, mut project) = Project::find(&cwd)?;

    names::check_group(&args.group, &project.domain)?;
    names::check_version(&args.version)?;
    names::check_kind(&args.kind)?;
    if RESERVED_KINDS.contains(&args.kind.as_str()) {
        bail!(
            "invalid kind {:?}: the generated code uses a Rust item of that name beside the kind; choose another (for example \"CronJob\")",
            args.kind
        );
    }
    let plural = match &args.plural {
        Some(p) => {
            names::check_plural(p)?;
            p.clone()
        }
        None => names::plural_of(&args.kind),
    };

    let wanted = Resource {
        group: args.group.clone(),
        version: args.version.clone(),
        kind: args.kind.clone(),
        plural,
        namespaced: args.namespaced,
        api: args.resource,
        controller: false,
        webhooks: None,
    };
    let api_group = wanted.api_group(&project.domain);
    let gvk = format!("{api_group}/{} {}", wanted.version, wanted.kind);
    let versions: Vec<Resource> = project
        .resources
        .iter()
        .filter(|r| r.same_kind(&wanted))
        .cloned()
        .collect();
    let kind_has_controller = versions.iter().any(|r| r.controller);
    if let Some(other) = versions.first() {
        if other.plural != wanted.plural || other.namespaced != wanted.namespaced {
            bail!(
                "{} is {} with plural {:?} in {} already; every version of a kind shares them",
                wanted.kind,
                if other.namespaced {
                    "namespaced"
                } else {
                    "cluster-scoped"
                },
                other.plural,
                other.version
            );
        }
    }
    if let Some(clash) = project
        .resources
        .iter()
        .find(|r| r.group == wanted.group && r.plural == wanted.plural && r.kind != wanted.kind)
    {
        bail!(
            "the plural {:?} is taken in {api_group} by {}; pass another with --plural",
            wanted.plural,
            clash.kind
        );
    }
    let existing = project
        .resources
        .iter()
        .position(|r| r.same_kind(&wanted) && r.version == wanted.version);
    let controller = match args.controller {
        Some(true) if kind_has_controller => bail!(
            "{} has a controller already; one controller serves every version of a kind",
            wanted.kind
        ),
        Some(c) => c,
        None => !kind_has_controller,
    };

    let templates = Templates::new().context("the CLI's templates")?;
    let mut plan = Plan::new();
    let mut resource = wanted.clone();
    resource.controller = controller;
    match existing {
        Some(index) => {
            let current = project.resources[index].clone();
            if args.resource {
                bail!(
                    "{gvk} exists already (in {RECORD_FILE}); a kind is created once per version"
                );
            }
            if !controller {
                bail!("{gvk} exists already and --controller=false asks for nothing else");
            }
            resource = Resource {
                controller: true,
                ..current
            };
            project.resources[index] = resource.clone();
        }
        None => {
            if !args.resource {
                bail!(
                    "{gvk} is not a kind of this project ({RECORD_FILE}); create it with --resource (the default) first"
                );
            }
            project.resources.push(resource.clone());
        }
    }

    let files = Files::new(&project, &templates);
    if existing.is_none() {
        // The first version of a kind is its storage version; later ones
        // are served and converted to it.
        let first = versions.is_empty();
        files.api(&mut plan, &resource, first, first)?;
    }
    if controller {
        files.controller(&mut plan, &resource)?;
    }
    files.registries(&mut plan)?;
    files.kustomization_blocks(&mut plan, &root)?;
    plan.replace(RECORD_FILE, project.to_toml());
    let written = plan.apply(&root)?;

    println!("created {gvk}:");
    for path in &written {
        println!("  {}", path.display());
    }
    println!("next: `cargo test`, then `kubeforge generate` for its CRD and RBAC");
    Ok(())
}
