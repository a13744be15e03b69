//! The templates the CLI renders (minijinja, compiled into the binary) and
//! the header every generated Rust file starts with.

use minijinja::{Environment, UndefinedBehavior, Value};

use crate::project::{License, Project};

/// Every template, by name.
const TEMPLATES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("templates/project/Cargo.toml.j2"),
    ),
    (
        "Dockerfile",
        include_str!("templates/project/Dockerfile.j2"),
    ),
    (
        ".dockerignore",
        include_str!("templates/project/dockerignore.j2"),
    ),
    (".gitignore", include_str!("templates/project/gitignore.j2")),
    ("ci.yml", include_str!("templates/project/ci.yml.j2")),
    ("README.md", include_str!("templates/project/README.md.j2")),
    ("main.rs", include_str!("templates/rust/main.rs.j2")),
    ("lib.rs", include_str!("templates/rust/lib.rs.j2")),
    ("api_mod.rs", include_str!("templates/rust/api_mod.rs.j2")),
    (
        "api_group_mod.rs",
        include_str!("templates/rust/api_group_mod.rs.j2"),
    ),
    (
        "api_version_mod.rs",
        include_str!("templates/rust/api_version_mod.rs.j2"),
    ),
    (
        "controllers_mod.rs",
        include_str!("templates/rust/controllers_mod.rs.j2"),
    ),
    (
        "controllers_group_mod.rs",
        include_str!("templates/rust/controllers_group_mod.rs.j2"),
    ),
    ("types.rs", include_str!("templates/rust/types.rs.j2")),
    (
        "controller.rs",
        include_str!("templates/rust/controller.rs.j2"),
    ),
    (
        "controller_test.rs",
        include_str!("templates/rust/controller_test.rs.j2"),
    ),
    (
        "manifests_test.rs",
        include_str!("templates/rust/manifests_test.rs.j2"),
    ),
    (
        "rbac_test.rs",
        include_str!("templates/rust/rbac_test.rs.j2"),
    ),
    (
        "default_kustomization.yaml",
        include_str!("templates/config/default_kustomization.yaml.j2"),
    ),
    (
        "metrics_service.yaml",
        include_str!("templates/config/metrics_service.yaml.j2"),
    ),
    (
        "manager_kustomization.yaml",
        include_str!("templates/config/manager_kustomization.yaml.j2"),
    ),
    (
        "manager.yaml",
        include_str!("templates/config/manager.yaml.j2"),
    ),
    (
        "rbac_kustomization.yaml",
        include_str!("templates/config/rbac_kustomization.yaml.j2"),
    ),
    (
        "service_account.yaml",
        include_str!("templates/config/service_account.yaml.j2"),
    ),
    (
        "crd_kustomization.yaml",
        include_str!("templates/config/crd_kustomization.yaml.j2"),
    ),
    (
        "samples_kustomization.yaml",
        include_str!("templates/config/samples_kustomization.yaml.j2"),
    ),
    (
        "prometheus_kustomization.yaml",
        include_str!("templates/config/prometheus_kustomization.yaml.j2"),
    ),
    (
        "monitor.yaml",
        include_str!("templates/config/monitor.yaml.j2"),
    ),
    (
        "network_policy_kustomization.yaml",
        include_str!("templates/config/network_policy_kustomization.yaml.j2"),
    ),
    (
        "allow_metrics_traffic.yaml",
        include_str!("templates/config/allow_metrics_traffic.yaml.j2"),
    ),
    (
        "sample.yaml",
        include_str!("templates/config/sample.yaml.j2"),
    ),
    (
        "kind_role.yaml",
        include_str!("templates/config/kind_role.yaml.j2"),
    ),
    (
        "webhooks_mod.rs",
        include_str!("templates/rust/webhooks_mod.rs.j2"),
    ),
    (
        "webhooks_group_mod.rs",
        include_str!("templates/rust/webhooks_group_mod.rs.j2"),
    ),
    (
        "webhooks_version_mod.rs",
        include_str!("templates/rust/webhooks_version_mod.rs.j2"),
    ),
    ("webhook.rs", include_str!("templates/rust/webhook.rs.j2")),
    (
        "webhook_test.rs",
        include_str!("templates/rust/webhook_test.rs.j2"),
    ),
    (
        "webhook_defaulter.rs",
        include_str!("templates/rust/webhook_defaulter.rs.j2"),
    ),
    (
        "webhook_validator.rs",
        include_str!("templates/rust/webhook_validator.rs.j2"),
    ),
    (
        "webhook_test_defaulter.rs",
        include_str!("templates/rust/webhook_test_defaulter.rs.j2"),
    ),
    (
        "webhook_test_validator.rs",
        include_str!("templates/rust/webhook_test_validator.rs.j2"),
    ),
    (
        "conversion_hub.rs",
        include_str!("templates/rust/conversion_hub.rs.j2"),
    ),
    (
        "conversion_spoke.rs",
        include_str!("templates/rust/conversion_spoke.rs.j2"),
    ),
    (
        "conversion_test.rs",
        include_str!("templates/rust/conversion_test.rs.j2"),
    ),
    (
        "webhook_kustomization.yaml",
        include_str!("templates/config/webhook_kustomization.yaml.j2"),
    ),
    (
        "webhook_service.yaml",
        include_str!("templates/config/webhook_service.yaml.j2"),
    ),
    (
        "webhook_kustomizeconfig.yaml",
        include_str!("templates/config/webhook_kustomizeconfig.yaml.j2"),
    ),
    (
        "certmanager_kustomization.yaml",
        include_str!("templates/config/certmanager_kustomization.yaml.j2"),
    ),
    (
        "certmanager_issuer.yaml",
        include_str!("templates/config/certmanager_issuer.yaml.j2"),
    ),
    (
        "certmanager_certificate.yaml",
        include_str!("templates/config/certmanager_certificate.yaml.j2"),
    ),
    (
        "certmanager_kustomizeconfig.yaml",
        include_str!("templates/config/certmanager_kustomizeconfig.yaml.j2"),
    ),
    (
        "manager_webhook_patch.yaml",
        include_str!("templates/config/manager_webhook_patch.yaml.j2"),
    ),
    (
        "crd_kustomizeconfig.yaml",
        include_str!("templates/config/crd_kustomizeconfig.yaml.j2"),
    ),
    (
        "crd_webhook_patch.yaml",
        include_str!("templates/config/crd_webhook_patch.yaml.j2"),
    ),
];

/// The template environment.
pub struct Templates {
    env: Environment<'static>,
}

impl Templates {
    /// Loads every template. A template that does not parse is a bug in
    /// this CLI, caught by its tests.
    pub fn new() -> Result<Self, minijinja::Error> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .keep_trailing_newline(true)
                .build()?,
        );
        for (name, source) in TEMPLATES {
            env.add_template(name, source)?;
        }
        Ok(Self { env })
    }

    /// Renders the template `name` with `context`.
    pub fn render(&self, name: &str, context: Value) -> Result<String, minijinja::Error> {
        self.env.get_template(name)?.render(context)
    }
}

/// `source` as rustfmt formats it (edition 2021), so generated code passes
/// `cargo fmt --check` whatever the names in it; unchanged when rustfmt is
/// missing or refuses it.
pub fn rustfmt(source: String) -> String {
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    let child = Command::new("rustfmt")
        .args(["--edition", "2021", "--quiet"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return source;
    };
    let written = child
        .stdin
        .take()
        .is_some_and(|mut stdin| stdin.write_all(source.as_bytes()).is_ok());
    match child.wait_with_output() {
        Ok(out) if written && out.status.success() && !out.stdout.is_empty() => {
            String::from_utf8(out.stdout).unwrap_or(source)
        }
        _ => source,
    }
}

/// The comment at the top of every generated Rust file: the license
/// header, or nothing.
pub fn rust_header(project: &Project) -> String {
    match project.license {
        License::None => String::new(),
        License::Apache2 => {
            let owner = project.owner.as_deref().unwrap_or("The Authors");
            format!(
                "// Copyright {year} {owner}.\n\
                 //\n\
                 // Licensed under the Apache License, Version 2.0 (the \"License\");\n\
                 // you may not use this file except in compliance with the License.\n\
                 // You may obtain a copy of the License at\n\
                 //\n\
                 //     http://www.apache.org/licenses/LICENSE-2.0\n\
                 //\n\
                 // Unless required by applicable law or agreed to in writing, software\n\
                 // distributed under the License is distributed on an \"AS IS\" BASIS,\n\
                 // WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n\
                 // See the License for the specific language governing permissions and\n\
                 // limitations under the License.\n\n",
                year = current_year()
            )
        }
    }
}

/// The current year (UTC), from the system clock.
fn current_year() -> i64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    // Howard Hinnant's civil-from-days, year part.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(month <= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses() {
        Templates::new().expect("templates parse");
    }

    #[test]
    fn rust_is_formatted_when_rustfmt_is_there() {
        let formatted = rustfmt("fn  main( ) { let x=1 ; }".to_owned());
        if std::process::Command::new("rustfmt")
            .arg("--version")
            .output()
            .is_ok()
        {
            assert_eq!(formatted, "fn main() {\n    let x = 1;\n}\n");
        }
    }

    #[test]
    fn the_year_is_plausible() {
        let year = current_year();
        assert!((2024..3000).contains(&year), "{year}");
    }
}
