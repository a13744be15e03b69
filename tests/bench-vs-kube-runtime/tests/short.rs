//! The comparison at 2k objects, one run each: every measurement runs for
//! both sides (each child checks its side cached or reconciled every
//! object) and the table has a figure for each. Timings are printed, never
//! asserted.

use std::process::Command;

#[test]
fn both_sides_sync_and_reconcile_every_object_and_the_table_has_each_figure() {
    let output = Command::new(env!("CARGO_BIN_EXE_kubeforge-bench-vs-kube-runtime"))
        .args(["--objects", "2000", "--runs", "1"])
        .output()
        .expect("the benchmark starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    println!("{stdout}");
    for label in [
        "time to synced, managedFields kept",
        "time to synced, managedFields stripped",
        "live heap per cached object, managedFields kept",
        "live heap per cached object, managedFields stripped",
        "peak heap per object while listing, managedFields kept",
        "peak heap per object while listing, managedFields stripped",
        "start to all reconciled, 1 worker",
        "start to all reconciled, 4 workers",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no line {label:?} in\n{stdout}"));
        let figures: Vec<f64> = line[label.len()..]
            .split_whitespace()
            .filter_map(|w| w.trim_end_matches('x').parse().ok())
            .collect();
        assert_eq!(figures.len(), 3, "{line}");
        assert!(figures.iter().all(|f| f.is_finite() && *f > 0.0), "{line}");
    }
    assert!(stdout.contains("2000 ConfigMaps"), "{stdout}");
    assert!(stdout.contains("floors: one HTTPS GET"), "{stdout}");
    assert!(
        stdout.contains("into memory an earlier decode freed"),
        "{stdout}"
    );
    // A figure a child did not report prints as NaN.
    assert!(!stdout.contains("NaN"), "{stdout}");
}
