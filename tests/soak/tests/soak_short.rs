//! The soak, short: 25 seconds of writes and injected faults against the
//! memcached operator, then the convergence check. The memory figures are
//! printed (`--nocapture`), not asserted: a half-minute slope says little.

use std::alloc::System;
use std::time::Duration;

use kubeforge_soak::soak::{print_report, run, SoakOptions};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn live_heap() -> Option<u64> {
    let s = GLOBAL.stats();
    let live = s.bytes_allocated as i128 - s.bytes_deallocated as i128;
    u64::try_from(live).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_converges_after_half_a_minute_of_writes_and_faults() {
    let options = SoakOptions {
        duration: Duration::from_secs(25),
        sample_every: Duration::from_secs(2),
        memcacheds: 16,
        ..SoakOptions::default()
    };
    let report = run(options, live_heap).await.expect("the soak runs");
    let converged = print_report(&report);
    assert!(report.writes > 50, "the writers wrote: {}", report.writes);
    assert!(report.faults > 5, "faults were injected: {}", report.faults);
    let last = report.samples.last().expect("samples");
    assert!(last.figures.reconciles > 0.0);
    assert!(converged, "not converged: {:#?}", report.unconverged);
}
