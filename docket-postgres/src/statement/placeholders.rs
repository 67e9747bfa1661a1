//! Finding and replacing the `$n` placeholders of a statement's text.

use std::fmt;

/// A statement whose placeholders do not match its parameters (a bug in this crate).
#[derive(Debug)]
pub(crate) struct RenderError(String);

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot inline the statement's parameters: {}", self.0)
    }
}

impl std::error::Error for RenderError {}

fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || byte >= 0x80
}

/// `sql` with each parameter `$n` replaced by `literals[n - 1]`. String literals (`'…'`,
/// `E'…'`), quoted identifiers, `--` and `/* */` comments and dollar-quoted bodies are copied
/// unchanged, as is a `$` inside an identifier. Every literal must be used and no
/// placeholder may go past the last one.
pub(crate) fn substitute(sql: &str, literals: &[String]) -> Result<String, RenderError> {
    let bytes = sql.as_bytes();
    let mut out =
        String::with_capacity(sql.len() + literals.iter().map(String::len).sum::<usize>());
    let mut copied = 0; // bytes of `sql` already in `out`
    let mut highest = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' => {
                let escapes = i > 0
                    && matches!(bytes[i - 1], b'E' | b'e')
                    && !(i > 1 && is_identifier_byte(bytes[i - 2]));
                i = skip_quoted(bytes, i, b'\'', escapes);
            }
            b'"' => i = skip_quoted(bytes, i, b'"', false),
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = bytes[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |n| i + n + 1);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = skip_block_comment(bytes, i),
            b'$' if i > 0 && is_identifier_byte(bytes[i - 1]) => i += 1,
            b'$' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let digits = bytes[i + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                let end = i + 1 + digits;
                let n: usize = sql[i + 1..end]
                    .parse()
                    .map_err(|_| RenderError(format!("bad placeholder {}", &sql[i..end])))?;
                let literal = n
                    .checked_sub(1)
                    .and_then(|index| literals.get(index))
                    .ok_or_else(|| {
                        RenderError(format!(
                            "placeholder ${n} but {} parameters were bound",
                            literals.len()
                        ))
                    })?;
                highest = highest.max(n);
                out.push_str(&sql[copied..i]);
                out.push_str(literal);
                copied = end;
                i = end;
            }
            b'$' => i = skip_dollar_quoted(bytes, i),
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied..]);
    if highest != literals.len() {
        return Err(RenderError(format!(
            "{} parameters were bound but the statement uses {highest}",
            literals.len()
        )));
    }
    Ok(out)
}

/// The index after the quoted text starting at `start` (unterminated: the end).
fn skip_quoted(bytes: &[u8], start: usize, quote: u8, backslash_escapes: bool) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if backslash_escapes => i += 2,
            b if b == quote => {
                if bytes.get(i + 1) == Some(&quote) {
                    i += 2; // a doubled quote stays inside
                } else {
                    return i + 1;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index after the (nestable) block comment starting at `start`.
fn skip_block_comment(bytes: &[u8], start: usize) -> usize {
    let mut depth = 0;
    let mut i = start;
    while i + 1 < bytes.len() {
        match (bytes[i], bytes[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index after the dollar-quoted body starting at `start` (`$tag$…$tag$`), or after the
/// lone `$` when no tag opens there.
fn skip_dollar_quoted(bytes: &[u8], start: usize) -> usize {
    let tag_len = bytes[start + 1..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    let close = start + 1 + tag_len;
    if bytes.get(close) != Some(&b'$') {
        return start + 1;
    }
    let tag = &bytes[start..=close];
    let body = close + 1;
    bytes[body..]
        .windows(tag.len())
        .position(|window| window == tag)
        .map_or(bytes.len(), |n| body + n + tag.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(sql: &str, literals: &[&str]) -> Result<String, RenderError> {
        let literals: Vec<String> = literals.iter().map(|s| (*s).to_owned()).collect();
        substitute(sql, &literals)
    }

    #[test]
    fn placeholders_outside_quotes_comments_and_dollar_bodies_are_replaced() {
        let sql = "SELECT $1, '$1', E'\\'$1', \"$1\", a$1, $$ $1 $$, $t$ $1 $t$ -- $1\n\
                   /* $1 /* nested $1 */ $1 */ $2::text, $10";
        let ten: Vec<String> = (1..=10).map(|n| format!("<{n}>")).collect();
        assert_eq!(
            substitute(sql, &ten).expect("render"),
            "SELECT <1>, '$1', E'\\'$1', \"$1\", a$1, $$ $1 $$, $t$ $1 $t$ -- $1\n\
             /* $1 /* nested $1 */ $1 */ <2>::text, <10>"
        );
        // Unused parameters (those between $2 and $10 here) are allowed only up to the highest.
        assert!(render("SELECT $2", &["a"]).is_err(), "past the end");
        assert!(render("SELECT $1", &["a", "b"]).is_err(), "one left over");
        assert!(render("SELECT $0", &["a"]).is_err());
        assert_eq!(
            render("SELECT $1 || $1", &["x"]).expect("repeat"),
            "SELECT x || x"
        );
    }
}
