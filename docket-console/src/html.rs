//! HTML output: the one escaping function every page uses for text from runs, graphs and
//! requests, and the page frame.

use std::fmt::Write as _;

/// `text` safe inside element content and inside quoted attribute values: `& < > " '` become
/// character references. Every string that did not come from this crate's own source goes
/// through here before it reaches a page.
#[must_use]
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// A JSON value as indented text, escaped.
#[must_use]
pub fn json_text(value: &serde_json::Value) -> String {
    escape(&serde_json::to_string_pretty(value).unwrap_or_default())
}

/// The page frame: title, navigation, the stylesheet and the script (both served by the
/// console, none inline), and `body` (already escaped HTML).
#[must_use]
pub fn page(title: &str, who: &str, csrf: Option<&str>, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{title} · Docket</title>\
         <link rel=\"stylesheet\" href=\"/ui/assets/console.css\">\
         <script src=\"/ui/assets/console.js\" defer></script></head><body>\
         <nav id=\"nav\"><a href=\"/ui/runs\">Runs</a> <a href=\"/ui/poisoned\">Poisoned</a> \
         <a href=\"/ui/graphs\">Graphs</a> <a href=\"/ui/engine\">Engine</a>\
         <span id=\"who\">{who}</span>",
        title = escape(title),
        who = escape(who),
    );
    if let Some(csrf) = csrf {
        let _ = write!(
            out,
            "<form method=\"post\" action=\"/ui/logout\" id=\"logout-form\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <button type=\"submit\">Log out</button></form>",
            escape(csrf)
        );
    }
    let _ = write!(
        out,
        "</nav><main><h1>{}</h1>{body}</main></body></html>",
        escape(title)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_become_references() {
        assert_eq!(
            escape(r#"<script>alert(1)</script>"#),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(
            escape(r#""><img src=x onerror='a'>&"#),
            "&quot;&gt;&lt;img src=x onerror=&#39;a&#39;&gt;&amp;"
        );
        assert_eq!(escape("plain é"), "plain é");
    }
}
