//! Slash commands an agent's hook carries out itself: Claude Code's `/rw-undo`.
//!
//! Claude Code runs a command file's shell line (`!`…``) only where its permission check
//! passes, and 2.1.3xx refuses any line holding a variable it cannot check (the session id
//! was one). Its `UserPromptSubmit` hook, though, sees the typed `/rw-undo [flags]` before the
//! command file is expanded, with the session's id, in every permission mode; answering it
//! `block` with a reason ends the prompt there (no model call) and shows the reason to the
//! user. So the hook undoes the session's last turn and its answer says which session and
//! turn it undid, with the binary and home the hooks run.

use std::path::Path;

use crate::engine::Session;
use crate::undo::{self, Direction, Flags, Report, Request, Status, Target};

/// A `/rw-undo` command file's text for an agent whose `UserPromptSubmit` hook carries the
/// command out: it reaches the model only when that hook did not answer (hooks in
/// `settings`), and then says nothing was undone and gives the user `line` to run by hand.
pub(super) fn fallback_text(settings: &str, line: &str) -> String {
    format!(
        "rewind's hook carries out /rw-undo as soon as it is typed and answers in your place. You are\nreading this because that hook did not answer (rewind's binary gone, REWIND_DISABLE set, or its\nhooks removed from {settings}): nothing was undone. Tell the user so in one sentence,\nand that this line, run in a terminal in the project with this session's id, undoes its last\nturn (do not run it yourself):\n\n    {line}\n"
    )
}

/// A `/rw-undo` command file in Gemini CLI's TOML format (Gemini CLI, Qwen Code): its
/// prompt is `prompt` of `line`, once `line` is escaped for the TOML basic string that holds
/// it (only `\` and `"` need escaping).
pub(super) fn toml_undo_command(line: &str, prompt: impl FnOnce(&str) -> String) -> String {
    let line = line.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "description = \"Undo this session's last turn with rewind (refuses to overwrite your own edits)\"\nprompt = \"\"\"\n{}\"\"\"\n",
        prompt(&line)
    )
}

/// The command the hook carries out.
pub const UNDO_COMMAND: &str = "/rw-undo";

/// The flags `/rw-undo` takes, as `rewind undo` spells them.
const FLAGS: &[&str] = &["--dry-run", "--force", "--strict", "--skip-unsafe"];

/// `prompt` is `/rw-undo` (and then its arguments, split at whitespace).
pub(crate) fn undo_args(prompt: &str) -> Option<Vec<String>> {
    let rest = prompt.trim().strip_prefix(UNDO_COMMAND)?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Undo the session's last turn in effect; what happened, in words for the user.
pub(crate) fn undo(
    session: &Session<'_>,
    agent_session: &str,
    args: &[String],
    cwd: &Path,
) -> String {
    let who = format!("session {agent_session}");
    if let Some(bad) = args.iter().find(|a| !FLAGS.contains(&a.as_str())) {
        return format!(
            "rewind: /rw-undo does not take `{bad}` (it takes {}); nothing was undone in {who}.",
            FLAGS.join(", ")
        );
    }
    let has = |f: &str| args.iter().any(|a| a == f);
    let flags = Flags {
        dry_run: has("--dry-run"),
        force: has("--force"),
        strict: has("--strict"),
        hunks: Vec::new(),
        skip_unsafe: has("--skip-unsafe"),
    };
    let report = Request::from_flags(
        Direction::Undo,
        Target::Latest,
        Vec::new(),
        cwd.to_path_buf(),
        flags,
    )
    .and_then(|req| undo::run(session, &req));
    match report {
        Ok(r) => render(session, &who, &r),
        Err(e) => format!("rewind could not undo the last turn of {who}: {e}; nothing was undone."),
    }
}

/// The report: which turn of which session, then one line per file.
fn render(session: &Session<'_>, who: &str, r: &Report) -> String {
    let turn = turns(session, r);
    let mut text = match r.status {
        Status::Nothing => return format!("rewind: nothing to undo in {who}."),
        Status::Undone | Status::Redone => format!(
            "rewind undid {turn} of {who}{} (recorded as window {}; `rewind redo --session {}` brings it back):\n",
            match r.skipped {
                0 => String::new(),
                n => format!(", except {n} skipped path(s)"),
            },
            r.window_id.map_or("?".to_string(), |w| w.to_string()),
            who.trim_start_matches("session "),
        ),
        Status::DryRun => format!("rewind would undo {turn} of {who} (dry run, nothing written):\n"),
        Status::Conflict => format!("rewind did not undo {turn} of {who}: nothing was written.\n"),
    };
    for f in &r.files {
        let outcome = kebab(&f.outcome);
        match (&f.conflict, &f.detail) {
            (Some(c), d) => text.push_str(&format!(
                "  {outcome} {} [{}]{}\n",
                f.path,
                kebab(c),
                d.as_ref().map(|d| format!(" — {d}")).unwrap_or_default()
            )),
            (None, _) => text.push_str(&format!("  {outcome} {}\n", f.path)),
        }
    }
    if r.status == Status::Conflict {
        text.push_str(
            "`/rw-undo --skip-unsafe` undoes the other files; `/rw-undo --force` overwrites the later edits (snapshotted first).\n",
        );
    }
    text
}

/// `turn 12 ("the prompt")` for each window undone.
fn turns(session: &Session<'_>, r: &Report) -> String {
    let windows = session
        .history()
        .log(false, 200)
        .ok()
        .and_then(|mut s| s.pop())
        .map(|s| s.windows)
        .unwrap_or_default();
    let one = |id: &crate::ids::WindowId| match windows
        .iter()
        .find(|w| w.id == *id)
        .and_then(|w| w.label.as_deref())
    {
        Some(label) => format!("turn {id} (\"{label}\")"),
        None => format!("turn {id}"),
    };
    r.targets.iter().map(one).collect::<Vec<_>>().join(", ")
}

/// The form a unit enum serializes to (`restored`, `later-change`, …).
fn kebab(v: &impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::undo_args;

    #[test]
    fn only_the_command_itself_is_taken() {
        assert_eq!(undo_args("/rw-undo"), Some(vec![]));
        assert_eq!(
            undo_args("  /rw-undo --force\n"),
            Some(vec!["--force".to_string()])
        );
        assert_eq!(undo_args("/rw-undone"), None);
        assert_eq!(undo_args("please /rw-undo"), None);
        assert_eq!(undo_args("undo it"), None);
    }
}
