//! A command's writes, planned in full and checked before any is made, so
//! a command that fails writes nothing: files the user owns are created
//! once (never overwritten), files the CLI owns are rewritten whole, and a
//! failure part-way through undoes what was written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a file may be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The user's from now on: it must not exist yet.
    Create,
    /// The CLI's: replaced whole (or created).
    Replace,
}

/// Why a plan could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Files the plan would create exist already.
    #[error("{} already exist{}: {}", if .0.len() == 1 { "a file" } else { "files" }, if .0.len() == 1 { "s" } else { "" }, .0.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    Exists(Vec<PathBuf>),
    /// A write failed (what had been written is undone).
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// The files a command writes, relative to the project root.
#[derive(Debug, Default)]
pub struct Plan {
    files: BTreeMap<PathBuf, (Mode, String)>,
}

impl Plan {
    /// An empty plan.
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates `path` (a user-owned file): an error at [`apply`](Self::apply)
    /// when it exists.
    pub fn create(&mut self, path: impl Into<PathBuf>, contents: String) {
        self.files.insert(path.into(), (Mode::Create, contents));
    }

    /// Writes `path` whole (a CLI-owned file).
    pub fn replace(&mut self, path: impl Into<PathBuf>, contents: String) {
        self.files.insert(path.into(), (Mode::Replace, contents));
    }

    /// The same plan with every file replaced whole (`init --force`).
    pub fn forced(self) -> Self {
        Self {
            files: self
                .files
                .into_iter()
                .map(|(path, (_, contents))| (path, (Mode::Replace, contents)))
                .collect(),
        }
    }

    /// Checks the plan against `root`: every file to create must be new.
    pub fn check(&self, root: &Path) -> Result<(), PlanError> {
        let existing: Vec<PathBuf> = self
            .files
            .iter()
            .filter(|(path, (mode, _))| *mode == Mode::Create && root.join(path).exists())
            .map(|(path, _)| path.clone())
            .collect();
        if existing.is_empty() {
            Ok(())
        } else {
            Err(PlanError::Exists(existing))
        }
    }

    /// Checks, then writes every file under `root`; returns the files that
    /// changed. On a failed write, files created are removed and files
    /// replaced are restored.
    pub fn apply(self, root: &Path) -> Result<Vec<PathBuf>, PlanError> {
        self.check(root)?;
        let mut undo: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
        let mut created_dirs: Vec<PathBuf> = Vec::new();
        let mut changed = Vec::new();
        for (path, (_, contents)) in &self.files {
            let full = root.join(path);
            let before = std::fs::read(&full).ok();
            if before.as_deref() == Some(contents.as_bytes()) {
                continue;
            }
            let result = create_parents(&full, &mut created_dirs)
                .and_then(|()| std::fs::write(&full, contents));
            if let Err(source) = result {
                rollback(&undo, &created_dirs);
                return Err(PlanError::Write { path: full, source });
            }
            undo.push((full, before));
            changed.push(path.clone());
        }
        Ok(changed)
    }
}

fn create_parents(file: &Path, created: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let Some(parent) = file.parent() else {
        return Ok(());
    };
    let mut missing = Vec::new();
    let mut dir = Some(parent);
    while let Some(d) = dir {
        if d.exists() {
            break;
        }
        missing.push(d.to_owned());
        dir = d.parent();
    }
    std::fs::create_dir_all(parent)?;
    // Deepest last, so undoing removes children first.
    created.extend(missing.into_iter().rev());
    Ok(())
}

fn rollback(undo: &[(PathBuf, Option<Vec<u8>>)], dirs: &[PathBuf]) {
    for (path, before) in undo.iter().rev() {
        let _ = match before {
            Some(bytes) => std::fs::write(path, bytes),
            None => std::fs::remove_file(path),
        };
    }
    for dir in dirs.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_user_files_stop_the_plan_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.rs"), "keep").unwrap();
        let mut plan = Plan::new();
        plan.replace("registry.rs", "new".into());
        plan.create("mine.rs", "overwrite".into());
        let err = plan.apply(dir.path()).unwrap_err();
        assert!(err.to_string().contains("mine.rs"), "{err}");
        assert!(!dir.path().join("registry.rs").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("mine.rs")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn a_failed_write_undoes_the_others() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a-registry.rs"), "old").unwrap();
        // A file where a directory must go makes the last write fail.
        std::fs::write(dir.path().join("c-blocked"), "").unwrap();
        let mut plan = Plan::new();
        plan.replace("a-registry.rs", "new".into());
        plan.create("b-new/deep/file.rs", "x".into());
        plan.create("c-blocked/file.rs", "x".into());
        assert!(plan.apply(dir.path()).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a-registry.rs")).unwrap(),
            "old"
        );
        assert!(
            !dir.path().join("b-new").exists(),
            "created directories are removed"
        );
    }

    #[test]
    fn unchanged_files_are_not_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("same.rs"), "same").unwrap();
        let mut plan = Plan::new();
        plan.replace("same.rs", "same".into());
        plan.replace("other.rs", "other".into());
        assert_eq!(
            plan.apply(dir.path()).unwrap(),
            vec![PathBuf::from("other.rs")]
        );
    }
}
