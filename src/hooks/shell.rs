//! What rewind reads out of a shell command an agent is about to run: the words it names
//! (for the external-edit hint of a command that reads a file, `cat notes.txt`), and whether
//! it is an `apply_patch` heredoc, the patch Codex applies itself when a model runs
//!
//! ```text
//! apply_patch <<'EOF'
//! *** Begin Patch
//! …
//! *** End Patch
//! EOF
//! ```
//!
//! through its shell tool (optionally after `cd <dir> &&`): Codex intercepts that command,
//! applies the patch, and sends a PreToolUse `Bash` but no PostToolUse.
//!
//! Both readers are deliberately small: [`words`] is not a shell parser (no expansion, no
//! globbing; it splits on blanks and operators and removes quotes), and [`heredoc_patch`]
//! accepts only the exact shape above, so anything else stays a plain shell command, which
//! the workspace scans cover.

use std::path::PathBuf;

use super::patch::{patch_paths, PatchFile};

/// Characters that end a word outside quotes.
const OPERATORS: &[char] = &['|', '&', ';', '<', '>', '(', ')'];

/// One token of a command: a word (quotes removed) or an operator character.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Op(char),
}

/// The words of `command`, quotes removed (`'a b'` and `"a b"` are one word `a b`; `\x` is
/// `x`), split at blanks and at the shell's operator characters. Unbalanced quotes end at
/// the end of the text.
pub fn words(command: &str) -> Vec<String> {
    tokens(command)
        .into_iter()
        .filter_map(|t| match t {
            Token::Word(w) => Some(w),
            Token::Op(_) => None,
        })
        .collect()
}

/// The words a command may name files with, each with whether it is the target of an output
/// redirection (`> out.txt`, `>> log`): the command's words, but of a command holding a
/// heredoc (`<<`) only its first line (the rest is the heredoc's text, not arguments).
#[cfg(test)]
pub(crate) fn named_words(command: &str) -> Vec<(String, bool)> {
    named_words_in(command)
        .into_iter()
        .map(|(w, output, _)| (w, output))
        .collect()
}

/// [`named_words`], each with the directory the command is in when it names it, relative to
/// where the command starts: a simple command `cd <dir>` changes it for the words after it
/// (`cd docs && cat ../config.txt` names `docs/../config.txt`); an absolute `<dir>` replaces
/// it. Only a literal `cd <dir>` is followed (not `cd -`, `cd` alone, `pushd`, a variable).
pub(crate) fn named_words_in(command: &str) -> Vec<(String, bool, PathBuf)> {
    let text = if command.contains("<<") {
        command.lines().next().unwrap_or_default()
    } else {
        command
    };
    let mut out = Vec::new();
    let mut after_output = false;
    let mut dir = PathBuf::new();
    // At the first word of a simple command; right after its `cd`.
    let (mut first, mut after_cd) = (true, false);
    for token in tokens(text) {
        match token {
            Token::Op('>') => after_output = true,
            Token::Op('&' | '|') if after_output => {} // `>&`, `>|`, `&>`
            Token::Op(c) => {
                after_output = false;
                first = matches!(c, ';' | '&' | '|' | '(' | ')');
                after_cd = false;
            }
            Token::Word(w) => {
                let named_dir = dir.clone();
                if after_cd && !w.is_empty() && w != "-" && !w.contains('$') {
                    dir = dir.join(&w);
                }
                after_cd = first && w == "cd";
                first = false;
                out.push((w, after_output, named_dir));
                after_output = false;
            }
        }
    }
    out
}

/// `command` as words and operator characters (blanks dropped).
fn tokens(command: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    // Whether a word is under way (`''` is an empty word, not none).
    let mut started = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                started = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                started = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                            Some('\n') => {}
                            Some(e) => {
                                word.push('\\');
                                word.push(e);
                            }
                            None => word.push('\\'),
                        },
                        q => word.push(q),
                    }
                }
            }
            '\\' => {
                started = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(e) => word.push(e),
                }
            }
            c if c.is_whitespace() || OPERATORS.contains(&c) => {
                if started {
                    out.push(Token::Word(std::mem::take(&mut word)));
                    started = false;
                }
                if c != '\n' && !c.is_whitespace() {
                    out.push(Token::Op(c));
                }
            }
            c => {
                started = true;
                word.push(c);
            }
        }
    }
    if started {
        out.push(Token::Word(word));
    }
    out
}

/// An `apply_patch` heredoc: the files its patch names, and the directory it changes into
/// first (`cd <dir> && apply_patch <<'EOF' …`), as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShellPatch {
    pub dir: Option<PathBuf>,
    pub files: Vec<PatchFile>,
}

impl ShellPatch {
    /// Every path the patch writes (moves: both sides), relative to the command's cwd.
    pub(crate) fn write_paths(&self) -> Vec<PathBuf> {
        let paths = super::patch_write_paths(&self.files);
        match &self.dir {
            None => paths,
            Some(dir) => paths.into_iter().map(|p| dir.join(p)).collect(),
        }
    }
}

/// `command` read as `[cd <dir> &&] apply_patch|applypatch <<[-]DELIM` + newline + a patch +
/// a line `DELIM` (+ only blanks after it); `None` for any other command, or a patch with no
/// file header. The delimiter may be quoted (`'EOF'`, `"EOF"`) or bare; with `<<-`, leading
/// tabs of the body lines and of the closing line are removed, as the shell does.
pub(crate) fn heredoc_patch(command: &str) -> Option<ShellPatch> {
    let (first, body) = command.trim_start().split_once('\n')?;
    let (dir, rest) = cd_prefix(first.trim_end())?;
    let rest = ["apply_patch", "applypatch"]
        .into_iter()
        .find_map(|name| rest.strip_prefix(name))?;
    let rest = rest.trim_start().strip_prefix("<<")?;
    if rest.starts_with('<') {
        // `<<<` is a here-string: the shell runs it, Codex does not intercept it.
        return None;
    }
    let (strip_tabs, rest) = match rest.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let delim = delimiter(rest.trim())?;
    let mut patch = String::new();
    let mut lines = body.split('\n');
    let mut closed = false;
    for line in lines.by_ref() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = if strip_tabs {
            line.trim_start_matches('\t')
        } else {
            line
        };
        if line == delim {
            closed = true;
            break;
        }
        patch.push_str(line);
        patch.push('\n');
    }
    // Anything after the closing line would be another command: not this shape.
    if !closed || lines.any(|l| !l.trim().is_empty()) {
        return None;
    }
    let files = patch_paths(&patch).ok()?;
    Some(ShellPatch { dir, files })
}

/// Split an optional `cd <dir> &&` off the command's first line.
fn cd_prefix(line: &str) -> Option<(Option<PathBuf>, &str)> {
    let Some(rest) = line.strip_prefix("cd ") else {
        return Some((None, line));
    };
    let (dir, rest) = rest.trim_start().split_once("&&")?;
    let dir = words(dir.trim());
    match dir.as_slice() {
        [one] if !one.is_empty() && !one.contains('$') && !one.starts_with('~') => {
            Some((Some(PathBuf::from(one)), rest.trim_start()))
        }
        _ => None,
    }
}

/// The heredoc delimiter: `'EOF'`, `"EOF"` or a bare word of letters, digits and `_`.
fn delimiter(text: &str) -> Option<&str> {
    let inner = ['\'', '"']
        .into_iter()
        .find_map(|q| text.strip_prefix(q).and_then(|t| t.strip_suffix(q)))
        .unwrap_or(text);
    let ok = !inner.is_empty() && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::super::patch::PatchKind;
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn named_words_mark_output_targets_and_skip_heredoc_text() {
        let w = |s: &str, out: bool| (s.to_string(), out);
        assert_eq!(
            named_words("cat a.txt > b.txt 2>>log && grep x c >|d &>e"),
            [
                w("cat", false),
                w("a.txt", false),
                w("b.txt", true),
                w("2", false),
                w("log", true),
                w("grep", false),
                w("x", false),
                w("c", false),
                w("d", true),
                w("e", true)
            ]
        );
        assert_eq!(
            named_words("cat > notes.txt <<'EOF'\nsecret.txt\nEOF"),
            [w("cat", false), w("notes.txt", true), w("EOF", false)]
        );
    }

    #[test]
    fn a_cd_changes_the_directory_of_the_words_after_it() {
        let dirs: Vec<(String, PathBuf)> =
            named_words_in("cd docs && cat ../config.txt; cd /abs && ls x")
                .into_iter()
                .map(|(w, _, d)| (w, d))
                .collect();
        let at = |w: &str| dirs.iter().find(|(x, _)| x == w).map(|(_, d)| d.clone());
        assert_eq!(at("cd"), Some(PathBuf::new()));
        assert_eq!(at("docs"), Some(PathBuf::new()));
        assert_eq!(at("../config.txt"), Some(PathBuf::from("docs")));
        assert_eq!(at("x"), Some(PathBuf::from("/abs")));
        // Not a `cd` at the start of a command, or not a literal directory.
        let words = named_words_in("echo cd docs x; cd $D && cat y");
        assert!(
            words.iter().all(|(_, _, d)| d.as_os_str().is_empty()),
            "{words:?}"
        );
    }

    #[test]
    fn words_split_on_blanks_and_operators_and_drop_quotes() {
        assert_eq!(words("cat notes.txt"), ["cat", "notes.txt"]);
        assert_eq!(
            words("sed -n '1,5p' \"my file.txt\"|head -2>out;ls"),
            [
                "sed",
                "-n",
                "1,5p",
                "my file.txt",
                "head",
                "-2",
                "out",
                "ls"
            ]
        );
        assert_eq!(words(r"cat a\ b.txt"), ["cat", "a b.txt"]);
        assert_eq!(words(r#"echo "a\"b" ''"#), ["echo", "a\"b", ""]);
        assert_eq!(words("  "), Vec::<String>::new());
        assert_eq!(words("cat 'unclosed"), ["cat", "unclosed"]);
    }

    const PATCH: &str = "*** Begin Patch\n*** Update File: README.md\n@@\n-a\n+b\n*** Add File: new.txt\n+new\n*** Delete File: old.txt\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n@@\n-x\n+y\n*** End Patch\n";

    #[test]
    fn an_apply_patch_heredoc_names_every_file_of_its_patch() {
        let cmd = format!("apply_patch <<'EOF'\n{PATCH}EOF");
        let got = heredoc_patch(&cmd).expect("a patch heredoc");
        assert_eq!(got.dir, None);
        let kinds: Vec<_> = got.files.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [
                PatchKind::Update,
                PatchKind::Add,
                PatchKind::Delete,
                PatchKind::Update
            ]
        );
        assert_eq!(
            got.write_paths(),
            [
                p("README.md"),
                p("new.txt"),
                p("old.txt"),
                p("src/a.rs"),
                p("src/b.rs")
            ]
        );
    }

    #[test]
    fn heredoc_variants_codex_accepts_are_read() {
        for cmd in [
            format!("applypatch <<EOF\n{PATCH}EOF\n"),
            format!("apply_patch << \"PATCH\"\n{PATCH}PATCH\n\n"),
            format!(
                "  apply_patch <<'EOF'\r\n{}EOF\r\n",
                PATCH.replace('\n', "\r\n")
            ),
            format!(
                "apply_patch <<-'EOF'\n{}\tEOF",
                PATCH
                    .lines()
                    .map(|l| format!("\t{l}\n"))
                    .collect::<String>()
            ),
        ] {
            let got = heredoc_patch(&cmd).unwrap_or_else(|| panic!("not read: {cmd:?}"));
            assert_eq!(got.write_paths().len(), 5, "{cmd:?}");
        }
    }

    #[test]
    fn a_cd_prefix_moves_the_paths() {
        let cmd = format!("cd 'sub dir' && apply_patch <<'EOF'\n{PATCH}EOF");
        let got = heredoc_patch(&cmd).expect("a patch heredoc");
        assert_eq!(got.dir, Some(p("sub dir")));
        assert_eq!(got.write_paths()[0], p("sub dir/README.md"));
    }

    #[test]
    fn other_commands_are_not_patches() {
        for cmd in [
            "apply_patch".to_string(),
            "cat notes.txt".to_string(),
            format!("apply_patch <<<'EOF'\n{PATCH}EOF"),
            format!("apply_patch <<'EOF'\n{PATCH}"),
            format!("apply_patch <<'EOF'\n{PATCH}EOF\nrm -rf x"),
            format!("echo hi && apply_patch <<'EOF'\n{PATCH}EOF"),
            format!("cd $HOME && apply_patch <<'EOF'\n{PATCH}EOF"),
            "apply_patch <<'EOF'\nno headers here\nEOF".to_string(),
            format!("apply_patch <<'E O F'\n{PATCH}E O F"),
        ] {
            assert_eq!(heredoc_patch(&cmd), None, "{cmd:?}");
        }
    }

    fn rel_path() -> impl Strategy<Value = String> {
        proptest::collection::vec("[a-z][a-z0-9_.-]{0,8}", 1..4).prop_map(|parts| parts.join("/"))
    }

    proptest! {
        /// Whatever the files, the heredoc gives back exactly the paths of the patch inside
        /// it, in order, each kind as written.
        #[test]
        fn the_heredoc_paths_are_the_patch_paths(
            files in proptest::collection::vec((rel_path(), 0u8..3, proptest::option::of(rel_path())), 1..6),
            quote in 0u8..3,
        ) {
            let mut patch = String::from("*** Begin Patch\n");
            let mut want = Vec::new();
            for (path, kind, to) in &files {
                match kind {
                    0 => { patch += &format!("*** Add File: {path}\n+x\n"); want.push(p(path)); }
                    1 => { patch += &format!("*** Delete File: {path}\n"); want.push(p(path)); }
                    _ => {
                        patch += &format!("*** Update File: {path}\n");
                        want.push(p(path));
                        if let Some(to) = to {
                            patch += &format!("*** Move to: {to}\n");
                            want.push(p(to));
                        }
                        patch += "@@\n-a\n+b\n";
                    }
                }
            }
            patch += "*** End Patch\n";
            let delim = ["'EOF'", "\"EOF\"", "EOF"][quote as usize];
            let got = heredoc_patch(&format!("apply_patch <<{delim}\n{patch}EOF\n"));
            let mut dedup = Vec::new();
            for w in want { if !dedup.contains(&w) { dedup.push(w); } }
            prop_assert_eq!(got.map(|g| g.write_paths()), Some(dedup));
        }

        /// Outside input: any text is read without a panic, and a heredoc patch, when one is
        /// read, names at least one path.
        #[test]
        fn any_command_is_read_without_panicking(cmd in "(apply_patch <<'EOF'\n)?(\\PC|\n|\\*\\*\\* (Add|Update|Delete) File: |EOF\n|[<>&|'\"\\\\])*") {
            let _ = words(&cmd);
            let _ = named_words(&cmd);
            if let Some(patch) = heredoc_patch(&cmd) {
                prop_assert!(!patch.write_paths().is_empty());
            }
        }

        /// Words never contain a blank or operator that was outside quotes, and plain words
        /// come back as they were.
        #[test]
        fn plain_words_round_trip(ws in proptest::collection::vec("[A-Za-z0-9_./-]{1,10}", 0..6)) {
            prop_assert_eq!(words(&ws.join(" ")), ws);
        }
    }
}
