//! Agent edit-safety commands: `read`, `edit`, `write`, `search`, `context`. Each resolves
//! its session, calls the library's tools and renders the result; refusals map to exit codes
//! here (see [`tool_failure`]).

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;
use rewind::edit::{self, EditError};
use rewind::engine::{ContextFile, ReadReport, ToolError, WriteGuard};
use rewind::search::{self, SearchOptions, SearchReport};
use serde_json::json;

use super::args::Global;
use super::exit::Exit;
use super::{cwd, open_home, session, workspace, Failure, Out};

#[derive(Debug, Args)]
pub struct ReadArgs {
    pub path: PathBuf,
    /// First line to show (1-based)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub offset: usize,
    /// Show at most this many lines [default: all]
    #[arg(long, value_name = "M")]
    pub limit: Option<usize>,
}

#[derive(Debug, Args)]
pub struct EditArgs {
    pub path: PathBuf,
    /// The token `rewind read` printed for the version the ops refer to
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
    /// JSON array of line ops, from a file or `-` for stdin
    #[arg(long, value_name = "FILE|-")]
    pub ops: PathBuf,
}

#[derive(Debug, Args)]
pub struct WriteArgs {
    pub path: PathBuf,
    /// The token `rewind read` printed for the current content
    #[arg(long, value_name = "T", conflicts_with = "create")]
    pub token: Option<String>,
    /// Create the file; refused when it already exists
    #[arg(long)]
    pub create: bool,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    pub pattern: String,
    /// Files or directories to search [default: the current directory]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Treat PATTERN as a literal string, not a regular expression
    #[arg(short = 'F', long)]
    pub fixed_strings: bool,
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Lines of context before and after each match
    #[arg(short = 'C', long, value_name = "N", default_value_t = 2)]
    pub context: usize,
    /// Matches shown per file (the rest are counted)
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_per_file: usize,
    /// Matches shown in all (the rest are counted)
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub max_total: usize,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// The file about to be read or created (it need not exist)
    #[arg(required_unless_present = "reset")]
    pub path: Option<PathBuf>,
    /// Forget which context files this session was given (a new conversation)
    #[arg(long)]
    pub reset: bool,
}

/// Maps a tool refusal or error to its exit code and recovery hints.
///
/// Exit 3 ("conflict, nothing written") is for refusals caused by the file being other than
/// the caller believed: hash mismatch, `expected` text mismatch, create over an existing
/// file. Everything else the caller got wrong (missing or malformed token, bad ops) is 1.
pub(crate) fn tool_failure(e: ToolError, path: &Path) -> Failure {
    let shown = path.display();
    let reread =
        format!("run `rewind read {shown}` and redo the change against its content and new token");
    match e {
        ToolError::Engine(e) => Failure::from(e),
        ToolError::Edit(e) => {
            let msg = e.to_string();
            match e {
                EditError::NoHash => Failure::new(Exit::Error, msg).hint(format!(
                    "read the file first with `rewind read {shown}` and pass the token it prints with --token"
                )),
                EditError::InvalidHash { .. } => Failure::new(Exit::Error, msg)
                    .hint("pass the token exactly as `rewind read` printed it"),
                EditError::HashMismatch { .. } => Failure::new(Exit::Conflict, msg).hint(reread),
                EditError::ExpectedMismatch { .. } => Failure::new(Exit::Conflict, msg).hint(
                    "the numbered lines above are the file's current content; fix `expected` and the line numbers, or read the file again",
                ),
                _ => Failure::new(Exit::Error, msg),
            }
        }
        ToolError::NotFound { .. } => Failure::new(Exit::Error, e.to_string()).hint(format!(
            "to create it: `rewind write {shown} --create` with the content on stdin"
        )),
        ToolError::Exists { .. } => Failure::new(Exit::Conflict, e.to_string()),
        _ => Failure::new(Exit::Error, e.to_string()),
    }
}

pub fn read(g: &Global, out: &Out, a: ReadArgs) -> Result<Exit, Failure> {
    let ReadArgs {
        path,
        offset,
        limit,
    } = a;
    let home = open_home(g)?;
    let cwd = cwd()?;
    let s = session(home, g, &cwd)?;
    let report = s
        .read_file(&path, &cwd, offset, limit)
        .map_err(|e| tool_failure(e, &path))?;
    if out.json {
        out.print_json(&json!(report));
    } else {
        out.print(&render_read(&report));
    }
    Ok(Exit::Ok)
}

/// Context files first (they are meant to be read before the file), then the numbered
/// lines, then the token.
pub(crate) fn render_read(r: &ReadReport) -> String {
    let mut text = render_context(&r.context);
    text.push_str(&r.content);
    let range = if r.total_lines == 0 {
        "empty file".to_string()
    } else {
        format!(
            "lines {}-{} of {}",
            r.first_line, r.last_line, r.total_lines
        )
    };
    text.push_str(&format!("{} · {range} · token {}\n", r.path, r.token));
    if r.binary {
        text.push_str(
            "note: the file looks binary (NUL bytes); line edits will likely refuse it\n",
        );
    }
    if let Some(hint) = &r.hint {
        text.push_str(&format!("note: externally modified: {hint}\n"));
    }
    text
}

pub(crate) fn render_context(files: &[ContextFile]) -> String {
    let mut text = String::new();
    for f in files {
        text.push_str(&format!("==> context file {} <==\n{}", f.path, f.content));
        if !f.content.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("==> end of {} <==\n\n", f.path));
    }
    text
}

fn read_input(source: &Path) -> Result<Vec<u8>, Failure> {
    if source == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| Failure::new(Exit::Error, format!("cannot read stdin: {e}")))?;
        Ok(buf)
    } else {
        std::fs::read(source).map_err(|e| {
            Failure::new(
                Exit::Error,
                format!("cannot read ops file {}: {e}", source.display()),
            )
        })
    }
}

pub fn edit(g: &Global, out: &Out, a: EditArgs) -> Result<Exit, Failure> {
    let EditArgs {
        path,
        token,
        ops: source,
    } = a;
    let raw = read_input(&source)?;
    let text = String::from_utf8(raw)
        .map_err(|_| Failure::new(Exit::Error, "ops json is not utf-8 text"))?;
    let ops = edit::parse_ops(&text).map_err(|e| tool_failure(e.into(), &path))?;
    let home = open_home(g)?;
    let cwd = cwd()?;
    let s = session(home, g, &cwd)?;
    let result = s
        .edit_file(&path, &cwd, token.as_deref(), &ops)
        .map_err(|e| tool_failure(e, &path))?;
    if out.json {
        out.print_json(&json!(result));
    } else {
        out.print(&format!(
            "edited {} (window {}, change {})\n{}\n",
            result.path,
            result.window_id,
            result.change_id,
            edit::render_report(&result.report)
        ));
    }
    Ok(Exit::Ok)
}

pub fn write(g: &Global, out: &Out, a: WriteArgs) -> Result<Exit, Failure> {
    let WriteArgs {
        path,
        token,
        create,
    } = a;
    let content = read_input(Path::new("-"))?;
    let home = open_home(g)?;
    let cwd = cwd()?;
    let s = session(home, g, &cwd)?;
    let guard = if create {
        WriteGuard::Create
    } else {
        WriteGuard::Token(token.as_deref())
    };
    let result = s
        .write_file(&path, &cwd, &content, guard)
        .map_err(|e| tool_failure(e, &path))?;
    if out.json {
        out.print_json(&json!(result));
    } else {
        out.print(&format!(
            "{} {} (window {}, change {}): {} lines ({:+}), token {}\n",
            if result.created { "created" } else { "wrote" },
            result.path,
            result.window_id,
            result.change_id,
            result.total_lines,
            result.line_delta,
            result.token
        ));
    }
    Ok(Exit::Ok)
}

pub fn search(g: &Global, out: &Out, a: SearchArgs) -> Result<Exit, Failure> {
    let cwd = cwd()?;
    let ws = workspace(g, &cwd)?;
    let paths: Vec<PathBuf> = if a.paths.is_empty() {
        vec![cwd.clone()]
    } else {
        a.paths.iter().map(|p| cwd.join(p)).collect()
    };
    let opts = SearchOptions {
        pattern: a.pattern,
        fixed_strings: a.fixed_strings,
        ignore_case: a.ignore_case,
        context: a.context,
        max_per_file: a.max_per_file,
        max_total: a.max_total,
        max_file_size: g.max_file_size.unwrap_or(64 << 20),
    };
    let report = search::search(ws.root(), &cwd, &paths, &opts)
        .map_err(|e| Failure::new(Exit::Error, e.to_string()))?;
    if out.json {
        out.print_json(&json!(report));
    } else {
        out.print(&render_search(&report, &opts));
    }
    Ok(if report.total_matches == 0 {
        Exit::Nothing
    } else {
        Exit::Ok
    })
}

/// ripgrep-like: `path:N:match`, `path-N-context`, `--` between groups that do not touch,
/// then what the caps left out.
pub(crate) fn render_search(r: &SearchReport, opts: &SearchOptions) -> String {
    let mut text = String::new();
    // The last line printed, so overlapping context is printed once.
    let mut last: Option<(&str, usize)> = None;
    for m in &r.matches {
        let first = m.before.first().map_or(m.line, |l| l.line);
        match last {
            Some((p, n)) if p == m.path && first <= n + 1 => {}
            Some(_) => text.push_str("--\n"),
            None => {}
        }
        let printed = |line: usize| last.is_some_and(|(p, n)| p == m.path && line <= n);
        for l in &m.before {
            if !printed(l.line) {
                text.push_str(&format!("{}-{}-{}\n", m.path, l.line, l.text));
            }
        }
        if !printed(m.line) {
            text.push_str(&format!("{}:{}:{}\n", m.path, m.line, m.text));
        }
        for l in &m.after {
            if !printed(l.line) {
                text.push_str(&format!("{}-{}-{}\n", m.path, l.line, l.text));
            }
        }
        let end = m.after.last().map_or(m.line, |l| l.line);
        last = Some((m.path.as_str(), end.max(last.map_or(0, |(_, n)| n))));
    }
    for f in &r.omitted_by_file {
        text.push_str(&format!(
            "{} more matches in {} (per-file cap {})\n",
            f.omitted, f.path, opts.max_per_file
        ));
    }
    if r.omitted_by_total_cap > 0 {
        text.push_str(&format!(
            "{} more matches not shown (total cap {})\n",
            r.omitted_by_total_cap, opts.max_total
        ));
    }
    text.push_str(&format!(
        "{} matches in {} files ({} shown, {} left out; {} files searched)\n",
        r.total_matches,
        r.files_with_matches,
        r.matches.len(),
        r.omitted,
        r.files_searched
    ));
    text
}

pub fn context(g: &Global, out: &Out, a: ContextArgs) -> Result<Exit, Failure> {
    let ContextArgs { path, reset } = a;
    let home = open_home(g)?;
    let cwd = cwd()?;
    let s = session(home, g, &cwd)?;
    let forgotten = if reset {
        Some(s.reset_context()?)
    } else {
        None
    };
    let files = match &path {
        Some(p) => s.context_for(p, &cwd)?,
        None => Vec::new(),
    };
    if out.json {
        // `[{path, content}]` as the contract says; a bare reset reports what it forgot.
        match (forgotten, &path) {
            (Some(n), None) => out.print_json(&json!({ "reset": n })),
            _ => out.print_json(&json!(files)),
        }
    } else {
        if let Some(n) = forgotten {
            out.print(&format!(
                "forgot {n} context deliveries for session {}\n",
                s.name()
            ));
        }
        out.print(&render_context(&files));
    }
    Ok(Exit::Ok)
}
