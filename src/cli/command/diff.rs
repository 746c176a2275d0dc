//! `rewind diff [WINDOW]`: unified diff of a window's changes (colored on a terminal).

use std::path::PathBuf;

use clap::Args;
use rewind::engine::DiffEntry;
use rewind::ids::WindowId;
use rewind::merge;
use serde::Serialize;

use crate::cli::context::{parse_id, Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, Out};

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Window id [default: the session's newest window with changes]
    pub window: Option<String>,
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
}

#[derive(Serialize)]
struct DiffJson<'a> {
    window_id: WindowId,
    files: Vec<FileJson<'a>>,
}

#[derive(Serialize)]
struct FileJson<'a> {
    path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    path_bytes: &'a Option<String>,
    change_id: i64,
    note: &'a Option<String>,
    diff: String,
}

pub fn run(inv: &Invocation, out: &Out, args: &DiffArgs) -> Result<Exit, Failure> {
    let ctx = Ctx::open(inv)?;
    let window = args.window.as_deref().map(parse_id).transpose()?;
    let (window, entries) = ctx.session.history().diff(window, &args.paths, &ctx.cwd)?;
    if out.json {
        let files = entries
            .iter()
            .map(|e| FileJson {
                path: &e.path,
                path_bytes: &e.path_bytes,
                change_id: e.change_id,
                note: &e.note,
                diff: unified(e),
            })
            .collect();
        out.print_json(&DiffJson {
            window_id: window,
            files,
        });
    } else {
        let text: String = entries
            .iter()
            .map(|e| colorize(&unified(e), out.color))
            .collect();
        out.print(&text);
    }
    Ok(Exit::Ok)
}

/// A change as a unified diff with three lines of context; binary files are only named, a
/// change without both sides' bytes shows its note instead, and an empty file created or
/// deleted (no lines to show) says so.
pub(crate) fn unified(e: &DiffEntry) -> String {
    let a_name = if e.before_exists {
        name(&format!("a/{}", e.path)).into_owned()
    } else {
        "/dev/null".into()
    };
    let b_name = if e.after_exists {
        name(&format!("b/{}", e.path)).into_owned()
    } else {
        "/dev/null".into()
    };
    if let Some(note) = &e.note {
        return format!("--- {a_name}\n+++ {b_name}\n# {note}\n");
    }
    match (e.before.as_deref(), e.after.as_deref()) {
        (Some([]), None) => return format!("--- {a_name}\n+++ {b_name}\n# deleted, empty\n"),
        (None, Some([])) => return format!("--- {a_name}\n+++ {b_name}\n# created, empty\n"),
        _ => {}
    }
    let before = e.before.as_deref().unwrap_or_default();
    let after = e.after.as_deref().unwrap_or_default();
    match (std::str::from_utf8(before), std::str::from_utf8(after)) {
        (Ok(a), Ok(b)) if !before.contains(&0) && !after.contains(&0) => {
            numbered(a, b, &a_name, &b_name)
        }
        _ if before == after => String::new(),
        _ => format!("Binary files {a_name} and {b_name} differ\n"),
    }
}

/// A unified diff whose hunk headers end in ` hunk N`: the numbers `undo --hunk` takes
/// (counted as [`merge::revert_hunks`] counts them; a unified diff allows text after the
/// second `@@`).
fn numbered(a: &str, b: &str, a_name: &str, b_name: &str) -> String {
    let diff = merge::line_diff(a, b);
    let mut unified = diff.unified_diff();
    unified.context_radius(merge::HUNK_CONTEXT);
    let mut out = String::new();
    for (n, hunk) in unified.iter_hunks().enumerate() {
        if n == 0 {
            out.push_str(&format!("--- {a_name}\n+++ {b_name}\n"));
        }
        let text = hunk.to_string();
        let (header, body) = text.split_once('\n').unwrap_or((&text, ""));
        out.push_str(&format!("{header} hunk {}\n{body}", n + 1));
    }
    out
}

fn colorize(diff: &str, color: bool) -> String {
    if !color {
        return diff.to_string();
    }
    diff.lines()
        .map(|l| {
            let code = if l.starts_with("+++") || l.starts_with("---") {
                "1"
            } else if l.starts_with('+') {
                "32"
            } else if l.starts_with('-') {
                "31"
            } else if l.starts_with("@@") {
                "36"
            } else {
                ""
            };
            if code.is_empty() {
                format!("{l}\n")
            } else {
                format!("\x1b[{code}m{l}\x1b[0m\n")
            }
        })
        .collect()
}
