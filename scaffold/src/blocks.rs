//! Blocks the CLI maintains inside files that are otherwise the user's
//! (the kustomizations' resource lists): delimited by marker comments the
//! CLI wrote itself, rewritten whole between them, never touched outside.
//!
//! ```text
//! # +kubeforge:begin:crd-bases (rewritten by kubeforge; edit outside this block)
//! - bases/webapp.my.domain_guestbooks.yaml
//! # +kubeforge:end:crd-bases
//! ```

use std::path::{Path, PathBuf};

/// Why a block could not be rewritten.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}; restore the lines `# +kubeforge:begin:{name} ...` and `# +kubeforge:end:{name}` kubeforge wrote there", .path.display())]
pub struct MarkerError {
    /// The file.
    pub path: PathBuf,
    /// The block's name.
    pub name: String,
    /// What is wrong.
    pub problem: String,
}

fn begin(name: &str) -> String {
    format!("# +kubeforge:begin:{name}")
}

fn end(name: &str) -> String {
    format!("# +kubeforge:end:{name}")
}

/// The block `name` holding `lines`, markers included, without a final
/// newline.
pub fn block(name: &str, lines: &[String]) -> String {
    let mut out = format!(
        "{} (rewritten by kubeforge; edit outside this block)\n",
        begin(name)
    );
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&end(name));
    out
}

/// `text` (the contents of `path`) with its block `name` holding `lines`.
pub fn replace_block(
    path: &Path,
    text: &str,
    name: &str,
    lines: &[String],
) -> Result<String, MarkerError> {
    let error = |problem: &str| MarkerError {
        path: path.to_owned(),
        name: name.to_owned(),
        problem: problem.to_owned(),
    };
    let (begin, end) = (begin(name), end(name));
    let all: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..all.len())
        .filter(|&i| all[i].trim_start().starts_with(&begin))
        .collect();
    let ends: Vec<usize> = (0..all.len()).filter(|&i| all[i].trim() == end).collect();
    let (start, stop) = match (starts.as_slice(), ends.as_slice()) {
        ([start], [stop]) if start < stop => (*start, *stop),
        ([], _) => return Err(error("the begin marker is missing")),
        (_, []) => return Err(error("the end marker is missing")),
        ([_], [_]) => return Err(error("the end marker comes before the begin marker")),
        _ => return Err(error("the markers appear more than once")),
    };
    let mut out = String::new();
    for line in &all[..start] {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&block(name, lines));
    out.push('\n');
    for line in &all[stop + 1..] {
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_block_changes() {
        let text = format!(
            "resources:\n- mine.yaml\n{}\n# after\npatches: []\n",
            block("samples", &["- old.yaml".to_owned()])
        );
        let out = replace_block(
            Path::new("k.yaml"),
            &text,
            "samples",
            &["- a.yaml".to_owned(), "- b.yaml".to_owned()],
        )
        .unwrap();
        assert_eq!(
            out,
            "resources:\n- mine.yaml\n# +kubeforge:begin:samples (rewritten by kubeforge; edit outside this block)\n- a.yaml\n- b.yaml\n# +kubeforge:end:samples\n# after\npatches: []\n"
        );
    }

    #[test]
    fn missing_or_doubled_markers_are_named() {
        let path = Path::new("config/crd/kustomization.yaml");
        let err = replace_block(path, "resources: []\n", "crd-bases", &[]).unwrap_err();
        assert!(err.to_string().contains("config/crd/kustomization.yaml"));
        assert!(err.to_string().contains("begin marker is missing"));
        let twice = format!("{}\n{}\n", block("x", &[]), block("x", &[]));
        let err = replace_block(path, &twice, "x", &[]).unwrap_err();
        assert!(err.to_string().contains("more than once"), "{err}");
    }
}
