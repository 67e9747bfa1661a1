//! Quoting caller-supplied text in messages.
//!
//! Errors echo what they refuse (an id, a status, a URL option) so the operator sees what was
//! wrong; a hostile or accidental 100 KB value must not become a 100 KB error line, log entry
//! or `--json` field. [`excerpt`] is the one place that bounds such echoes.

use std::borrow::Cow;

/// Most characters of a value [`excerpt`] keeps.
pub const EXCERPT_CHARS: usize = 64;

/// `value` unchanged when it has at most [`EXCERPT_CHARS`] characters; otherwise its first
/// [`EXCERPT_CHARS`] characters followed by `…` and the full length in bytes, e.g.
/// `xxxx…(100000 bytes)`. Cuts on a character boundary.
#[must_use]
pub fn excerpt(value: &str) -> Cow<'_, str> {
    match value.char_indices().nth(EXCERPT_CHARS) {
        None => Cow::Borrowed(value),
        Some((cut, _)) => Cow::Owned(format!("{}…({} bytes)", &value[..cut], value.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_kept_and_long_ones_cut_on_a_char_boundary() {
        assert_eq!(excerpt("run_1"), "run_1");
        let exact = "é".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&exact), exact.as_str());
        let long = "é".repeat(100_000);
        let cut = excerpt(&long);
        assert!(cut.starts_with(&"é".repeat(EXCERPT_CHARS)));
        assert!(cut.ends_with("…(200000 bytes)"), "{cut}");
        assert!(cut.len() < 200, "{}", cut.len());
    }
}
