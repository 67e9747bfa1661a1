//! Reading grants from a token file (`docs/console.md`, “Tokens”).
//!
//! One grant per line: `<role> <token>` or `<role> <tenant> <token>`, where role is `read` or
//! `admin`; blank lines and lines starting with `#` are skipped. Errors name the line number,
//! never the line (it holds a secret).

use docket::core::model::TenantId;

use crate::auth::{Grant, Role};

/// The grants of a token file's text.
///
/// # Errors
/// A message naming the first bad line by number.
pub fn parse_token_file(text: &str) -> Result<Vec<Grant>, String> {
    let mut grants = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let bad = |why: &str| format!("token file line {}: {why}", n + 1);
        let role = match fields.first().copied() {
            Some("read") => Role::Read,
            Some("admin") => Role::Admin,
            _ => return Err(bad("expected `read` or `admin` first")),
        };
        let (tenant, token) = match fields.as_slice() {
            [_, token] => (None, *token),
            [_, tenant, token] => (
                Some(TenantId::new(*tenant).map_err(|e| bad(&format!("tenant: {e}")))?),
                *token,
            ),
            _ => return Err(bad("expected `<role> [<tenant>] <token>`")),
        };
        grants.push(Grant::new(token, role, tenant).map_err(|e| bad(&e))?);
    }
    Ok(grants)
}

/// A grant from `TENANT=TOKEN`.
///
/// # Errors
/// A message without the token.
pub fn parse_tenant_token(text: &str, role: Role) -> Result<Grant, String> {
    let (tenant, token) = text
        .split_once('=')
        .ok_or_else(|| "expected TENANT=TOKEN".to_owned())?;
    let tenant = TenantId::new(tenant).map_err(|e| format!("tenant: {e}"))?;
    Grant::new(token, role, Some(tenant))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_give_grants_and_errors_name_only_the_line_number() {
        let grants = parse_token_file(
            "# console tokens\n\nread rrrrrrrrrrrrrrrrrrrr\nadmin acme aaaaaaaaaaaaaaaaaaaa\n",
        )
        .expect("valid");
        assert_eq!(grants.len(), 2);
        assert_eq!(grants[0].role(), Role::Read);
        assert_eq!(grants[1].tenant().map(|t| t.as_str()), Some("acme"));
        let err = parse_token_file("root secret-secret-secret").expect_err("bad role");
        assert!(err.contains("line 1") && !err.contains("secret"), "{err}");
        let err = parse_token_file("admin short").expect_err("short");
        assert!(!err.contains("short "), "{err}");
        assert!(parse_tenant_token("acme=tttttttttttttttttttt", Role::Read).is_ok());
        assert!(parse_tenant_token("tttttttttttttttttttt", Role::Read).is_err());
    }
}
