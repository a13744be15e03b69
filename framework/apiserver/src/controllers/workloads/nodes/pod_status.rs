//! The shapes both kubelets (the simulated one and the one running
//! processes) write into a pod's status: image names as containerd
//! reports them, container IDs, and pod conditions.

use serde_json::{json, Value};

use crate::machinery::util;

/// The image's digest reference (`docker.io/library/NAME@sha256:…`), as
/// `imageID` shows it.
pub(super) fn image_id(image: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, image.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let name = image.split([':', '@']).next().unwrap_or(image);
    let full = if name.contains('/') {
        if name.split('/').next().is_some_and(|h| h.contains('.')) {
            name.to_owned()
        } else {
            format!("docker.io/{name}")
        }
    } else {
        format!("docker.io/library/{name}")
    };
    format!("{full}@sha256:{hex}")
}

/// The image as containerd names it (`docker.io/library/NAME:TAG`).
pub(super) fn full_image(image: &str) -> String {
    let id = image_id(image);
    let repo = id.split('@').next().unwrap_or(image).to_owned();
    let tag = if image.contains('@') {
        return image.to_owned();
    } else {
        image
            .rsplit_once(':')
            .map(|(_, t)| t)
            .filter(|t| !t.contains('/'))
            .unwrap_or("latest")
    };
    format!("{repo}:{tag}")
}

/// A stable `containerd://…` ID for an instance of a container.
pub(super) fn container_id(uid: &str, restarts: i64) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{uid}/{restarts}").as_bytes(),
    );
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("containerd://{hex}")
}

/// A pod condition; a false one carries its reason and message.
pub(super) fn cond(ty: &str, ok: bool, reason: &str, message: &str) -> Value {
    let mut c = json!({"type": ty, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": util::now()});
    if !ok && !reason.is_empty() {
        c["reason"] = json!(reason);
        if !message.is_empty() {
            c["message"] = json!(message);
        }
    }
    c
}

/// Keeps each condition's `lastTransitionTime` from `old` where its status
/// did not change: transition times move only when a status does.
pub(super) fn keep_transition_times(next: &mut Value, old: &[Value]) {
    if let Some(list) = next.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in list.iter_mut() {
            let same = old
                .iter()
                .find(|o| o.get("type") == c.get("type") && o.get("status") == c.get("status"));
            if let Some(o) = same {
                c["lastTransitionTime"] = o["lastTransitionTime"].clone();
            }
        }
    }
}
