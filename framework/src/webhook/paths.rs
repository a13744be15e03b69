//! kubebuilder's default webhook paths and names: `/mutate-<group with
//! dots as dashes>-<version>-<lowercase kind>` and `/validate-...`, and
//! configuration entries named `m<kind>-<version>.kb.io` and
//! `v<kind>-<version>.kb.io` (controller-runtime's `generateMutatePath`,
//! kubebuilder's webhook markers).

use super::WebhookType;

/// The default path of a webhook for a kind; the core group (`""`) gives
/// `/mutate--v1-pod`, as controller-runtime makes it.
pub fn default_path(webhook_type: WebhookType, group: &str, version: &str, kind: &str) -> String {
    let prefix = match webhook_type {
        WebhookType::Mutating => "mutate",
        WebhookType::Validating => "validate",
    };
    format!(
        "/{prefix}-{}-{version}-{}",
        group.replace('.', "-"),
        kind.to_lowercase()
    )
}

/// The default name of a webhook for a kind, e.g. `mcronjob-v1.kb.io`.
pub fn default_name(webhook_type: WebhookType, version: &str, kind: &str) -> String {
    let prefix = match webhook_type {
        WebhookType::Mutating => 'm',
        WebhookType::Validating => 'v',
    };
    format!("{prefix}{}-{version}.kb.io", kind.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names_are_kubebuilders() {
        assert_eq!(
            default_path(
                WebhookType::Mutating,
                "batch.tutorial.kubebuilder.io",
                "v1",
                "CronJob"
            ),
            "/mutate-batch-tutorial-kubebuilder-io-v1-cronjob"
        );
        assert_eq!(
            default_path(WebhookType::Validating, "", "v1", "Pod"),
            "/validate--v1-pod"
        );
        assert_eq!(
            default_name(WebhookType::Mutating, "v1", "CronJob"),
            "mcronjob-v1.kb.io"
        );
        assert_eq!(
            default_name(WebhookType::Validating, "v2", "Rod"),
            "vrod-v2.kb.io"
        );
    }
}
