//! Context files: the `AGENTS.md` (or `agents.md`) files an agent should have seen before it
//! touches a path — those of the path's directory and of every ancestor up to the workspace
//! root, root first.
//!
//! Each session is given a file once; it is given again when its bytes change (the index keeps
//! the hash last delivered, see `index::context`), or after [`Session::reset_context`] (a new
//! conversation reusing the session id). The walk never enters `node_modules`, `.git`, or a
//! directory the workspace's `.gitignore` files ignore: context there belongs to someone
//! else's code.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::Gitignore;

use super::context_cache::{ContextText, MAX_CONTEXT_BYTES};
use super::{Home, Result, Session};
use crate::ids::BlobId;
use crate::workspace::{Observation, RelPath};

/// The names a context file may have; both are delivered when both exist.
const CONTEXT_NAMES: [&str; 2] = ["AGENTS.md", "agents.md"];
/// Directory names whose context files (and everything below) are never delivered.
const SKIPPED_DIRS: [&str; 2] = ["node_modules", ".git"];

/// One context file as delivered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ContextFile {
    /// Relative to the workspace root.
    pub path: String,
    /// The raw bytes of `path`, hex-encoded, only when they are not UTF-8 (README: JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// The file's text (lossy where it is not UTF-8); only its first [`MAX_CONTEXT_BYTES`]
    /// when `truncated_from` is set.
    pub content: String,
    /// The file's size in bytes, when `content` is only its beginning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_from: Option<u64>,
    /// The session was given an earlier text of it: this one is a change.
    #[serde(skip)]
    pub again: bool,
}

impl Session<'_> {
    /// The context files for `path` (which need not exist yet) that this session has not
    /// been given, or that changed since; marks them delivered.
    pub fn context_for(&self, path: &Path, cwd: &Path) -> Result<Vec<ContextFile>> {
        let rel = self.ws.resolve(path, cwd)?;
        let dirs = context_dirs(self, &rel);
        deliver_context(self, &dirs)
    }

    /// The workspace root's context files this session has not been given, or that changed
    /// since (what a session start delivers); marks them delivered.
    pub(crate) fn root_context(&self) -> Result<Vec<ContextFile>> {
        let root = self.ws.root().to_path_buf();
        let names = context_names(&root);
        deliver_context(self, &[(root, names)])
    }

    /// Forget which context files this session was given, so the next read delivers them
    /// again. Returns how many deliveries were forgotten.
    pub fn reset_context(&self) -> Result<usize> {
        Ok(self
            .home
            .index
            .write(|tx| tx.reset_context_deliveries(self.id))?)
    }
}

/// The context file names in `dir`, sorted (none when it cannot be listed). Both names are
/// probed first, so a directory without either costs two lookups whatever its size (a read
/// deep in `target/` or `site-packages/` passes directories of thousands of entries); one
/// that has one is listed, which yields the names as stored, so a case-insensitive file
/// system does not deliver one file twice.
fn context_names(dir: &Path) -> Vec<String> {
    if !CONTEXT_NAMES
        .iter()
        .any(|name| std::fs::symlink_metadata(dir.join(name)).is_ok())
    {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_context_name(n))
        .collect();
    names.sort();
    names
}

/// Whether a file named `name` is a context file.
pub fn is_context_name(name: &str) -> bool {
    CONTEXT_NAMES.contains(&name)
}

/// Whether `path` (workspace-relative, `/`-separated) names a context file.
fn names_context_file(path: &str) -> bool {
    is_context_name(path.rsplit('/').next().unwrap_or(path))
}

impl Home {
    /// Some of `changed` (workspace-relative paths a scan found created, modified or
    /// deleted) may be context files: forget the kept texts, so the next read looks again.
    pub(crate) fn context_files_changed<'p>(&self, changed: impl IntoIterator<Item = &'p str>) {
        if changed.into_iter().any(names_context_file) {
            self.context_cache.forget_all();
        }
    }
}

/// Each context file between `==> context file P <==` and `==> end of P <==` lines, `name`
/// quoting a path for the reader. A file cut at [`MAX_CONTEXT_BYTES`] says so, with its size.
/// With `budget` (characters), a file whose text would take the whole past it is named with
/// its size instead, for the reader to open itself (a hook answer is capped).
pub fn render_context(
    files: &[ContextFile],
    budget: Option<usize>,
    name: impl Fn(&str) -> String,
) -> String {
    let mut text = String::new();
    for f in files {
        let shown = name(&f.path);
        let len = f.content.chars().count();
        if budget.is_some_and(|b| text.chars().count() + len > b) {
            let size = f.truncated_from.unwrap_or(f.content.len() as u64);
            text.push_str(&format!(
                "==> context file {shown} ({size} bytes, too long to show here: read it before working under its directory) <==\n\n"
            ));
            continue;
        }
        text.push_str(&format!("==> context file {shown} <==\n{}", f.content));
        if !f.content.ends_with('\n') {
            text.push('\n');
        }
        if let Some(size) = f.truncated_from {
            text.push_str(&format!(
                "==> {shown} goes on: it is {size} bytes, this is its first {} KiB; read the rest <==\n",
                MAX_CONTEXT_BYTES >> 10
            ));
        }
        text.push_str(&format!("==> end of {shown} <==\n\n"));
    }
    text
}

/// The `.gitignore` of `dir` (empty when absent or unreadable: a broken ignore file should
/// not hide context).
fn gitignore_of(dir: &Path) -> Gitignore {
    let file = dir.join(".gitignore");
    if !file.is_file() {
        return Gitignore::empty();
    }
    Gitignore::new(&file).0
}

/// Whether `dir` is ignored by the `.gitignore` files above it; the deepest file that has
/// an opinion wins, as in git.
fn is_ignored(ignores: &[Gitignore], dir: &Path) -> bool {
    for gi in ignores.iter().rev() {
        let m = gi.matched(dir, true);
        if m.is_ignore() {
            return true;
        }
        if m.is_whitelist() {
            return false;
        }
    }
    false
}

/// The context files of `dirs` (in that order, each with the context file names it
/// holds) not yet given to this session, marked delivered.
fn deliver_context(
    session: &Session<'_>,
    dirs: &[(PathBuf, Vec<String>)],
) -> Result<Vec<ContextFile>> {
    let mut found: Vec<(RelPath, Arc<ContextText>)> = Vec::new();
    for (dir, names) in dirs {
        for name in names {
            let Ok(crel) = session.ws.resolve(&dir.join(name), session.ws.root()) else {
                continue;
            };
            if let Some(text) = context_text(session, &crel) {
                found.push((crel, text));
            }
        }
    }
    if found.is_empty() {
        return Ok(Vec::new());
    }
    // Most reads find nothing new: a lookup, not a write transaction, tells.
    let read = session.home.index.read();
    let mut undelivered = Vec::new();
    for (crel, text) in found {
        match read.delivered_context(session.id, &crel)? {
            Some(id) if id == text.id => {}
            before => undelivered.push((crel, text, before.is_some())),
        }
    }
    if undelivered.is_empty() {
        return Ok(Vec::new());
    }
    let now = session.home.now();
    // Looked up again in the write: another hook of the session may have delivered it.
    session.home.index.write(|tx| {
        let mut out = Vec::new();
        for (crel, text, again) in &undelivered {
            if tx.delivered_context(session.id, crel)? == Some(text.id) {
                continue;
            }
            tx.record_context_delivery(session.id, crel, text.id, now)?;
            out.push(ContextFile {
                path: crel.display(),
                path_bytes: crel.bytes_hex_if_not_utf8(),
                content: text.text.clone(),
                truncated_from: text.truncated_from,
                again: *again,
            });
        }
        Ok::<_, super::EngineError>(out)
    })
}

/// The text of context file `crel`, from the home's cache while the file is unchanged
/// ([`super::context_cache`]); `None` unless it is a regular file within the size limit
/// (a symlinked `AGENTS.md` could point anywhere) that can be read: a context file that
/// cannot be read is left out, the others are still delivered.
fn context_text(session: &Session<'_>, crel: &RelPath) -> Option<Arc<ContextText>> {
    let abs = session.ws.abs(crel);
    session.ws.check_parents(crel).ok()?;
    if let Some(text) = session.home.context_cache.get(&abs) {
        return Some(text);
    }
    let read_at = session.home.now();
    let (text, stat) = match session
        .ws
        .observe(crel, session.home.opts.max_file_size)
        .ok()?
    {
        Observation::Regular { bytes, id, stat } => (ContextText::new(id, &bytes, stat.size), stat),
        // Over what is read into memory: its beginning, and the hash of all of it.
        Observation::Large { mut file, stat } => {
            let mut head = Vec::with_capacity(MAX_CONTEXT_BYTES);
            let (id, size) = (&mut file)
                .take(MAX_CONTEXT_BYTES as u64 + 1)
                .read_to_end(&mut head)
                .and_then(|_| file.seek(SeekFrom::Start(0)))
                .and_then(|_| BlobId::of_reader(&mut file))
                .ok()?;
            (ContextText::new(id, &head, size), stat)
        }
        Observation::Absent | Observation::TooLarge { .. } | Observation::NotRegular { .. } => {
            return None
        }
    };
    let text = Arc::new(text);
    session
        .home
        .context_cache
        .put(&abs, stat, read_at, text.clone());
    Some(text)
}

/// The directories whose context files apply to `rel`, root first, each with the context
/// file names it holds: the root and each directory down to `rel`'s parent, stopping at
/// the first skipped or ignored one.
///
/// Every read asks this, and compiling a `.gitignore` (a glob set) costs a hook more
/// than everything else it does here: the ignore files are read only when a directory
/// below the root holds a context file, and only down to the deepest such directory
/// (the root is never ignored; a directory without one gives nothing either way).
fn context_dirs(session: &Session<'_>, rel: &RelPath) -> Vec<(PathBuf, Vec<String>)> {
    let root = session.ws.root();
    let mut dirs = vec![(root.to_path_buf(), context_names(root))];
    let comps: Vec<&[u8]> = rel.components().collect();
    let mut dir = root.to_path_buf();
    for comp in &comps[..comps.len().saturating_sub(1)] {
        let name = String::from_utf8_lossy(comp);
        if SKIPPED_DIRS.contains(&name.as_ref()) {
            break;
        }
        dir.push(name.as_ref());
        if !dir.is_dir() {
            break;
        }
        dirs.push((dir.clone(), context_names(&dir)));
    }
    let Some(deepest) = dirs.iter().rposition(|(_, names)| !names.is_empty()) else {
        return Vec::new();
    };
    dirs.truncate(deepest + 1);
    if deepest == 0 {
        return dirs;
    }
    let mut ignores = vec![gitignore_of(root)];
    for i in 1..dirs.len() {
        if is_ignored(&ignores, &dirs[i].0) {
            dirs.truncate(i);
            break;
        }
        // The deepest directory's own ignore file decides nothing here.
        if i + 1 < dirs.len() {
            ignores.push(gitignore_of(&dirs[i].0));
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Clock, Options};
    use crate::workspace::Workspace;

    /// The home keeps what it read (a helper's home lives across events), and a scan that
    /// finds a context file changed makes it forget; other changes do not.
    #[test]
    fn a_scan_that_sees_a_context_file_change_empties_the_homes_cache() {
        let home_dir = tempfile::tempdir().expect("home dir");
        let ws_dir = tempfile::tempdir().expect("workspace dir");
        std::fs::write(ws_dir.path().join("AGENTS.md"), "rules\n").expect("write");
        let later = Clock::System.now() + 10_000_000_000;
        let opts = Options {
            clock: Clock::Fixed(later),
            ..Options::default()
        };
        let home = Home::open(home_dir.path(), opts).expect("home");
        let ws = Workspace::open(ws_dir.path()).expect("workspace");
        let session = home.session(ws, "s").expect("session");
        let given = session.root_context().expect("context");
        assert_eq!(given.len(), 1);
        assert_eq!(given[0].content, "rules\n");
        assert_eq!(home.context_cache.size(), (1, 6));
        home.context_files_changed(["src/lib.rs", "AGENTS.md.bak"]);
        assert_eq!(home.context_cache.size(), (1, 6));
        home.context_files_changed(["src/lib.rs", "src/agents.md"]);
        assert_eq!(home.context_cache.size(), (0, 0));
    }
}
