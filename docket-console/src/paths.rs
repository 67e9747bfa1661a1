//! URL pieces: path segments percent-encoded (ids may hold any printable character) and the
//! opaque run cursor of the list endpoints.

use docket::core::model::{RunCursor, RunId, Timestamp};

/// `segment` with every byte outside the unreserved set (`A-Z a-z 0-9 - . _ ~`) percent-encoded,
/// so an id holding `/`, `?`, `#`, quotes or angle brackets stays one path segment and can
/// never break out of an attribute.
#[must_use]
pub fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A run cursor as one opaque token: `<started_at µs>_<run id>`.
#[must_use]
pub fn cursor_token(cursor: &RunCursor) -> String {
    format!(
        "{}_{}",
        cursor.started_at.as_micros(),
        cursor.run_id.as_str()
    )
}

/// The cursor of a token made by [`cursor_token`].
///
/// # Errors
/// A message when the token is not one.
pub fn parse_cursor(token: &str) -> Result<RunCursor, String> {
    let (micros, id) = token
        .split_once('_')
        .ok_or_else(|| "malformed cursor".to_owned())?;
    let micros: i64 = micros.parse().map_err(|_| "malformed cursor".to_owned())?;
    let run_id = RunId::new(id).map_err(|e| format!("malformed cursor: {e}"))?;
    Ok(RunCursor {
        started_at: Timestamp::from_micros(micros),
        run_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_keep_only_unreserved_bytes() {
        assert_eq!(encode("run-1.a_b~"), "run-1.a_b~");
        assert_eq!(encode("a/b?c#d"), "a%2Fb%3Fc%23d");
        assert_eq!(encode("\"><img>"), "%22%3E%3Cimg%3E");
        assert_eq!(encode("é"), "%C3%A9");
    }

    #[test]
    fn cursors_round_trip_with_underscores_in_the_id() {
        let cursor = RunCursor {
            started_at: Timestamp::from_micros(-5),
            run_id: RunId::new("a_b_c").expect("id"),
        };
        assert_eq!(parse_cursor(&cursor_token(&cursor)), Ok(cursor));
        assert!(parse_cursor("nope").is_err());
        assert!(parse_cursor("x_y").is_err());
    }
}
