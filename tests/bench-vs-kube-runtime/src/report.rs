//! The table a size prints: each figure for both sides with the ratio
//! (kubeforge / kube-runtime), then the floors and how close kubeforge
//! comes to them.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use crate::child::{Figures, Task};
use crate::kubeforge_side::median;
use crate::workload::Kind;

/// What a figure measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Seconds,
    BytesPerObject,
}

/// One line of the table: medians for both sides.
#[derive(Debug)]
pub struct Row {
    label: String,
    unit: Unit,
    kube: f64,
    kubeforge: f64,
}

/// The median of one named figure over runs.
fn median_of(samples: &[Figures], name: &str) -> f64 {
    let mut values: Vec<f64> = samples
        .iter()
        .filter_map(|f| f.get(name).copied())
        .collect();
    median(&mut values)
}

impl Row {
    /// The rows one task contributes.
    pub fn for_task(task: Task, kube: &[Figures], kubeforge: &[Figures]) -> Vec<Row> {
        let row = |label: String, unit, name: &str| Row {
            label,
            unit,
            kube: median_of(kube, name),
            kubeforge: median_of(kubeforge, name),
        };
        match task {
            Task::Sync { strip } => {
                let fields = if strip {
                    "managedFields stripped"
                } else {
                    "managedFields kept"
                };
                vec![
                    row(format!("time to synced, {fields}"), Unit::Seconds, "secs"),
                    row(
                        format!("live heap per cached object, {fields}"),
                        Unit::BytesPerObject,
                        "live",
                    ),
                    row(
                        format!("peak heap per object while listing, {fields}"),
                        Unit::BytesPerObject,
                        "peak",
                    ),
                ]
            }
            Task::Reconcile { workers } => vec![row(
                format!(
                    "start to all reconciled, {workers} worker{}",
                    if workers == 1 { "" } else { "s" }
                ),
                Unit::Seconds,
                "secs",
            )],
            Task::Floors => Vec::new(),
        }
    }

    fn value(&self, v: f64) -> String {
        match self.unit {
            Unit::Seconds => format!("{v:.3} s"),
            Unit::BytesPerObject => format!("{v:.0} B"),
        }
    }
}

/// Everything measured at one size.
#[derive(Debug)]
pub struct Report {
    kind: Kind,
    objects: usize,
    runs: usize,
    floors: Figures,
    rows: Vec<Row>,
    /// How long filling the server took.
    pub populated: Duration,
}

impl Report {
    /// The report of one size: `floors` holds one sample per run, each
    /// figure of which is reported as its median.
    pub fn new(
        kind: Kind,
        objects: usize,
        runs: usize,
        floors: &[Figures],
        rows: Vec<Row>,
    ) -> Self {
        let names: BTreeSet<&String> = floors.iter().flat_map(|f| f.keys()).collect();
        let floors = names
            .into_iter()
            .map(|n| (n.clone(), median_of(floors, n)))
            .collect();
        Self {
            kind,
            objects,
            runs,
            floors,
            rows,
            populated: Duration::ZERO,
        }
    }

    fn floor(&self, name: &str) -> f64 {
        self.floors.get(name).copied().unwrap_or(f64::NAN)
    }

    fn kubeforge(&self, label: &str) -> f64 {
        self.rows
            .iter()
            .find(|r| r.label == label)
            .map_or(f64::NAN, |r| r.kubeforge)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.objects;
        writeln!(
            f,
            "\n== {n} {}, {:.0} bytes each as served (created in {:.1?}); medians of {} runs, one process per run ==",
            self.kind.title(),
            self.floor("body_bytes") / n as f64,
            self.populated,
            self.runs
        )?;
        writeln!(
            f,
            "{:<58}{:>14}{:>14}{:>9}",
            "", "kube-runtime", "kubeforge", "ratio"
        )?;
        for row in &self.rows {
            writeln!(
                f,
                "{:<58}{:>14}{:>14}{:>8.2}x",
                row.label,
                row.value(row.kube),
                row.value(row.kubeforge),
                row.kubeforge / row.kube
            )?;
        }
        let get = self.floor("get_secs");
        let (decode, reused) = (
            self.floor("decode_fresh_secs"),
            self.floor("decode_reused_secs"),
        );
        let (kept, stripped) = (self.floor("object_kept"), self.floor("object_stripped"));
        writeln!(
            f,
            "floors: one HTTPS GET of the list {get:.3} s; serde_json decode of the typed list {decode:.3} s \
             ({reused:.3} s into memory an earlier decode freed); \
             the decoded object alone {kept:.0} B with managedFields, {stripped:.0} B without"
        )?;
        let larger = get.max(decode);
        let synced = |s: &str| self.kubeforge(&format!("time to synced, managedFields {s}"));
        let live =
            |s: &str| self.kubeforge(&format!("live heap per cached object, managedFields {s}"));
        let peak = |s: &str| {
            self.kubeforge(&format!(
                "peak heap per object while listing, managedFields {s}"
            ))
        };
        write!(
            f,
            "kubeforge against the floors: time to synced {:.2}x (kept) and {:.2}x (stripped) the larger floor; \
             live heap {:.2}x (kept) and {:.2}x (stripped) the decoded object; peak / live heap {:.2}x (kept), {:.2}x (stripped)",
            synced("kept") / larger,
            synced("stripped") / larger,
            live("kept") / kept,
            live("stripped") / stripped,
            peak("kept") / live("kept"),
            peak("stripped") / live("stripped"),
        )
    }
}
