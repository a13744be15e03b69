//! `CronJob` v2 to and from the hub, v1: the API server calls
//! the operator's conversion webhook (`/convert`) to read or write a
//! CronJob at a version other than the one it stores.
//!
//! Convert `spec` and `status`; the metadata is carried over as it is.
//! When the types change, the compiler points here.

use kubeforge::crd::conversion::{ConversionError, Convertible};

use super::{CronJob, CronJobSpec, CronJobStatus};
use crate::api::batch::v1;

impl Convertible<v1::CronJob> for CronJob {
    fn to_hub(&self) -> Result<v1::CronJob, ConversionError> {
        // TODO(user): map every field.
        let mut converted = v1::CronJob::new(
            "",
            v1::CronJobSpec {
                foo: self.spec.foo.clone(),
            },
        );
        converted.status = self.status.as_ref().map(|s| v1::CronJobStatus {
            conditions: s.conditions.clone(),
            observed_generation: s.observed_generation,
        });
        Ok(converted)
    }

    fn from_hub(hub: &v1::CronJob) -> Result<Self, ConversionError> {
        // TODO(user): map every field.
        let mut converted = CronJob::new(
            "",
            CronJobSpec {
                foo: hub.spec.foo.clone(),
            },
        );
        converted.status = hub.status.as_ref().map(|s| CronJobStatus {
            conditions: s.conditions.clone(),
            observed_generation: s.observed_generation,
        });
        Ok(converted)
    }
}
