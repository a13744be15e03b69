//! The comparison at 2k ConfigMaps and 500 Pods, one run each: every
//! measurement runs for both sides (each child checks its side cached or
//! reconciled every object) and the tables have a figure for each.
//! Timings are printed, never asserted.

use std::process::Command;

#[test]
fn both_sides_sync_and_reconcile_every_object_and_the_table_has_each_figure() {
    let output = Command::new(env!("CARGO_BIN_EXE_kubeforge-bench-vs-kube-runtime"))
        .args(["--objects", "2000", "--pods", "500", "--runs", "1"])
        .output()
        .expect("the benchmark starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    println!("{stdout}");
    // The cache rows are in both tables, the controller rows in the
    // ConfigMaps' only.
    for (label, tables) in [
        ("time to synced, managedFields kept", 2),
        ("time to synced, managedFields stripped", 2),
        ("live heap per cached object, managedFields kept", 2),
        ("live heap per cached object, managedFields stripped", 2),
        ("peak heap per object while listing, managedFields kept", 2),
        (
            "peak heap per object while listing, managedFields stripped",
            2,
        ),
        ("start to all reconciled, 1 worker", 1),
        ("start to all reconciled, 4 workers", 1),
    ] {
        let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with(label)).collect();
        assert_eq!(lines.len(), tables, "{label:?} in\n{stdout}");
        for line in lines {
            let figures: Vec<f64> = line[label.len()..]
                .split_whitespace()
                .filter_map(|w| w.trim_end_matches('x').parse().ok())
                .collect();
            assert_eq!(figures.len(), 3, "{line}");
            assert!(figures.iter().all(|f| f.is_finite() && *f > 0.0), "{line}");
        }
    }
    assert!(stdout.contains("2000 ConfigMaps"), "{stdout}");
    assert!(stdout.contains("500 Pods"), "{stdout}");
    assert_eq!(
        stdout.matches("floors: one HTTPS GET").count(),
        2,
        "{stdout}"
    );
    assert!(
        stdout.contains("into memory an earlier decode freed"),
        "{stdout}"
    );
    // A figure a child did not report prints as NaN.
    assert!(!stdout.contains("NaN"), "{stdout}");
}
