//! What a soak run samples and how it sums them up: the process's resident
//! set (`/proc/self/statm`, in pages of the size the kernel handed the
//! process in its auxiliary vector), the live heap (from the binary's
//! counting allocator), the controller's figures read from the metrics
//! registry `/metrics` serves, and the least-squares slope of a series.

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

/// `AT_PAGESZ` in the auxiliary vector (`<elf.h>`).
const AT_PAGESZ: u64 = 6;

/// The page size from `/proc/self/auxv` (pairs of native-endian words),
/// 4096 where it cannot be read.
fn page_size() -> u64 {
    let Ok(auxv) = std::fs::read("/proc/self/auxv") else {
        return 4096;
    };
    let word = std::mem::size_of::<usize>();
    auxv.chunks_exact(2 * word)
        .find_map(|pair| {
            let (key, value) = pair.split_at(word);
            let read = |b: &[u8]| -> u64 {
                let mut bytes = [0u8; 8];
                bytes[..word].copy_from_slice(b);
                u64::from_ne_bytes(bytes)
            };
            (read(key) == AT_PAGESZ).then(|| read(value))
        })
        .unwrap_or(4096)
}

/// The resident set size in bytes (`statm`'s second field), `None` off
/// Linux.
pub fn rss_bytes() -> Option<u64> {
    rss_from("/proc/self/statm")
}

/// The resident set size of process `pid` in bytes (pages of this
/// process's size: the same kernel), `None` off Linux or once it is gone.
pub fn rss_bytes_of(pid: u32) -> Option<u64> {
    rss_from(&format!("/proc/{pid}/statm"))
}

fn rss_from(statm: &str) -> Option<u64> {
    let statm = std::fs::read_to_string(statm).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

/// A controller's figures as its metrics say them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ControllerFigures {
    /// Reconciles finished, whatever their result
    /// (`controller_runtime_reconcile_total`).
    pub reconciles: f64,
    /// Reconciles that returned an error
    /// (`controller_runtime_reconcile_errors_total`).
    pub errors: f64,
    /// Keys waiting in the queue (`workqueue_depth`).
    pub queue_depth: f64,
    /// Workers reconciling now (`controller_runtime_active_workers`).
    pub active_workers: f64,
}

/// Reads `controller`'s figures from `registry`, as `/metrics` would
/// serve them.
pub fn controller_figures(registry: &Registry, controller: &str) -> ControllerFigures {
    let mut text = String::new();
    if encode(&mut text, registry).is_err() {
        return ControllerFigures::default();
    }
    parse_figures(&text, controller)
}

/// The figures of `controller` in OpenMetrics `text`.
pub fn parse_figures(text: &str, controller: &str) -> ControllerFigures {
    let label = format!("controller=\"{controller}\"");
    let mut figures = ControllerFigures::default();
    for line in text.lines() {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        if !series.contains(&label) {
            continue;
        }
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let name = series.split('{').next().unwrap_or("");
        match name {
            "controller_runtime_reconcile_total" => figures.reconciles += value,
            "controller_runtime_reconcile_errors_total" => figures.errors += value,
            "workqueue_depth" => figures.queue_depth += value,
            "controller_runtime_active_workers" => figures.active_workers += value,
            _ => {}
        }
    }
    figures
}

/// The least-squares slope of `points` (x, y), `None` with fewer than two
/// distinct x.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The points after the warm-up: the samples past the first 20% of them.
pub fn after_warm_up<T>(samples: &[T]) -> &[T] {
    &samples[samples.len() / 5..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_of_a_line_is_its_gradient_and_of_a_flat_series_zero() {
        let line: Vec<_> = (0..10).map(|x| (x as f64, 3.0 * x as f64 + 7.0)).collect();
        assert!((slope(&line).unwrap() - 3.0).abs() < 1e-9);
        let flat: Vec<_> = (0..10).map(|x| (x as f64, 5.0)).collect();
        assert_eq!(slope(&flat), Some(0.0));
        assert_eq!(slope(&[(1.0, 2.0)]), None);
        assert_eq!(slope(&[(1.0, 2.0), (1.0, 3.0)]), None);
    }

    #[test]
    fn the_figures_of_one_controller_are_summed_from_its_series() {
        let text = r#"# TYPE controller_runtime_reconcile counter
controller_runtime_reconcile_total{controller="memcached",result="success"} 4
controller_runtime_reconcile_total{controller="memcached",result="requeue_after"} 6
controller_runtime_reconcile_total{controller="other",result="success"} 100
controller_runtime_reconcile_errors_total{controller="memcached"} 2
workqueue_depth{name="memcached",controller="memcached"} 3
controller_runtime_active_workers{controller="memcached"} 1
# EOF"#;
        let f = parse_figures(text, "memcached");
        assert_eq!(
            f,
            ControllerFigures {
                reconciles: 10.0,
                errors: 2.0,
                queue_depth: 3.0,
                active_workers: 1.0
            }
        );
    }

    #[test]
    fn the_resident_set_is_read_in_whole_pages() {
        let rss = rss_bytes().expect("statm on Linux");
        assert!(rss > 0);
        assert_eq!(rss % page_size(), 0);
        assert_eq!(rss_bytes_of(std::process::id()).map(|r| r > 0), Some(true));
        assert_eq!(rss_bytes_of(u32::MAX), None, "no such process");
    }
}
