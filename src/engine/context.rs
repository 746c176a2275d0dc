//! Context files: the `AGENTS.md` (or `agents.md`) files an agent should have seen before it
//! touches a path — those of the path's directory and of every ancestor up to the workspace
//! root, root first.
//!
//! Each session is given a file once; it is given again when its bytes change (the index keeps
//! the hash last delivered, see `index::context`), or after [`Session::reset_context`] (a new
//! conversation reusing the session id). The walk never enters `node_modules`, `.git`, or a
//! directory the workspace's `.gitignore` files ignore: context there belongs to someone
//! else's code.

use std::path::{Path, PathBuf};

use ignore::gitignore::Gitignore;

use super::{Result, Session};
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
    /// The file's text (lossy where it is not UTF-8).
    pub content: String,
}

impl Session<'_> {
    /// The context files for `path` (which need not exist yet) that this session has not
    /// been given, or that changed since; marks them delivered.
    pub fn context_for(&self, path: &Path, cwd: &Path) -> Result<Vec<ContextFile>> {
        let rel = self.ws.resolve(path, cwd)?;
        let mut found: Vec<(RelPath, BlobId, Vec<u8>)> = Vec::new();
        for dir in self.context_dirs(&rel) {
            // Listing the directory (rather than probing both names) yields the names as
            // stored, so a case-insensitive file system does not deliver one file twice.
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| CONTEXT_NAMES.contains(&n.as_str()))
                .collect();
            names.sort();
            for name in names {
                let Ok(crel) = self.ws.resolve(&dir.join(name), self.ws.root()) else {
                    continue;
                };
                // Only regular files: a symlinked AGENTS.md could point anywhere.
                if let Observation::Regular { bytes, id, .. } =
                    self.ws.observe(&crel, self.home.opts.max_file_size)?
                {
                    found.push((crel, id, bytes));
                }
            }
        }
        let now = self.home.now();
        self.home.index.write(|tx| {
            let mut out = Vec::new();
            for (crel, id, bytes) in &found {
                if tx.delivered_context(self.id, crel)? == Some(*id) {
                    continue;
                }
                tx.record_context_delivery(self.id, crel, *id, now)?;
                out.push(ContextFile {
                    path: crel.display(),
                    path_bytes: crel.bytes_hex_if_not_utf8(),
                    content: String::from_utf8_lossy(bytes).into_owned(),
                });
            }
            Ok::<_, super::EngineError>(out)
        })
    }

    /// Forget which context files this session was given, so the next read delivers them
    /// again. Returns how many deliveries were forgotten.
    pub fn reset_context(&self) -> Result<usize> {
        Ok(self
            .home
            .index
            .write(|tx| tx.reset_context_deliveries(self.id))?)
    }

    /// The directories whose context files apply to `rel`, root first: the root and each
    /// directory down to `rel`'s parent, stopping at the first skipped or ignored one.
    fn context_dirs(&self, rel: &RelPath) -> Vec<PathBuf> {
        let root = self.ws.root();
        let mut dirs = vec![root.to_path_buf()];
        let mut ignores = vec![gitignore_of(root)];
        let comps: Vec<&[u8]> = rel.components().collect();
        let mut dir = root.to_path_buf();
        for comp in &comps[..comps.len().saturating_sub(1)] {
            let name = String::from_utf8_lossy(comp);
            if SKIPPED_DIRS.contains(&name.as_ref()) {
                break;
            }
            dir.push(name.as_ref());
            if !dir.is_dir() || is_ignored(&ignores, &dir) {
                break;
            }
            ignores.push(gitignore_of(&dir));
            dirs.push(dir.clone());
        }
        dirs
    }
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
