//! `CronJob` v2 to and from the hub, v1: the API server calls the
//! operator's conversion webhook (`/convert`) to read or write a CronJob at
//! a version other than the one it stores.
//!
//! The schedule is the one field that differs: v2's parts joined into v1's
//! string, and v1's string split back into parts. Conditions are carried in
//! neither direction, as in the tutorial; the API server keeps the stored
//! ones, since the status is written through its own subresource.

use kubeforge::crd::conversion::{ConversionError, Convertible};

use super::{CronJob, CronJobSpec, CronJobStatus, CronSchedule};
use crate::api::batch::v1;

impl Convertible<v1::CronJob> for CronJob {
    fn to_hub(&self) -> Result<v1::CronJob, ConversionError> {
        let spec = &self.spec;
        let mut converted = v1::CronJob::new(
            "",
            v1::CronJobSpec {
                schedule: spec.schedule.to_cron(),
                starting_deadline_seconds: spec.starting_deadline_seconds,
                concurrency_policy: spec.concurrency_policy,
                suspend: spec.suspend,
                job_template: spec.job_template.clone(),
                successful_jobs_history_limit: spec.successful_jobs_history_limit,
                failed_jobs_history_limit: spec.failed_jobs_history_limit,
            },
        );
        converted.status = self.status.as_ref().map(|s| v1::CronJobStatus {
            active: s.active.clone(),
            last_schedule_time: s.last_schedule_time.clone(),
            conditions: Vec::new(),
        });
        Ok(converted)
    }

    fn from_hub(hub: &v1::CronJob) -> Result<Self, ConversionError> {
        let spec = &hub.spec;
        let mut converted = CronJob::new(
            "",
            CronJobSpec {
                schedule: schedule_from_cron(&spec.schedule)?,
                starting_deadline_seconds: spec.starting_deadline_seconds,
                concurrency_policy: spec.concurrency_policy,
                suspend: spec.suspend,
                job_template: spec.job_template.clone(),
                successful_jobs_history_limit: spec.successful_jobs_history_limit,
                failed_jobs_history_limit: spec.failed_jobs_history_limit,
            },
        );
        converted.status = hub.status.as_ref().map(|s| CronJobStatus {
            active: s.active.clone(),
            last_schedule_time: s.last_schedule_time.clone(),
            conditions: Vec::new(),
        });
        Ok(converted)
    }
}

/// v1's schedule string as v2's parts: exactly five, split on single
/// spaces (so `@hourly`, or two spaces in a row, cannot be expressed), each
/// `*` left out.
fn schedule_from_cron(schedule: &str) -> Result<CronSchedule, ConversionError> {
    let parts: Vec<&str> = schedule.split(' ').collect();
    let [minute, hour, day_of_month, month, day_of_week] = parts[..] else {
        return Err(ConversionError::Failed(
            "invalid schedule: not a standard 5-field schedule".into(),
        ));
    };
    let part = |p: &str| (p != "*").then(|| p.to_string());
    Ok(CronSchedule {
        minute: part(minute),
        hour: part(hour),
        day_of_month: part(day_of_month),
        month: part(month),
        day_of_week: part(day_of_week),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_parts_map_to_fields_with_stars_left_out() {
        let schedule = schedule_from_cron("*/1 2 * jan *").unwrap();
        assert_eq!(schedule.minute.as_deref(), Some("*/1"));
        assert_eq!(schedule.hour.as_deref(), Some("2"));
        assert_eq!(schedule.day_of_month, None);
        assert_eq!(schedule.month.as_deref(), Some("jan"));
        assert_eq!(schedule.day_of_week, None);
        assert_eq!(schedule.to_cron(), "*/1 2 * jan *");
    }

    #[test]
    fn schedules_that_are_not_five_single_spaced_parts_are_refused() {
        for schedule in ["@hourly", "* * * *", "*/5  * * * *", "* * * * * *", ""] {
            let err = schedule_from_cron(schedule).unwrap_err();
            assert_eq!(
                err.to_string().trim_start_matches("conversion failed: "),
                "invalid schedule: not a standard 5-field schedule",
                "{schedule:?}"
            );
        }
    }

    #[test]
    fn an_empty_v2_schedule_is_every_minute() {
        assert_eq!(CronSchedule::default().to_cron(), "* * * * *");
    }
}
