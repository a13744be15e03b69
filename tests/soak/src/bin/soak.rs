//! `soak [--duration 10m] [--sample-every 5s] [--memcacheds N] [--seed N]
//! [--max-heap-slope MIB_PER_MIN]`: runs the memcached operator on the
//! in-process API server under steady writes and injected faults, prints a
//! sample line every few seconds and a summary, and exits non-zero if the
//! run did not converge (or the heap grew faster than the given slope).
//! With `--server-process` the API server runs in a child process (this
//! binary with `--serve-api KUBECONFIG TTL`), so the operator's heap and
//! the server's are measured apart. `--event-ttl` (default 60 s, 0 for
//! never) is the server's Event TTL, an hour in kube-apiserver: shortened
//! so that a run of minutes reaches the steady state an hour would.
//! `--event-window` (default 60 s) is the operator's event recorders'
//! series window, six minutes in client-go, shortened for the same reason.

use std::alloc::System;
use std::process::ExitCode;
use std::time::Duration;

use kubeforge_soak::server::{serve, SERVE_FLAG};
use kubeforge_soak::soak::{print_report, run, SoakOptions};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes allocated and not yet freed. (The allocator already adds a
/// reallocation's growth to `bytes_allocated` and its shrinkage to
/// `bytes_deallocated`; `bytes_reallocated` is the same change again.)
fn live_heap() -> Option<u64> {
    let s = GLOBAL.stats();
    let live = s.bytes_allocated as i128 - s.bytes_deallocated as i128;
    u64::try_from(live).ok()
}

/// `30s`, `10m`, `1h`, or a number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(text.len()),
    );
    let n: f64 = number
        .parse()
        .map_err(|_| format!("not a duration: {text:?} (say 30s, 10m or 1h)"))?;
    let seconds = match unit {
        "" | "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("not a duration unit: {unit:?} (s, m or h)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text}: {e}"))
}

fn parse_args() -> Result<(SoakOptions, Option<f64>), String> {
    let mut options = SoakOptions::default();
    let mut max_slope = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--duration" => options.duration = parse_duration(&value()?)?,
            "--sample-every" => options.sample_every = parse_duration(&value()?)?,
            "--settle" => options.settle = parse_duration(&value()?)?,
            "--event-ttl" => {
                let ttl = parse_duration(&value()?)?;
                options.event_ttl = (!ttl.is_zero()).then_some(ttl);
            }
            "--event-window" => options.event_window = parse_duration(&value()?)?,
            "--memcacheds" => {
                options.memcacheds = value()?.parse().map_err(|e| format!("--memcacheds: {e}"))?
            }
            "--server-process" => {
                let program = std::env::current_exe()
                    .map_err(|e| format!("--server-process: cannot find this program: {e}"))?;
                options.server_process = Some(program);
            }
            "--seed" => options.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--max-heap-slope" => {
                max_slope = Some(value()?.parse().map_err(|e| format!("--max-heap-slope: {e}"))?)
            }
            "-h" | "--help" => {
                return Err("usage: soak [--duration 10m] [--sample-every 5s] [--settle 60s] [--memcacheds 24] [--seed 1] [--event-ttl 60s (0: never)] [--event-window 60s] [--server-process] [--max-heap-slope MIB_PER_MIN]".to_owned())
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if options.memcacheds == 0 {
        return Err("--memcacheds must be at least 1".to_owned());
    }
    Ok((options, max_slope))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, kubeconfig, ttl] = args.as_slice() {
        if flag == SERVE_FLAG {
            let event_ttl = match parse_duration(ttl) {
                Ok(ttl) if ttl.is_zero() => None,
                Ok(ttl) => Some(ttl),
                Err(message) => {
                    eprintln!("{SERVE_FLAG}: {message}");
                    return ExitCode::from(2);
                }
            };
            return match serve(kubeconfig.as_ref(), event_ttl, live_heap).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("API server process failed: {e:#}");
                    ExitCode::FAILURE
                }
            };
        }
    }
    let (options, max_slope) = match parse_args() {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    eprintln!(
        "soak: {:?} of writes and faults over {} Memcacheds (seed {})",
        options.duration, options.memcacheds, options.seed
    );
    let report = match run(options, live_heap).await {
        Ok(report) => report,
        Err(e) => {
            eprintln!("soak failed: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut ok = print_report(&report);
    if let (Some(max), Some(slope)) = (max_slope, report.heap_slope) {
        if slope / 1048576.0 > max {
            eprintln!(
                "the heap grew {:.3} MiB/min after warm-up, more than {max}",
                slope / 1048576.0
            );
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
