//! Where output goes, and the small formatting helpers several commands share. Each
//! command renders its own result (`command/<name>.rs`); `--json` output is a
//! `#[derive(Serialize)]` struct there. JSON field names are an interface (documented in
//! the README): change them only with a CHANGELOG entry.

use std::io::Write;

use rewind::ids::WindowId;
use rewind::undo::Shown;
use serde::Serialize;

/// How a command prints: human text or one JSON object, and whether text may be colored.
pub struct Out {
    pub json: bool,
    pub color: bool,
}

impl Out {
    pub(crate) fn print_json(&self, value: &impl Serialize) {
        print_json(value);
    }

    pub(crate) fn print(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
    }
}

/// One JSON object on one line of stdout. It goes through `serde_json::Value`, whose maps
/// are sorted, so every object's keys print in sorted order whatever the struct's field
/// order: the form rewind's `--json` output has always had.
pub(crate) fn print_json(value: &impl Serialize) {
    let value = serde_json::to_value(value).unwrap_or_default();
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{value}");
}

/// A file name as human output prints it: as is, unless it holds a control character (a
/// newline, a tab, an escape sequence), which would break the line or the terminal; then
/// quoted with `\n`-style escapes, as git quotes such names. Every human renderer prints
/// names through this; JSON output keeps them as they are.
pub(crate) fn name(s: &str) -> std::borrow::Cow<'_, str> {
    if s.chars().any(char::is_control) {
        std::borrow::Cow::Owned(format!("\"{}\"", s.escape_debug()))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// A blob as a person reads it: 12 hex digits, or `absent` / `unknown`.
pub(crate) fn short(s: &Shown) -> String {
    match serde_json::to_value(s) {
        Ok(serde_json::Value::String(hex)) if hex.len() == 64 => hex[..12].to_string(),
        Ok(serde_json::Value::String(other)) => other,
        _ => "absent".to_string(),
    }
}

/// An optional window id, `-` for none.
pub(crate) fn opt(w: Option<WindowId>) -> String {
    w.map_or("-".to_string(), |w| w.to_string())
}

#[cfg(test)]
mod tests {
    use super::name;

    #[test]
    fn names_with_control_characters_are_quoted_and_escaped() {
        assert_eq!(name("src/a.rs"), "src/a.rs");
        assert_eq!(name("naïve café.txt"), "naïve café.txt");
        assert_eq!(name("a\nb.txt"), "\"a\\nb.txt\"");
        assert_eq!(name("a\tb\x1b[31m"), "\"a\\tb\\u{1b}[31m\"");
        assert_eq!(name("back\\slash\r"), "\"back\\\\slash\\r\"");
    }
}
