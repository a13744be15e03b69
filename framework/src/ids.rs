//! The names the runtime makes up for itself: the host name (the pod name
//! in a cluster), which an event recorder reports as its instance and a
//! leader-election candidate starts its identity with, and random
//! version-4 UUIDs, for reconcile ids and candidate identities (as
//! controller-runtime and client-go make them).

/// The host name as Go's `os.Hostname` finds it on Linux
/// (`/proc/sys/kernel/hostname`), else the usual environment variables,
/// else `localhost`.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .into_iter()
        .chain(std::env::var("HOSTNAME").ok())
        .chain(std::env::var("COMPUTERNAME").ok())
        .map(|s| s.trim().to_owned())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// A random (version 4) UUID in its usual text form.
pub(crate) fn random_uuid() -> String {
    let mut bits = fastrand::u128(..);
    bits = (bits & !(0xF << 76)) | (0x4 << 76); // version 4
    bits = (bits & !(0x3 << 62)) | (0x2 << 62); // RFC 4122 variant

    // Written digit by digit: this runs once per reconcile.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(36);
    for digit in 0..32 {
        if matches!(digit, 8 | 12 | 16 | 20) {
            text.push('-');
        }
        let nibble = (bits >> (124 - 4 * digit)) & 0xf;
        text.push(char::from(HEX[nibble as usize]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_random_version_4_in_text_form() {
        let id = random_uuid();
        let groups: Vec<&str> = id.split('-').collect();
        assert_eq!(
            groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(id.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        assert!(groups[2].starts_with('4'));
        assert!(matches!(
            groups[3].chars().next(),
            Some('8' | '9' | 'a' | 'b')
        ));
        assert_ne!(random_uuid(), id);
    }

    #[test]
    fn a_host_name_is_always_found() {
        let host = hostname();
        assert!(!host.is_empty());
        assert_eq!(host, host.trim());
    }
}
