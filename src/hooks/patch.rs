//! Reader for the `apply_patch` format shared by Codex CLI (`tool_input.command`) and OpenCode
//! (`apply_patch{patchText}`): only the file headers matter here, to learn which paths a patch
//! writes before it runs.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path        (then `+` lines)
//! *** Update File: path     (optionally `*** Move to: new-path`, then `@@` hunks)
//! *** Delete File: path
//! *** End Patch
//! ```
//!
//! Like Codex, headers are recognised with surrounding whitespace trimmed (patches sent through a
//! heredoc are often indented). Lines starting with `+` or `-` are hunk content, never headers.
//! Missing Begin/End lines are tolerated; text with no file header at all is refused.

use std::path::PathBuf;

use super::HookError;

/// What a patch does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Add,
    Update,
    Delete,
}

/// One file named by a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    /// The path as written in the header (relative to the agent's cwd, or absolute).
    pub path: PathBuf,
    pub kind: PatchKind,
    /// The new path of an update that also renames the file (`*** Move to:`).
    pub move_to: Option<PathBuf>,
}

const ADD: &str = "*** Add File:";
const UPDATE: &str = "*** Update File:";
const DELETE: &str = "*** Delete File:";
const MOVE: &str = "*** Move to:";

/// The files a patch adds, updates (and maybe moves) or deletes, in patch order.
pub fn patch_paths(patch: &str) -> Result<Vec<PatchFile>, HookError> {
    let mut files: Vec<PatchFile> = Vec::new();
    // Whether the previous header line was an update that may still take a move line.
    let mut move_allowed = false;
    for (index, raw) in patch.lines().enumerate() {
        let line_no = index + 1;
        if raw.starts_with('+') || raw.starts_with('-') {
            move_allowed = false;
            continue;
        }
        let line = raw.trim();
        let header = [
            (ADD, Some(PatchKind::Add)),
            (UPDATE, Some(PatchKind::Update)),
            (DELETE, Some(PatchKind::Delete)),
            (MOVE, None),
        ]
        .into_iter()
        .find_map(|(prefix, kind)| line.strip_prefix(prefix).map(|rest| (kind, rest.trim())));
        let Some((kind, path)) = header else {
            move_allowed = false;
            continue;
        };
        if path.is_empty() {
            return Err(HookError::PatchEmptyPath { line: line_no });
        }
        match kind {
            Some(kind) => {
                files.push(PatchFile {
                    path: PathBuf::from(path),
                    kind,
                    move_to: None,
                });
                move_allowed = kind == PatchKind::Update;
            }
            None => {
                let target = files.last_mut().filter(|_| move_allowed);
                let Some(file) = target else {
                    return Err(HookError::PatchStrayMove { line: line_no });
                };
                file.move_to = Some(PathBuf::from(path));
                move_allowed = false;
            }
        }
    }
    if files.is_empty() {
        return Err(HookError::PatchWithoutFiles);
    }
    Ok(files)
}
