//! `CronJob` v1 is the hub of the kind's conversions: every other
//! version (v2) converts to and from it, and so to and from each
//! other. The conversions are in the spokes' `cron_job_conversion.rs`.

use kubeforge::crd::conversion::Hub;

use super::CronJob;

impl Hub for CronJob {}
