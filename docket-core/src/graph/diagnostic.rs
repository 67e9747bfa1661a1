//! Compiler diagnostics (`docs/graphs.md`, “Diagnostic catalogue”).

use std::fmt;

use serde::{Deserialize, Serialize};

/// How serious a diagnostic is. Only errors block compilation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Blocks compilation.
    Error,
    /// Reported, does not block.
    Warning,
    /// Informational.
    Info,
}

/// One finding of the compiler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Error, warning or info.
    pub severity: Severity,
    /// Stable machine-readable code from the catalogue, e.g. `"unknown_edge_target"`.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// JSON-pointer-like location in the authored document, e.g. `/edges/e1/to`.
    pub path: String,
    /// Public id of the element concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_id: Option<String>,
}

impl Diagnostic {
    /// An error-severity diagnostic.
    #[must_use]
    pub fn error(code: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code: code.to_owned(),
            message: message.into(),
            path: path.into(),
            public_id: None,
        }
    }

    /// A warning-severity diagnostic.
    #[must_use]
    pub fn warning(code: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, path, message)
        }
    }

    /// Attaches the public id of the element concerned.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.public_id = Some(id.into());
        self
    }

    /// Whether the diagnostic blocks compilation.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        write!(f, "{sev}[{}] {}: {}", self.code, self.path, self.message)
    }
}

/// A JSON-pointer path (RFC 6901) from segments: `pointer(&["nodes", "a/b"])` is
/// `"/nodes/a~1b"`. No segments is the whole document, `""`.
#[must_use]
pub fn pointer(segments: &[&str]) -> String {
    let mut out = String::new();
    for segment in segments {
        out.push('/');
        out.push_str(&segment.replace('~', "~0").replace('/', "~1"));
    }
    out
}

/// Fills in missing public ids from paths: `/nodes/<id>/…` (and inputs, fields, outputs,
/// edges) names that element; any other path names the graph itself.
pub(crate) fn fill_public_ids(diagnostics: &mut [Diagnostic], graph_id: &str) {
    const COLLECTIONS: &[&str] = &["inputs", "fields", "outputs", "nodes", "edges"];
    for d in diagnostics.iter_mut().filter(|d| d.public_id.is_none()) {
        let mut segments = d.path.split('/').skip(1);
        let id = match (segments.next(), segments.next()) {
            (Some(collection), Some(id)) if COLLECTIONS.contains(&collection) => {
                id.replace("~1", "/").replace("~0", "~")
            }
            _ => graph_id.to_owned(),
        };
        d.public_id = Some(id);
    }
}

/// Compilation failed: at least one error-severity diagnostic.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("graph does not compile: {}", summary(.diagnostics))]
pub struct CompileError {
    /// Every diagnostic found (errors first, then warnings).
    pub diagnostics: Vec<Diagnostic>,
}

impl CompileError {
    /// The error-severity diagnostics.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }

    /// Whether some error has this code.
    #[must_use]
    pub fn has_code(&self, code: &str) -> bool {
        self.errors().any(|d| d.code == code)
    }
}

/// Errors first, then by path, code and message, so compiler output is stable.
pub fn sort_diagnostics(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (a.severity, &a.path, &a.code, &a.message).cmp(&(b.severity, &b.path, &b.code, &b.message))
    });
}

fn summary(diagnostics: &[Diagnostic]) -> String {
    let errors: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(ToString::to_string)
        .collect();
    errors.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_escapes_tilde_and_slash() {
        assert_eq!(pointer(&[]), "");
        assert_eq!(
            pointer(&["nodes", "a/b~c", "config"]),
            "/nodes/a~1b~0c/config"
        );
    }

    #[test]
    fn public_ids_are_filled_from_paths() {
        let mut diagnostics = vec![
            Diagnostic::error("x", "/nodes/a~1b/config", "m"),
            Diagnostic::error("x", "/id", "m"),
            Diagnostic::error("x", "/edges/e", "m").with_id("kept"),
        ];
        fill_public_ids(&mut diagnostics, "g");
        let ids: Vec<Option<&str>> = diagnostics.iter().map(|d| d.public_id.as_deref()).collect();
        assert_eq!(ids, vec![Some("a/b"), Some("g"), Some("kept")]);
    }

    #[test]
    fn display_and_error_summary_show_only_errors() {
        let err = CompileError {
            diagnostics: vec![
                Diagnostic::error("no_entrypoint", "/edges", "none").with_id("g"),
                Diagnostic::warning("dead_end_node", "/nodes/a", "stuck"),
            ],
        };
        assert!(err.has_code("no_entrypoint") && !err.has_code("dead_end_node"));
        assert_eq!(
            err.to_string(),
            "graph does not compile: error[no_entrypoint] /edges: none"
        );
    }
}
