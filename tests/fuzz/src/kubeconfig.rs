//! The kubeconfig loader: YAML files merged in precedence order
//! ([`Kubeconfig::read_paths`]), each context turned into a client
//! configuration and a client (CA and client certificate PEM, tokens,
//! exec entries), the YAML round trip, and the output of exec credential
//! plugins. What is written must read back the same: a kubeconfig's YAML,
//! read and written again, is unchanged.
//!
//! Input: parts separated by `%%` lines. A part whose first line is
//! `#!exec API-VERSION` is what an exec plugin configured for that version
//! printed; every other part is a kubeconfig file (`config-0`, `config-1`,
//! ... in a fresh folder, so relative paths in them resolve there).
//! Inputs naming `/dev`, `/proc` or `/sys` are skipped: a device a user
//! names is read as client-go would read it, to its end.

use kubeforge::client::{KubeConfigOptions, Kubeconfig};
use kubeforge::fuzzing::decode_exec_credential;
use kubeforge::Client;

use crate::input::{find, first_line, parts};
use crate::{bounded, timed, Checked, FindingKind, Limits};

/// The most parts one input has.
const MAX_PARTS: usize = 4;
/// The most contexts turned into clients per input.
const MAX_CONTEXTS: usize = 8;

pub(crate) fn check(data: &[u8], limits: &Limits) -> Checked {
    if [&b"/dev"[..], b"/proc", b"/sys"]
        .iter()
        .any(|p| find(data, p).is_some())
    {
        return Ok(());
    }
    let mut files = Vec::new();
    for part in parts(data, MAX_PARTS) {
        let (line, rest) = first_line(part);
        match line.strip_prefix(b"#!exec ") {
            Some(version) => {
                let version = String::from_utf8_lossy(version);
                let decoded = timed(limits, "reading exec plugin output", || {
                    decode_exec_credential(version.trim(), rest)
                })?;
                if let Err(e) = decoded {
                    bounded("an exec plugin error", e.to_string().len(), 0, 1, 4096)?;
                }
            }
            None => files.push(part),
        }
    }
    for file in &files {
        round_trip(file, limits)?;
    }
    merged(&files, limits)
}

/// Read, written, read and written again: the two YAML texts are equal.
fn round_trip(file: &[u8], limits: &Limits) -> Checked {
    let Ok(text) = std::str::from_utf8(file) else {
        return Ok(());
    };
    let Ok(first) = timed(limits, "parsing a kubeconfig", || {
        Kubeconfig::from_yaml(text)
    })?
    else {
        return Ok(());
    };
    let Ok(written) = first.to_yaml() else {
        return Ok(());
    };
    let again = Kubeconfig::from_yaml(&written).map_err(|e| {
        (
            FindingKind::Inconsistent,
            format!("the written kubeconfig does not read back: {e}\n{written}"),
        )
    })?;
    let rewritten = again.to_yaml().map_err(|e| {
        (
            FindingKind::Inconsistent,
            format!("the kubeconfig read back does not write: {e}"),
        )
    })?;
    if rewritten != written {
        return Err((
            FindingKind::Inconsistent,
            format!("the kubeconfig changed in a round trip:\n{written}\n---\n{rewritten}"),
        ));
    }
    Ok(())
}

/// The files merged, and each context (and the current one) made a client.
fn merged(files: &[&[u8]], limits: &Limits) -> Checked {
    let Ok(dir) = tempfile::tempdir() else {
        return Ok(());
    };
    let mut paths = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let path = dir.path().join(format!("config-{i}"));
        if std::fs::write(&path, file).is_err() {
            return Ok(());
        }
        paths.push(path);
    }
    let Ok(kc) = timed(limits, "reading the kubeconfig files", || {
        Kubeconfig::read_paths(&paths)
    })?
    else {
        return Ok(());
    };
    let mut choices = vec![KubeConfigOptions::default()];
    choices.extend(
        kc.contexts
            .iter()
            .take(MAX_CONTEXTS)
            .map(|c| KubeConfigOptions {
                context: Some(c.name.clone()),
                ..KubeConfigOptions::default()
            }),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| (FindingKind::Contract, format!("no runtime: {e}")))?;
    let _entered = runtime.enter();
    for options in &choices {
        let config = timed(limits, "building a client configuration", || {
            kc.to_config(options)
        })?;
        if let Ok(config) = config {
            timed(limits, "building a client", || Client::try_from(config))?.ok();
        }
    }
    Ok(())
}
