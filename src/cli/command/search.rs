//! `rewind search PATTERN [PATH...]`: gitignore-aware search with line numbers and context;
//! exit 4 when nothing matches.

use std::path::PathBuf;

use clap::Args;
use rewind::search::{self, SearchOptions, SearchReport};

use crate::cli::context::{cwd, workspace};
use crate::cli::exit::{Exit, Failure};
use crate::cli::options::Global;
use crate::cli::render::{name, Out};

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

pub fn run(g: &Global, out: &Out, args: SearchArgs) -> Result<Exit, Failure> {
    let cwd = cwd()?;
    let ws = workspace(g, &cwd)?;
    let paths: Vec<PathBuf> = if args.paths.is_empty() {
        vec![cwd.clone()]
    } else {
        args.paths.iter().map(|p| cwd.join(p)).collect()
    };
    let opts = SearchOptions {
        pattern: args.pattern,
        fixed_strings: args.fixed_strings,
        ignore_case: args.ignore_case,
        context: args.context,
        max_per_file: args.max_per_file,
        max_total: args.max_total,
        max_file_size: g.max_file_size.unwrap_or(64 << 20),
    };
    let report = search::search(ws.root(), &cwd, &paths, &opts)
        .map_err(|e| Failure::new(Exit::Error, e.to_string()))?;
    if out.json {
        out.print_json(&report);
    } else {
        out.print(&render(&report, &opts));
    }
    Ok(if report.total_matches == 0 {
        Exit::Nothing
    } else {
        Exit::Ok
    })
}

/// ripgrep-like: `path:N:match`, `path-N-context`, `--` between groups that do not touch,
/// then what the caps left out.
pub(crate) fn render(r: &SearchReport, opts: &SearchOptions) -> String {
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
                text.push_str(&format!("{}-{}-{}\n", name(&m.path), l.line, l.text));
            }
        }
        if !printed(m.line) {
            text.push_str(&format!("{}:{}:{}\n", name(&m.path), m.line, m.text));
        }
        for l in &m.after {
            if !printed(l.line) {
                text.push_str(&format!("{}-{}-{}\n", name(&m.path), l.line, l.text));
            }
        }
        let end = m.after.last().map_or(m.line, |l| l.line);
        last = Some((m.path.as_str(), end.max(last.map_or(0, |(_, n)| n))));
    }
    text.push_str(&left_out(r, opts));
    text
}

/// What the per-file and total caps left out, and the totals.
fn left_out(r: &SearchReport, opts: &SearchOptions) -> String {
    let mut text = String::new();
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
