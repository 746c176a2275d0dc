//! Workspace search for agents: a regular expression (or a fixed string) over the files
//! under some paths, each match with its path, 1-based line number, line text and context
//! lines.
//!
//! Walks like ripgrep's defaults: `.gitignore`, `.ignore` and `.git/info/exclude` are honoured
//! (even outside a git repository, since a workspace need not be one), hidden files and
//! directories are skipped, symlinks are not followed. The user's global git excludes are
//! not read: the library never looks at the environment. Binary files (a NUL byte in the
//! first 8 KiB) are skipped and counted. Matches past the per-file or total cap are counted,
//! not returned, so the caller can say how many were left out.

use std::path::{Path, PathBuf};

use regex::{Regex, RegexBuilder};

/// How much of a file is inspected for NUL bytes, like git does.
const BINARY_SNIFF_LEN: usize = 8 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("search pattern {pattern:?} is not a valid regular expression: {source}")]
    Pattern {
        pattern: String,
        source: Box<regex::Error>,
    },
    #[error("search path {path}: outside the workspace {root}")]
    Outside { path: String, root: String },
    #[error("search path {path}: {source}")]
    Path {
        path: String,
        source: std::io::Error,
    },
}

/// What to search for and how much to return.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    pub pattern: String,
    /// Match `pattern` literally instead of as a regular expression.
    pub fixed_strings: bool,
    pub ignore_case: bool,
    /// Lines of context before and after each match.
    pub context: usize,
    /// Matches returned per file; the rest are counted in [`FileOmission`].
    pub max_per_file: usize,
    /// Matches returned in all; the rest are counted in [`SearchReport::omitted`].
    pub max_total: usize,
    /// Files larger than this are skipped (counted in `skipped_large`).
    pub max_file_size: u64,
}

/// One line with its 1-based number.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Line {
    pub line: usize,
    pub text: String,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Match {
    /// Relative to the search base (the caller's directory) when under it.
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub line: usize,
    pub text: String,
    pub before: Vec<Line>,
    pub after: Vec<Line>,
}

/// Matches of one file that the per-file cap left out.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileOmission {
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub omitted: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SearchReport {
    pub matches: Vec<Match>,
    /// Every matching line, returned or not.
    pub total_matches: usize,
    /// Matches not returned (per-file and total caps together).
    pub omitted: usize,
    /// Files whose per-file cap left matches out.
    pub omitted_by_file: Vec<FileOmission>,
    /// Matches left out by the total cap alone.
    pub omitted_by_total_cap: usize,
    pub files_searched: usize,
    pub files_with_matches: usize,
    pub skipped_binary: usize,
    pub skipped_large: usize,
    /// Files that could not be read (permissions, races).
    pub unreadable: usize,
}

/// Search `paths` (absolute; all inside `root`) and name results relative to `base`.
pub fn search(
    root: &Path,
    base: &Path,
    paths: &[PathBuf],
    opts: &SearchOptions,
) -> Result<SearchReport, SearchError> {
    let regex = build_regex(opts)?;
    let root_canon = root.canonicalize().map_err(|source| SearchError::Path {
        path: root.display().to_string(),
        source,
    })?;
    let mut walker = None::<ignore::WalkBuilder>;
    for p in paths {
        let canon = p.canonicalize().map_err(|source| SearchError::Path {
            path: p.display().to_string(),
            source,
        })?;
        if !canon.starts_with(&root_canon) {
            return Err(SearchError::Outside {
                path: p.display().to_string(),
                root: root.display().to_string(),
            });
        }
        match walker.as_mut() {
            Some(w) => {
                w.add(&canon);
            }
            None => walker = Some(ignore::WalkBuilder::new(&canon)),
        }
    }
    let Some(mut walker) = walker else {
        return Ok(SearchReport::default());
    };
    walker
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");

    let mut report = SearchReport::default();
    for entry in walker.build() {
        let Ok(entry) = entry else {
            report.unreadable += 1;
            continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        if entry
            .metadata()
            .map(|m| m.len() > opts.max_file_size)
            .unwrap_or(false)
        {
            report.skipped_large += 1;
            continue;
        }
        // A FIFO or device swapped in after the walk saw a file is skipped, never waited on.
        let Ok(bytes) = crate::files::read_regular(path, crate::files::Follow::No, u64::MAX) else {
            report.unreadable += 1;
            continue;
        };
        if bytes[..bytes.len().min(BINARY_SNIFF_LEN)].contains(&0) {
            report.skipped_binary += 1;
            continue;
        }
        report.files_searched += 1;
        let (shown, shown_bytes) = display_path(path, base);
        search_file(&regex, &bytes, (&shown, &shown_bytes), opts, &mut report);
    }
    report.omitted = report.total_matches - report.matches.len();
    Ok(report)
}

fn build_regex(opts: &SearchOptions) -> Result<Regex, SearchError> {
    let source = if opts.fixed_strings {
        regex::escape(&opts.pattern)
    } else {
        opts.pattern.clone()
    };
    RegexBuilder::new(&source)
        .case_insensitive(opts.ignore_case)
        .build()
        .map_err(|e| SearchError::Pattern {
            pattern: opts.pattern.clone(),
            source: Box::new(e),
        })
}

fn search_file(
    regex: &Regex,
    bytes: &[u8],
    (shown, shown_bytes): (&str, &Option<String>),
    opts: &SearchOptions,
    report: &mut SearchReport,
) {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .split_inclusive('\n')
        .map(|l| l.strip_suffix('\n').unwrap_or(l))
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut in_file = 0usize;
    let mut omitted_here = 0usize;
    for (i, line) in lines.iter().enumerate() {
        if !regex.is_match(line) {
            continue;
        }
        in_file += 1;
        report.total_matches += 1;
        if in_file > opts.max_per_file {
            omitted_here += 1;
            continue;
        }
        if report.matches.len() >= opts.max_total {
            report.omitted_by_total_cap += 1;
            continue;
        }
        let numbered = |from: usize, to: usize| -> Vec<Line> {
            (from..to)
                .map(|j| Line {
                    line: j + 1,
                    text: lines[j].to_string(),
                })
                .collect()
        };
        report.matches.push(Match {
            path: shown.to_string(),
            path_bytes: shown_bytes.clone(),
            line: i + 1,
            text: line.to_string(),
            before: numbered(i.saturating_sub(opts.context), i),
            after: numbered(i + 1, (i + 1).saturating_add(opts.context).min(lines.len())),
        });
    }
    if in_file > 0 {
        report.files_with_matches += 1;
    }
    if omitted_here > 0 {
        report.omitted_by_file.push(FileOmission {
            path: shown.to_string(),
            path_bytes: shown_bytes.clone(),
            omitted: omitted_here,
        });
    }
}

/// `path` relative to `base` when under it, else as given: as text, and as hex bytes when
/// the text is lossy.
fn display_path(path: &Path, base: &Path) -> (String, Option<String>) {
    let base = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
    let shown = match path.strip_prefix(&base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel,
        _ => path,
    };
    (
        shown.display().to_string(),
        crate::workspace::path_hex_if_not_utf8(shown),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pattern: &str) -> SearchOptions {
        SearchOptions {
            pattern: pattern.into(),
            fixed_strings: false,
            ignore_case: false,
            context: 1,
            max_per_file: 2,
            max_total: 3,
            max_file_size: 1 << 20,
        }
    }

    #[test]
    fn caps_count_what_they_leave_out() -> Result<(), SearchError> {
        let dir = tempfile::tempdir().map_err(|source| SearchError::Path {
            path: "tmp".into(),
            source,
        })?;
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "x1\nx2\nx3\ny\n").expect("write a");
        std::fs::write(root.join("b.txt"), "x1\nx2\n").expect("write b");
        std::fs::write(root.join("bin.dat"), b"x\0x\n").expect("write bin");
        let report = search(root, root, &[root.to_path_buf()], &opts("x"))?;
        assert_eq!(report.total_matches, 5);
        assert_eq!(report.matches.len(), 3);
        assert_eq!(report.omitted, 2);
        assert_eq!(
            report.omitted_by_file,
            vec![FileOmission {
                path: "a.txt".into(),
                path_bytes: None,
                omitted: 1
            }]
        );
        assert_eq!(report.omitted_by_total_cap, 1);
        assert_eq!(report.skipped_binary, 1);
        let first = &report.matches[0];
        assert_eq!((first.path.as_str(), first.line), ("a.txt", 1));
        assert!(first.before.is_empty());
        assert_eq!(first.after[0].text, "x2");
        Ok(())
    }

    #[test]
    fn fixed_strings_are_literal() -> Result<(), SearchError> {
        let dir = tempfile::tempdir().map_err(|source| SearchError::Path {
            path: "tmp".into(),
            source,
        })?;
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "a.b\naxb\n").expect("write a");
        let mut o = opts("a.b");
        o.fixed_strings = true;
        let report = search(root, root, &[root.to_path_buf()], &o)?;
        assert_eq!(report.total_matches, 1);
        assert!(matches!(
            search(root, root, &[root.to_path_buf()], &opts("(")),
            Err(SearchError::Pattern { .. })
        ));
        Ok(())
    }
}
