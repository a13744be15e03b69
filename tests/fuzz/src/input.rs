//! How the targets read their inputs: several parts of one input
//! separated by a `%%` line (so corpus files stay readable text, while a
//! part may hold any bytes), and a first line of settings.

/// The line that separates the parts of one input.
const SEPARATOR: &[u8] = b"\n%%\n";

/// The parts of `data`, split on `%%` lines (at most `max` of them; the
/// last keeps the rest).
pub(crate) fn parts(data: &[u8], max: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while out.len() + 1 < max {
        match find(rest, SEPARATOR) {
            Some(i) => {
                out.push(&rest[..i]);
                rest = &rest[i + SEPARATOR.len()..];
            }
            None => break,
        }
    }
    out.push(rest);
    out
}

/// The first line of `data` (without its newline) and what follows it.
pub(crate) fn first_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// Where `needle` first occurs in `haystack`.
pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A small deterministic generator, seeded by the input, for choices
/// (chunk sizes) that must replay exactly.
pub(crate) struct Choices(u64);

impl Choices {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    /// A number in `1..=max`.
    pub(crate) fn up_to(&mut self, max: usize) -> usize {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        1 + (r % max.max(1) as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_split_on_separator_lines_only() {
        assert_eq!(parts(b"a\n%%\nb%%c\n%%\n", 8), [&b"a"[..], b"b%%c", b""]);
        assert_eq!(parts(b"a\n%%\nb\n%%\nc", 2), [&b"a"[..], b"b\n%%\nc"]);
        assert_eq!(first_line(b"x y\nrest\n"), (&b"x y"[..], &b"rest\n"[..]));
    }
}
