//! `kubeforge.toml`: the project record. What `init` was told (domain,
//! name, owner, license, where kubeforge comes from), the kubeforge
//! version that wrote it, and every resource `create api` added, so later
//! commands (and future upgrades) can replay the project.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::names;

/// The record's file name.
pub const RECORD_FILE: &str = "kubeforge.toml";

/// The record format this CLI writes and reads.
pub const RECORD_VERSION: u32 = 1;

/// The project record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Project {
    /// The record format.
    pub record_version: u32,
    /// The project (and crate, binary, kustomize prefix) name.
    pub name: String,
    /// The domain every API group ends with.
    pub domain: String,
    /// The copyright owner in file headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// `apache2` or `none`.
    pub license: License,
    /// The kubeforge version of the CLI that last wrote the record.
    pub cli_version: String,
    /// Where the project's kubeforge dependency comes from.
    pub kubeforge: Source,
    /// Every resource, in the order they were created.
    #[serde(default, rename = "resource", skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Resource>,
}

/// The license of the generated files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum License {
    /// Apache License 2.0: a header on every Rust file, `license` in Cargo.toml.
    Apache2,
    /// No license header.
    None,
}

/// Where kubeforge comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Source {
    /// A kubeforge checkout's `framework/` directory (a path dependency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// A version requirement from crates.io.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// One resource: a version of a kind, with or without its types and
/// controller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Resource {
    /// The group without the domain, e.g. `webapp`.
    pub group: String,
    /// The version, e.g. `v1`.
    pub version: String,
    /// The kind, e.g. `Guestbook`.
    pub kind: String,
    /// The plural resource name, e.g. `guestbooks`.
    pub plural: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Whether the project defines the type (`src/api/...`).
    pub api: bool,
    /// Whether the project has a controller for it.
    pub controller: bool,
    /// The webhooks `create webhook` added for this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhooks: Option<WebhookRecord>,
}

/// The webhooks of one resource (kubebuilder's `webhooks` in `PROJECT`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct WebhookRecord {
    /// A defaulter (mutating webhook) for this version.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defaulting: bool,
    /// The defaulter's path when it is not kubebuilder's
    /// `/mutate-<group>-<version>-<kind>` (kubebuilder's `defaultingPath`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaulting_path: Option<String>,
    /// A validator (validating webhook) for this version.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub validation: bool,
    /// The validator's path when it is not kubebuilder's
    /// `/validate-<group>-<version>-<kind>` (kubebuilder's `validationPath`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_path: Option<String>,
    /// This version is the hub of the kind's conversions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conversion: bool,
    /// The versions converted to and from this hub.
    #[serde(default, rename = "spoke", skip_serializing_if = "Vec::is_empty")]
    pub spokes: Vec<String>,
}

impl WebhookRecord {
    /// Whether this version has `which`.
    pub fn has(&self, which: AdmissionWebhook) -> bool {
        match which {
            AdmissionWebhook::Defaulting => self.defaulting,
            AdmissionWebhook::Validation => self.validation,
        }
    }
}

/// A defaulter or a validator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmissionWebhook {
    /// The defaulter (mutating webhook).
    Defaulting,
    /// The validator (validating webhook).
    Validation,
}

impl AdmissionWebhook {
    /// `defaulting` or `validation`, as the flags and the record say.
    pub fn as_str(self) -> &'static str {
        match self {
            AdmissionWebhook::Defaulting => "defaulting",
            AdmissionWebhook::Validation => "validation",
        }
    }

    /// The flag that sets its path.
    pub fn path_flag(self) -> &'static str {
        match self {
            AdmissionWebhook::Defaulting => "--defaulting-path",
            AdmissionWebhook::Validation => "--validation-path",
        }
    }

    /// A valid custom path, for examples.
    pub fn example_path(self) -> &'static str {
        match self {
            AdmissionWebhook::Defaulting => "/custom-default",
            AdmissionWebhook::Validation => "/custom-validate",
        }
    }
}

impl Resource {
    /// The API group: group and domain.
    pub fn api_group(&self, domain: &str) -> String {
        names::full_group(&self.group, domain)
    }

    /// The group's Rust module name.
    pub fn group_module(&self) -> String {
        names::group_module(&self.group)
    }

    /// The kind's Rust module and file name.
    pub fn kind_module(&self) -> String {
        names::snake_case(&self.kind)
    }

    /// The sample's file name under `config/samples/` (kubebuilder's:
    /// `<group>_<version>_<kind>.yaml`, the kind in lower case).
    pub fn sample_file(&self) -> String {
        format!(
            "{}_{}_{}.yaml",
            self.group,
            self.version,
            self.kind.to_ascii_lowercase()
        )
    }

    /// The sample object's name.
    pub fn sample_name(&self) -> String {
        format!("{}-sample", self.kind.to_ascii_lowercase())
    }

    /// Whether `other` is the same kind (any version).
    pub fn same_kind(&self, other: &Resource) -> bool {
        self.group == other.group && self.kind == other.kind
    }

    /// Whether this version has a defaulter or a validator (a webhook
    /// file under `src/webhooks/`).
    pub fn has_admission(&self) -> bool {
        self.webhooks
            .as_ref()
            .is_some_and(|w| w.defaulting || w.validation)
    }

    /// Where the API server calls this version's defaulter and validator,
    /// as `(which, path)`: the path the record gives, or kubebuilder's
    /// default `/mutate-...`/`/validate-...`.
    pub fn admission_paths(&self, domain: &str) -> Vec<(AdmissionWebhook, String)> {
        let Some(w) = &self.webhooks else {
            return Vec::new();
        };
        let mut paths = Vec::new();
        if w.defaulting {
            let path = w.defaulting_path.clone();
            paths.push((
                AdmissionWebhook::Defaulting,
                path.unwrap_or_else(|| self.default_path(AdmissionWebhook::Defaulting, domain)),
            ));
        }
        if w.validation {
            let path = w.validation_path.clone();
            paths.push((
                AdmissionWebhook::Validation,
                path.unwrap_or_else(|| self.default_path(AdmissionWebhook::Validation, domain)),
            ));
        }
        paths
    }

    /// kubebuilder's (and the framework's) default path of a webhook:
    /// `/mutate-<group, dots as dashes>-<version>-<lowercase kind>`, or
    /// `/validate-...`.
    pub fn default_path(&self, which: AdmissionWebhook, domain: &str) -> String {
        let prefix = match which {
            AdmissionWebhook::Defaulting => "mutate",
            AdmissionWebhook::Validation => "validate",
        };
        format!(
            "/{prefix}-{}-{}-{}",
            self.api_group(domain).replace('.', "-"),
            self.version,
            self.kind.to_lowercase()
        )
    }

    /// The spokes, when this version is the hub of the kind's conversions.
    pub fn conversion_spokes(&self) -> Option<&[String]> {
        self.webhooks
            .as_ref()
            .filter(|w| w.conversion)
            .map(|w| w.spokes.as_slice())
    }
}

/// Why the record could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// No `kubeforge.toml` in the directory or above.
    #[error("no {RECORD_FILE} in {} or any directory above it: this is not a kubeforge project (create one with `kubeforge init`)", .0.display())]
    NotAProject(PathBuf),
    /// The record cannot be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The record is not valid.
    #[error("{} is not a valid project record: {message}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl Project {
    /// Finds the record in `start` or the nearest directory above it;
    /// returns the project's root and the record.
    pub fn find(start: &Path) -> Result<(PathBuf, Project), RecordError> {
        let mut dir = Some(start);
        while let Some(d) = dir {
            let path = d.join(RECORD_FILE);
            if path.is_file() {
                return Ok((d.to_owned(), Self::read(&path)?));
            }
            dir = d.parent();
        }
        Err(RecordError::NotAProject(start.to_owned()))
    }

    /// Reads a record file.
    pub fn read(path: &Path) -> Result<Project, RecordError> {
        let text = std::fs::read_to_string(path).map_err(|source| RecordError::Read {
            path: path.to_owned(),
            source,
        })?;
        let invalid = |message: String| RecordError::Invalid {
            path: path.to_owned(),
            message,
        };
        let project: Project = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        if project.record_version != RECORD_VERSION {
            return Err(invalid(format!(
                "record-version {} is not {RECORD_VERSION}, the version this kubeforge reads",
                project.record_version
            )));
        }
        Ok(project)
    }

    /// The record as TOML, with a header saying what it is.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string_pretty(self).unwrap_or_else(|e| {
            // Every field is a string, bool, number or table: serializing
            // cannot fail; say so loudly if it ever does.
            format!("# cannot serialize the project record: {e}\n")
        });
        format!(
            "# The kubeforge project record: `kubeforge create api` and `create webhook`\n\
             # add to it and `kubeforge generate` reads it. Keep it under version control.\n\n{body}"
        )
    }

    /// The resources whose types the project defines.
    pub fn apis(&self) -> impl Iterator<Item = &Resource> {
        self.resources.iter().filter(|r| r.api)
    }

    /// The resources with a controller.
    pub fn controllers(&self) -> impl Iterator<Item = &Resource> {
        self.resources.iter().filter(|r| r.controller)
    }

    /// The resources with a defaulter or validator.
    pub fn admission_webhooks(&self) -> impl Iterator<Item = &Resource> {
        self.resources.iter().filter(|r| r.has_admission())
    }

    /// The hubs of conversion webhooks.
    pub fn conversion_hubs(&self) -> impl Iterator<Item = &Resource> {
        self.resources
            .iter()
            .filter(|r| r.conversion_spokes().is_some())
    }

    /// Whether any resource has a webhook of any kind.
    pub fn has_webhooks(&self) -> bool {
        self.resources.iter().any(|r| {
            r.webhooks
                .as_ref()
                .is_some_and(|w| w.defaulting || w.validation || w.conversion)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> Project {
        Project {
            record_version: RECORD_VERSION,
            name: "guestbook-operator".into(),
            domain: "my.domain".into(),
            owner: Some("The Authors".into()),
            license: License::Apache2,
            cli_version: "0.1.0".into(),
            kubeforge: Source {
                path: Some("/src/kubeforge/framework".into()),
                version: None,
            },
            resources: vec![Resource {
                group: "webapp".into(),
                version: "v1".into(),
                kind: "Guestbook".into(),
                plural: "guestbooks".into(),
                namespaced: true,
                api: true,
                controller: true,
                webhooks: Some(WebhookRecord {
                    defaulting: true,
                    defaulting_path: Some("/custom-default".into()),
                    validation: false,
                    validation_path: None,
                    conversion: true,
                    spokes: vec!["v2".into()],
                }),
            }],
        }
    }

    #[test]
    fn the_record_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECORD_FILE);
        std::fs::write(&path, project().to_toml()).unwrap();
        assert_eq!(Project::read(&path).unwrap(), project());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("[[resource]]"), "{text}");
        assert!(
            text.contains(
                "[resource.webhooks]\ndefaulting = true\ndefaulting-path = \"/custom-default\"\nconversion = true\nspoke = [\"v2\"]"
            ),
            "{text}"
        );
    }

    #[test]
    fn admission_paths_are_the_recorded_ones_or_kubebuilders_defaults() {
        let mut r = project().resources.remove(0);
        assert_eq!(
            r.admission_paths("my.domain"),
            [(AdmissionWebhook::Defaulting, "/custom-default".to_owned())]
        );
        let w = r.webhooks.as_mut().unwrap();
        w.defaulting_path = None;
        w.validation = true;
        assert_eq!(
            r.admission_paths("my.domain"),
            [
                (
                    AdmissionWebhook::Defaulting,
                    "/mutate-webapp-my-domain-v1-guestbook".to_owned()
                ),
                (
                    AdmissionWebhook::Validation,
                    "/validate-webapp-my-domain-v1-guestbook".to_owned()
                )
            ]
        );
    }

    #[test]
    fn the_record_is_found_from_a_subdirectory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RECORD_FILE), project().to_toml()).unwrap();
        let sub = dir.path().join("src/api");
        std::fs::create_dir_all(&sub).unwrap();
        let (root, found) = Project::find(&sub).unwrap();
        assert_eq!(root, dir.path());
        assert_eq!(found.name, "guestbook-operator");
    }

    #[test]
    fn outside_a_project_the_error_names_the_file_and_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        let err = Project::find(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("kubeforge.toml") && err.contains("kubeforge init"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_field_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECORD_FILE);
        std::fs::write(&path, project().to_toml() + "\nsurprise = 1\n").unwrap();
        let err = Project::read(&path).unwrap_err().to_string();
        assert!(err.contains("surprise"), "{err}");
    }
}
