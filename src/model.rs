//! The vocabulary shared by the index, the engine and undo: file states, proof levels,
//! window kinds, and the rows that tie them together. Plain data, no behaviour beyond
//! naming and comparison.

use std::fmt;
use std::str::FromStr;

use crate::ids::{BlobId, ChangeId, WindowId};
use crate::workspace::{RelPath, Stat};

/// What rewind knows about one side of a change, or about a path now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    Absent,
    Present {
        blob: BlobId,
        mode: u32,
    },
    /// rewind knows the path changed but not the bytes (too large, no baseline, …).
    Unknown,
}

impl FileState {
    pub fn blob(&self) -> Option<BlobId> {
        match self {
            FileState::Present { blob, .. } => Some(*blob),
            _ => None,
        }
    }

    /// Same content and presence. Mode is compared separately where it matters: a chmod is
    /// not an edit anyone would want undo to refuse over.
    pub(crate) fn same_content(&self, other: &FileState) -> bool {
        match (self, other) {
            (FileState::Absent, FileState::Absent) => true,
            (FileState::Present { blob: a, .. }, FileState::Present { blob: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// How well rewind can vouch for a change's two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Proof {
    /// rewind captured the before and the after bytes itself.
    Exact,
    /// A side was rebuilt from trusted evidence and verified by hash.
    Derived,
    /// rewind knows the path changed but lacks a side; undo refuses it.
    MetadataOnly,
}

impl Proof {
    pub fn as_str(&self) -> &'static str {
        match self {
            Proof::Exact => "exact",
            Proof::Derived => "derived",
            Proof::MetadataOnly => "metadata-only",
        }
    }
}

impl FromStr for Proof {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "exact" => Ok(Proof::Exact),
            "derived" => Ok(Proof::Derived),
            "metadata-only" => Ok(Proof::MetadataOnly),
            other => Err(format!("unknown proof level {other:?}")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WindowKind {
    Agent,
    Undo,
    Redo,
    External,
    Import,
}

impl WindowKind {
    /// Every kind (the index generates its SQL lists of kinds from it): a new kind goes here
    /// as well as into `as_str`.
    pub const ALL: [WindowKind; 5] = [
        WindowKind::Agent,
        WindowKind::Undo,
        WindowKind::Redo,
        WindowKind::External,
        WindowKind::Import,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            WindowKind::Agent => "agent",
            WindowKind::Undo => "undo",
            WindowKind::Redo => "redo",
            WindowKind::External => "external",
            WindowKind::Import => "import",
        }
    }

    /// Windows whose changes are edits in their own right (as opposed to undo/redo windows,
    /// whose effect is tracked through reversals of those edits).
    pub(crate) fn is_original(&self) -> bool {
        matches!(
            self,
            WindowKind::Agent | WindowKind::External | WindowKind::Import
        )
    }

    /// Windows a plain `undo` (no window named) takes the newest of: the agent's turns,
    /// whether its hooks recorded them or they were imported from its own records; never
    /// the user's edits (`external`), nor undo and redo windows.
    pub(crate) fn is_agent_turn(&self) -> bool {
        matches!(self, WindowKind::Agent | WindowKind::Import)
    }
}

impl FromStr for WindowKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "agent" => Ok(WindowKind::Agent),
            "undo" => Ok(WindowKind::Undo),
            "redo" => Ok(WindowKind::Redo),
            "external" => Ok(WindowKind::External),
            "import" => Ok(WindowKind::Import),
            other => Err(format!("unknown window kind {other:?}")),
        }
    }
}

impl fmt::Display for WindowKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An undo or redo window's life: written to the index before the first file is touched
/// (`Applying`), then `Done`, or `RolledBack` when it had to put everything back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowStatus {
    Done,
    Applying,
    RolledBack,
}

impl WindowStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            WindowStatus::Done => "done",
            WindowStatus::Applying => "applying",
            WindowStatus::RolledBack => "rolled-back",
        }
    }
}

impl FromStr for WindowStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "done" => Ok(WindowStatus::Done),
            "applying" => Ok(WindowStatus::Applying),
            "rolled-back" => Ok(WindowStatus::RolledBack),
            other => Err(format!("unknown window status {other:?}")),
        }
    }
}

/// What recorded a file state: the command or flow that wrote it (`file_states.recorded_by`;
/// nothing reads it back: it is there for whoever inspects an index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordedBy {
    Scan,
    Snap,
    Record,
    Check,
    Undo,
    Restore,
}

impl RecordedBy {
    /// In the order of their stored codes (schema v16): a variant's code is its place here.
    pub const ALL: [RecordedBy; 6] = [
        RecordedBy::Scan,
        RecordedBy::Snap,
        RecordedBy::Record,
        RecordedBy::Check,
        RecordedBy::Undo,
        RecordedBy::Restore,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            RecordedBy::Scan => "scan",
            RecordedBy::Snap => "snap",
            RecordedBy::Record => "record",
            RecordedBy::Check => "check",
            RecordedBy::Undo => "undo",
            RecordedBy::Restore => "restore",
        }
    }
}

/// The agent tool call a change comes from: the tool's name (`Edit`, `apply_patch`, `bash`…)
/// and the call's id, each when the agent says it. The two travel together: a snap and its
/// record pair by the id, and the tool names the change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolCall<'a> {
    pub tool: Option<&'a str>,
    pub id: Option<&'a str>,
}

impl<'a> ToolCall<'a> {
    /// No tool and no id: a change rewind cannot attribute to a call.
    pub const NONE: ToolCall<'static> = ToolCall {
        tool: None,
        id: None,
    };

    pub fn new(tool: Option<&'a str>, id: Option<&'a str>) -> ToolCall<'a> {
        ToolCall { tool, id }
    }
}

#[derive(Debug, Clone)]
pub struct Window {
    pub id: WindowId,
    pub session: String,
    pub kind: WindowKind,
    pub label: Option<String>,
    pub implicit: bool,
    pub status: WindowStatus,
    pub opened_at: i64,
    pub closed_at: Option<i64>,
}

/// How many changes a window has, how many of them are in effect, and how many rewind's own
/// tools recorded: what tells a review what the window is (a turn, a reject, a hunk reject,
/// a take-back) without reading its changes (an index aggregate, however many files).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowTally {
    pub changes: usize,
    /// Not undone (`undone_by` empty).
    pub live: usize,
    /// Recorded with the tool `undo`.
    pub by_undo: usize,
    /// Recorded with the tool `redo`.
    pub by_redo: usize,
}

impl WindowTally {
    /// The tally of a window's `changes`.
    pub fn of(changes: &[Change]) -> Self {
        WindowTally {
            live: changes.iter().filter(|c| c.undone_by.is_none()).count(),
            ..WindowTally::of_tools(changes.iter().map(|c| c.tool.as_deref()))
        }
    }

    /// The tally of changes whose tools are `tools`, their states unknown (`live` 0).
    pub fn of_tools<'t>(tools: impl IntoIterator<Item = Option<&'t str>>) -> Self {
        let mut tally = WindowTally::default();
        for tool in tools {
            tally.changes += 1;
            // The tools rewind records its own changes with are named after their windows'
            // kinds (`engine::exec::PlanTool`).
            match tool {
                Some(t) if t == WindowKind::Undo.as_str() => tally.by_undo += 1,
                Some(t) if t == WindowKind::Redo.as_str() => tally.by_redo += 1,
                _ => {}
            }
        }
        tally
    }

    /// Every change of the window is undone (and it has one at least).
    pub fn undone(&self) -> bool {
        self.changes > 0 && self.live == 0
    }
}

#[derive(Debug, Clone)]
pub struct Change {
    pub id: ChangeId,
    pub window: WindowId,
    pub path: RelPath,
    pub before: FileState,
    /// `None` while the write is pending (snapped, not yet recorded).
    pub after: Option<FileState>,
    pub tool: Option<String>,
    pub tool_call: Option<String>,
    pub proof: Proof,
    /// Why the change is metadata-only; `None` when it is not.
    pub reason: Option<MetadataReason>,
    /// The undo window currently reversing this change; `None` while it is in effect.
    pub undone_by: Option<WindowId>,
    pub created_at: i64,
}

/// The latest state rewind knows for a path, with the stat data that lets a scan skip
/// hashing when the file is provably unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownState {
    pub state: FileState,
    pub stat: Option<Stat>,
    /// Nanoseconds since the epoch when the bytes were read.
    pub recorded_at: i64,
    /// Why an unknown `state` has no bytes; `None` for the other states, and for unknown
    /// states recorded before schema v8 kept the cause (see [`KnownState::unread_reason`]).
    pub unread: Option<Unread>,
}

impl KnownState {
    /// The reason a change from or to this state is metadata-only: why its bytes are
    /// missing. An unknown state without a recorded cause dates from before v8, when the
    /// size limit was the cause rewind assumed for every one of them.
    pub(crate) fn unread_reason(&self) -> MetadataReason {
        self.unread.unwrap_or(Unread::TooLarge).into()
    }

    /// The stat `now` proves the file unchanged since this state: identical, and recorded
    /// strictly after the second the file was last modified in (otherwise a write in that
    /// same second could hide behind an identical mtime — the racy-git rule).
    pub(crate) fn proves_unchanged(&self, now: &Stat) -> bool {
        let Some(then) = self.stat else {
            return false;
        };
        then == *now && then.mtime_ns < unseen_before(self.recorded_at)
    }
}

/// How far a file's timestamps may lag behind the clock rewind records times by: the kernel
/// stamps files from a coarse clock, up to a tick (1-10 ms) behind the system clock.
const FILE_CLOCK_LAG_NS: i64 = 20_000_000;

/// The racy-git rule: what was recorded (read, stat-ed, listed) at `recorded_at` proves a file
/// or directory unchanged only if it was last modified before the returned time — before the
/// second in which the recording was made, by the file clock. A change later in that second
/// could leave the same timestamps behind on a filesystem with coarse ones.
pub(crate) fn unseen_before(recorded_at: i64) -> i64 {
    (recorded_at - FILE_CLOCK_LAG_NS).div_euclid(1_000_000_000) * 1_000_000_000
}

/// Why a change is metadata-only: rewind knows the path changed but lacks one side's bytes.
/// [`MetadataReason::as_str`] is the one string form, used by the index (`changes.reason`,
/// `file_states.unread`) and by `--json` (`reason`); those strings are an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataReason {
    /// Over the size limit (`--max-file-size`): never read.
    TooLarge,
    /// This user may not read it (mode 000, another user's file).
    Unreadable,
    /// A write no snap saw coming, with no evidence of the bytes before it.
    NoSnapshot,
    /// The evidence of the bytes before a write does not hash to the state rewind knew.
    EvidenceMismatch,
    /// A scan found the path with no earlier state to compare it with.
    NoBaseline,
    // Imported history (`rewind import`): why the source's records do not prove the exact
    // transition. See src/import/mod.rs for the proof rules.
    /// A snapshot tree or blob is missing from (or damaged in) the agent's snapshot store.
    SnapshotStoreMissing,
    /// The step has no readable pair of snapshots around the tool call.
    NoStepSnapshot,
    /// An edit whose old text is empty, occurs several times, or replaces all occurrences.
    AmbiguousEdit,
    /// Several tool calls of the same step touched the path.
    AmbiguousWindow,
    /// A patch shape rewind does not verify (rename, mode change, binary, unparsed hunks).
    UnsupportedPatch,
    /// Not text, and not a write of exactly these bytes.
    Binary,
    /// The path is not a normal path inside the workspace, or appears twice in a tree.
    UnsafePath,
    /// Not a regular file in the snapshot (symlink, submodule).
    NotRegular,
    /// The tool's own input does not turn the before text into the after text.
    NotProven,
    /// A shell command ran in the step: what it changed is not attributable.
    ShellCommand,
    /// A tool or record shape rewind does not know ran in the step.
    UnknownTool,
    /// The agent's pre-edit backup of the file (Claude Code's file history) is not there,
    /// or cannot be read.
    BackupMissing,
    /// A Jupyter notebook cell edit (`NotebookEdit`): rewind does not re-derive the
    /// notebook's JSON from the cell's new source.
    NotebookEdit,
    /// Fetched from another machine (`rewind fetch`), which shared the change's path, size
    /// and hash but not its bytes (a file its gitignore excludes), or whose bytes it no
    /// longer had.
    Withheld,
}

impl MetadataReason {
    pub fn as_str(self) -> &'static str {
        match self {
            MetadataReason::TooLarge => "too-large",
            MetadataReason::Unreadable => "unreadable",
            MetadataReason::NoSnapshot => "no-snapshot",
            MetadataReason::EvidenceMismatch => "evidence-mismatch",
            MetadataReason::NoBaseline => "no-baseline",
            MetadataReason::SnapshotStoreMissing => "snapshot-store-missing",
            MetadataReason::NoStepSnapshot => "no-step-snapshot",
            MetadataReason::AmbiguousEdit => "ambiguous-edit",
            MetadataReason::AmbiguousWindow => "ambiguous-window",
            MetadataReason::UnsupportedPatch => "unsupported-patch",
            MetadataReason::Binary => "binary",
            MetadataReason::UnsafePath => "unsafe-path",
            MetadataReason::NotRegular => "not-regular",
            MetadataReason::NotProven => "not-proven",
            MetadataReason::ShellCommand => "shell-command",
            MetadataReason::UnknownTool => "unknown-tool",
            MetadataReason::BackupMissing => "backup-missing",
            MetadataReason::NotebookEdit => "notebook-edit",
            MetadataReason::Withheld => "withheld",
        }
    }
}

impl FromStr for MetadataReason {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "too-large" => Ok(MetadataReason::TooLarge),
            "unreadable" => Ok(MetadataReason::Unreadable),
            "no-snapshot" => Ok(MetadataReason::NoSnapshot),
            "evidence-mismatch" => Ok(MetadataReason::EvidenceMismatch),
            "no-baseline" => Ok(MetadataReason::NoBaseline),
            "snapshot-store-missing" => Ok(MetadataReason::SnapshotStoreMissing),
            "no-step-snapshot" => Ok(MetadataReason::NoStepSnapshot),
            "ambiguous-edit" => Ok(MetadataReason::AmbiguousEdit),
            "ambiguous-window" => Ok(MetadataReason::AmbiguousWindow),
            "unsupported-patch" => Ok(MetadataReason::UnsupportedPatch),
            "binary" => Ok(MetadataReason::Binary),
            "unsafe-path" => Ok(MetadataReason::UnsafePath),
            "not-regular" => Ok(MetadataReason::NotRegular),
            "not-proven" => Ok(MetadataReason::NotProven),
            "shell-command" => Ok(MetadataReason::ShellCommand),
            "unknown-tool" => Ok(MetadataReason::UnknownTool),
            "backup-missing" => Ok(MetadataReason::BackupMissing),
            "notebook-edit" => Ok(MetadataReason::NotebookEdit),
            "withheld" => Ok(MetadataReason::Withheld),
            other => Err(format!("unknown metadata-only reason {other:?}")),
        }
    }
}

impl fmt::Display for MetadataReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for MetadataReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Why rewind knows a file by its stat alone: the [`MetadataReason`]s a file state can carry
/// (the others describe a change, not a file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// Over the size limit (`--max-file-size`): never read.
    TooLarge,
    /// This user may not read it (mode 000, another user's file).
    Unreadable,
}

impl Unread {
    pub fn as_str(self) -> &'static str {
        MetadataReason::from(self).as_str()
    }

    /// The cause a stored string names; `None` for one that is not a file state's cause.
    pub fn parse(s: &str) -> Option<Unread> {
        match s.parse() {
            Ok(MetadataReason::TooLarge) => Some(Unread::TooLarge),
            Ok(MetadataReason::Unreadable) => Some(Unread::Unreadable),
            _ => None,
        }
    }
}

impl From<Unread> for MetadataReason {
    fn from(unread: Unread) -> MetadataReason {
        match unread {
            Unread::TooLarge => MetadataReason::TooLarge,
            Unread::Unreadable => MetadataReason::Unreadable,
        }
    }
}

/// A file state as reported: `null` for absent, the blob id when present, `"unknown"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown(pub FileState);

impl serde::Serialize for Shown {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            FileState::Absent => s.serialize_none(),
            FileState::Present { blob, .. } => s.serialize_str(&blob.to_hex()),
            FileState::Unknown => s.serialize_str("unknown"),
        }
    }
}

/// Why an agent edit tool refused an edit, or a hook denied a write (`rewind log
/// --refusals`). The stored and JSON form is [`RefusalKind::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalKind {
    /// No token was given.
    NoToken,
    /// The token is not a token.
    InvalidToken,
    /// The token names other bytes than the file's current ones.
    StaleToken,
    /// An op's expected text is not what the lines hold.
    ExpectedMismatch,
    /// Two ops of one batch touch the same lines.
    Overlap,
    /// An op's line range does not fit the file.
    BadRange,
    /// The ops are malformed, empty or invalid.
    InvalidOps,
    /// Line ops on a file that is not UTF-8 text.
    NotText,
    /// A create over an existing file.
    Exists,
    /// A hook denied a write to a file changed since the session read it.
    StaleRead,
}

impl RefusalKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            RefusalKind::NoToken => "no-token",
            RefusalKind::InvalidToken => "invalid-token",
            RefusalKind::StaleToken => "stale-token",
            RefusalKind::ExpectedMismatch => "expected-mismatch",
            RefusalKind::Overlap => "overlap",
            RefusalKind::BadRange => "bad-range",
            RefusalKind::InvalidOps => "invalid-ops",
            RefusalKind::NotText => "not-text",
            RefusalKind::Exists => "exists",
            RefusalKind::StaleRead => "stale-read",
        }
    }

    const ALL: [RefusalKind; 10] = [
        RefusalKind::NoToken,
        RefusalKind::InvalidToken,
        RefusalKind::StaleToken,
        RefusalKind::ExpectedMismatch,
        RefusalKind::Overlap,
        RefusalKind::BadRange,
        RefusalKind::InvalidOps,
        RefusalKind::NotText,
        RefusalKind::Exists,
        RefusalKind::StaleRead,
    ];
}

impl FromStr for RefusalKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RefusalKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown refusal kind {s:?}"))
    }
}

/// One recorded refusal: when, where and why, never the content involved.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub at: i64,
    pub session: String,
    pub path: RelPath,
    pub kind: RefusalKind,
    /// The tool refused (`edit`, `write`, or the agent's tool named by the hook).
    pub tool: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refusal kinds are an interface too (index rows, `log --refusals --json`).
    #[test]
    fn refusal_kinds_round_trip_through_their_one_string_form() {
        for kind in RefusalKind::ALL {
            assert_eq!(kind.as_str().parse::<RefusalKind>(), Ok(kind));
            assert_eq!(
                serde_json::to_value(kind).ok(),
                Some(serde_json::Value::from(kind.as_str()))
            );
        }
        assert!("nope".parse::<RefusalKind>().is_err());
    }

    /// The strings are an interface (index rows, `--json`): each reason reads back as itself,
    /// and serializes to the same string.
    #[test]
    fn metadata_reasons_round_trip_through_their_one_string_form() {
        use MetadataReason::*;
        for reason in [
            TooLarge,
            Unreadable,
            NoSnapshot,
            EvidenceMismatch,
            NoBaseline,
            SnapshotStoreMissing,
            NoStepSnapshot,
            AmbiguousEdit,
            AmbiguousWindow,
            UnsupportedPatch,
            Binary,
            UnsafePath,
            NotRegular,
            NotProven,
            ShellCommand,
            UnknownTool,
            BackupMissing,
            NotebookEdit,
        ] {
            assert_eq!(reason.as_str().parse::<MetadataReason>(), Ok(reason));
            assert_eq!(
                serde_json::to_string(&reason).unwrap(),
                format!("\"{}\"", reason.as_str())
            );
        }
        assert!("too large".parse::<MetadataReason>().is_err());
        assert_eq!(Unread::parse("unreadable"), Some(Unread::Unreadable));
        assert_eq!(
            Unread::parse("no-snapshot"),
            None,
            "not a file state's cause"
        );
        assert_eq!(Unread::TooLarge.as_str(), "too-large");
    }
}
