//! `rewind init <agent>`: wire rewind into an agent's project configuration — its hooks, the
//! `rewind mcp` server, and an undo command file where the agent has command files.
//!
//! Rules: merge into existing JSON settings without touching the user's other keys; running
//! twice adds nothing twice (an entry that already runs rewind's hook for the agent counts as
//! present, and is pointed at this binary and home: an older init's bare `rewind hook
//! <agent>` is upgraded); the hook command is the absolute path of this binary with the home
//! written in when one was chosen, in a form that lets the agent go on when rewind is gone
//! (`rewind::hooks::config::Invocation`); a file rewind did not write is never overwritten (a conflicting command file
//! or Cline hook script is reported and left alone); before the first change to an existing
//! file its previous bytes are kept as `<file>.rewind-backup`. `--dry-run` prints what would
//! be written and writes nothing.
//!
//! Every file is confined to the workspace like any other write: a parent directory that is a
//! symlink is refused (`.claude -> /elsewhere` would put the settings there), and a config
//! file that is itself a symlink is followed, deliberately, only when it points to a regular
//! file inside the workspace — the link stays a link, the target gets the change and keeps the
//! backup — else refused, naming the file and where it points. Every agent's files are
//! workspace-relative; none needs a user-level file.
//!
//! `--uninstall` undoes it: a file with a backup gets its backup back (bytes and mode) when it
//! is still what init made of it; a file without one that is exactly what init creates is
//! removed, then the directories that leaves empty. A file changed since init wrote it is
//! kept, with its backup, and reported. Idempotent; `--dry-run` prints what it would do. The
//! files are compared with what init writes for the binary and home they name (recovered from
//! them), so an init run by another rewind binary is undone as exactly.
//!
//! Which files each agent needs, and what goes in them, is the agent adapter's knowledge
//! (`rewind::hooks::config`, `Agent::config_files`); this file is the machinery, the same
//! for every agent.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::cli::context::{cwd, default_home, workspace};
use crate::cli::exit::{Exit, Failure};
use crate::cli::options::Global;
use crate::cli::render::Out;
use rewind::hooks::config::{is_hook_command, Invocation, Part};
use rewind::hooks::Agent;
use rewind::workspace::{normalize, PathError, Workspace};

#[derive(Debug, Args)]
pub struct InitArgs {
    /// claude-code | opencode | gemini | codex | cursor | cline | pi | copilot | qwen
    pub agent: String,
    /// Print what would be written; write nothing
    #[arg(long, alias = "print")]
    pub dry_run: bool,
    /// Undo `rewind init`: restore each file it changed from its `.rewind-backup`, remove the
    /// files it created (when still as it wrote them) and the directories left empty
    #[arg(long)]
    pub uninstall: bool,
    /// Install into (or, with --uninstall, remove from) the agent's user-level configuration,
    /// for every project: ~/.claude, ~/.gemini, ~/.qwen, ~/.cursor, $CODEX_HOME (~/.codex),
    /// $XDG_CONFIG_HOME/opencode (~/.config/opencode), ~/.pi/agent
    #[arg(long)]
    pub user: bool,
}

/// Where init writes: a project's workspace, or an agent's user-level configuration
/// directory (with the project-relative names mapped into it).
enum Level {
    Project,
    User,
}

/// The agent's user-level configuration directory, which `init --user` treats as its
/// workspace (the same rules: nothing written through a symlinked parent or outside it).
fn user_root(agent: Agent) -> Result<PathBuf, Failure> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME").ok_or_else(|| {
        Failure::new(
            Exit::Error,
            "init --user: HOME is not set; cannot find the agent's user configuration",
        )
    })?;
    Ok(match agent {
        Agent::Codex => var("CODEX_HOME").unwrap_or_else(|| home.join(".codex")),
        Agent::OpenCode => var("XDG_CONFIG_HOME")
            .unwrap_or_else(|| home.join(".config"))
            .join("opencode"),
        Agent::Cline => {
            return Err(Failure::new(
                Exit::Usage,
                "init --user: rewind knows no user-level hooks for Cline; run `rewind init cline` in each project",
            ))
        }
        Agent::Copilot => {
            return Err(Failure::new(
                Exit::Usage,
                "init --user: Copilot CLI reads hooks from the project's .github/hooks/; run `rewind init copilot` in each project",
            ))
        }
        _ => home,
    })
}

/// A project-relative configuration path as it is named under the agent's user-level
/// directory: Codex's `.codex/X` is `$CODEX_HOME/X`, OpenCode's `.opencode/X` and
/// `opencode.json` are in `~/.config/opencode/`, pi's `.pi/X` is `~/.pi/agent/X`; the others
/// keep their names under `~`.
fn user_path(agent: Agent, rel: &Path) -> PathBuf {
    let strip = |prefix: &str| rel.strip_prefix(prefix).map(Path::to_path_buf).ok();
    match agent {
        Agent::Codex => strip(".codex").unwrap_or_else(|| rel.to_path_buf()),
        Agent::OpenCode => strip(".opencode").unwrap_or_else(|| rel.to_path_buf()),
        // pi's user-level extensions are in ~/.pi/agent/extensions/.
        Agent::Pi => strip(".pi")
            .map(|r| Path::new(".pi/agent").join(r))
            .unwrap_or_else(|| rel.to_path_buf()),
        _ => rel.to_path_buf(),
    }
}

/// One file `init` wants in a given state.
struct Planned {
    /// Where it is read and written: the file, or the target of a symlinked file.
    path: PathBuf,
    /// How it is named to the user: relative to the workspace, `link -> target` when followed.
    shown: String,
    /// The full new content, or `None` when the file is already as wanted.
    content: Option<String>,
    executable: bool,
    note: &'static str,
}

/// `init --json`: `{agent, workspace, dry_run, files: [{path, changed, what, content}],
/// next_steps: [line]}`, `content` only for a dry run.
#[derive(Serialize)]
struct InitJson<'a> {
    agent: &'a str,
    workspace: String,
    dry_run: bool,
    files: Vec<FileJson<'a>>,
    /// What the user still has to do in the agent before its hooks run (Codex: trust).
    next_steps: Vec<String>,
}

#[derive(Serialize)]
struct FileJson<'a> {
    path: String,
    changed: bool,
    what: &'a str,
    content: Option<&'a str>,
}

/// `init --uninstall --json`: `{agent, workspace, dry_run, uninstall, files: [{path, action}]}`.
#[derive(Serialize)]
struct UninstallJson<'a> {
    agent: &'a str,
    workspace: String,
    dry_run: bool,
    uninstall: bool,
    files: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    path: String,
    action: &'static str,
}

pub fn run(g: &Global, out: &Out, args: InitArgs) -> Result<Exit, Failure> {
    let InitArgs {
        agent,
        dry_run,
        uninstall,
        user,
    } = args;
    let agent: Agent = agent
        .parse()
        .map_err(|e: rewind::hooks::HookError| Failure::new(Exit::Usage, e.to_string()))?;
    let (ws, level) = match user {
        true => (user_workspace(agent, dry_run && !uninstall)?, Level::User),
        false => (workspace(g, &cwd()?)?, Level::Project),
    };
    let root = ws.root();
    let rewind = invocation(g);
    if uninstall {
        return run_uninstall(out, agent, &rewind, (&ws, &level), dry_run);
    }
    let plans = plan(agent, &rewind, (&ws, &level), &read_existing)?;

    let mut written = Vec::new();
    let mut text = String::new();
    for p in &plans {
        let shown = p.shown.clone();
        match &p.content {
            None => text.push_str(&format!("unchanged  {shown} ({})\n", p.note)),
            Some(content) => {
                if dry_run {
                    text.push_str(&format!("would write {shown} ({}):\n{content}\n", p.note));
                } else {
                    write_file(p, content)?;
                    text.push_str(&format!("wrote      {shown} ({})\n", p.note));
                }
                written.push(shown);
            }
        }
    }
    let next_steps = match (&level, agent) {
        (Level::Project, _) => agent.init_steps(root),
        (Level::User, Agent::Codex) => vec![
            "Codex runs these hooks only once you trust them: in `codex`, type /hooks and trust rewind's hooks (again after any change to hooks.json)".to_string(),
        ],
        (Level::User, Agent::ClaudeCode) => vec![format!(
            "rewind's MCP tools in every project too: claude mcp add --scope user rewind -- {} mcp",
            rewind.exe()
        )],
        (Level::User, _) => Vec::new(),
    };
    if out.json {
        out.print_json(&InitJson {
            agent: agent.as_str(),
            workspace: root.display().to_string(),
            dry_run,
            files: plans
                .iter()
                .map(|p| FileJson {
                    path: p.path.display().to_string(),
                    changed: p.content.is_some(),
                    what: p.note,
                    content: if dry_run { p.content.as_deref() } else { None },
                })
                .collect(),
            next_steps,
        });
    } else {
        for step in &next_steps {
            text.push_str(step);
            text.push('\n');
        }
        out.print(&text);
    }
    Ok(Exit::Ok)
}

/// How the configuration runs rewind: this binary by its absolute path (the agent's `PATH`
/// may not hold it; `rewind` on `PATH` when the path cannot be found), with the home written
/// in when the user chose one other than the default (`--home`, `REWIND_HOME`).
fn invocation(g: &Global) -> Invocation {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("rewind"));
    let chosen = g
        .home
        .as_ref()
        .map(|h| normalize(&std::path::absolute(h).unwrap_or_else(|_| h.clone())));
    let home = chosen.filter(|h| default_home().map_or(true, |d| &d != h));
    Invocation::new(&exe, home.as_deref())
}

/// The agent's user-level configuration directory as a workspace, created when missing
/// (unless only looking: a dry run of an install into a directory not there yet).
fn user_workspace(agent: Agent, looking: bool) -> Result<Workspace, Failure> {
    let root = user_root(agent)?;
    if !looking && std::fs::symlink_metadata(&root).is_err() {
        std::fs::create_dir_all(&root).map_err(|e| {
            Failure::new(
                Exit::Error,
                format!("cannot create {}: {e}", root.display()),
            )
        })?;
    }
    Workspace::open(&root).map_err(|e| {
        Failure::new(
            Exit::Error,
            format!("init --user: cannot use {}: {e}", root.display()),
        )
    })
}

/// How `plan` reads a file's current text (the disk, or what it was before init).
type Source<'a> = &'a dyn Fn(&Path) -> Result<Option<String>, Failure>;

/// Each file `agent`'s configuration needs, planned against its current text from `src`.
/// Every file is placed (confined, symlinks settled) before any is read or written.
fn plan(
    agent: Agent,
    rewind: &Invocation,
    (ws, level): (&Workspace, &Level),
    src: Source<'_>,
) -> Result<Vec<Planned>, Failure> {
    let cmd = rewind.hook_command(agent);
    let mut files = agent.config_files(rewind);
    if let Level::User = level {
        // Claude Code keeps user-level MCP servers in ~/.claude.json, its own state file,
        // which rewind does not edit (next steps say how to add it); a ~/.mcp.json does
        // nothing.
        files.retain(|f| !(agent == Agent::ClaudeCode && f.path == Path::new(".mcp.json")));
        for f in &mut files {
            f.path = user_path(agent, &f.path);
        }
    }
    let places = files
        .iter()
        .map(|file| place(ws, &file.path))
        .collect::<Result<Vec<_>, _>>()?;
    files
        .into_iter()
        .zip(places)
        .map(|(file, (path, shown))| {
            let mut planned = match file.part {
                Part::Json(wanted) => merge_json(src, &path, &wanted, (agent, &cmd), file.note),
                Part::Whole {
                    content,
                    executable,
                } => new_file(src, &path, &content, executable, file.note),
                Part::TomlTable { header, table } => {
                    append_toml(src, &path, header, &table, file.note)
                }
            }?;
            planned.shown = shown;
            Ok(planned)
        })
        .collect()
}

/// Where init reads and writes the config file `rel` (relative to the workspace root), and
/// how it names it: the same rules as every other write. A symlinked parent directory, a path
/// outside the workspace or in `.git` is refused; a file that is a symlink is followed when
/// it points to a regular file inside the workspace (the link is the user's and stays) and
/// refused otherwise; a backup that is not a regular file is refused (copying onto it or
/// renaming it back would follow or plant a link).
fn place(ws: &Workspace, rel: &Path) -> Result<(PathBuf, String), Failure> {
    let root = ws.root();
    let abs = root.join(rel);
    let shown = rel.display().to_string();
    ws.resolve(&abs, root).map_err(|e| refused_path(&e))?;
    let (path, shown) = match std::fs::symlink_metadata(&abs) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let link = std::fs::read_link(&abs)
                .map_err(|e| Failure::new(Exit::Error, format!("cannot read link {shown}: {e}")))?;
            let target = followed_target(ws, &abs).ok_or_else(|| {
                Failure::new(
                    Exit::Error,
                    format!(
                        "{shown}: is a symlink to {}, which is not a regular file inside the workspace; not touching it",
                        link.display()
                    ),
                )
                .hint("replace the link with the file itself, or point it at a file inside the workspace, then run rewind init again")
            })?;
            let target_shown = target.strip_prefix(root).unwrap_or(&target).display();
            let named = format!("{shown} -> {target_shown}");
            (target, named)
        }
        _ => (abs, shown),
    };
    let backup = backup_of(&path);
    match std::fs::symlink_metadata(&backup) {
        Ok(meta) if !meta.file_type().is_file() => Err(Failure::new(
            Exit::Error,
            format!(
                "{}: is not a regular file (a symlink or a directory); not touching it",
                backup.strip_prefix(root).unwrap_or(&backup).display()
            ),
        )
        .hint("move it away, then run rewind init again")),
        _ => Ok((path, shown)),
    }
}

/// The regular file inside the workspace that the symlink `abs` leads to, if it does.
fn followed_target(ws: &Workspace, abs: &Path) -> Option<PathBuf> {
    let target = abs.canonicalize().ok()?;
    let meta = std::fs::symlink_metadata(&target).ok()?;
    if !meta.is_file() {
        return None;
    }
    ws.resolve(&target, ws.root()).ok()?;
    Some(target)
}

/// A config file path the workspace rules refuse; a symlinked parent says where it points.
fn refused_path(e: &PathError) -> Failure {
    let link = match e {
        PathError::SymlinkedParent { parent, .. } => std::fs::read_link(parent).ok(),
        _ => None,
    };
    let f = Failure::new(Exit::Error, e.to_string());
    match link {
        Some(to) => f.hint(format!(
            "it points to {}; rewind init writes only real directories inside the workspace",
            to.display()
        )),
        None => f,
    }
}

/// Merge `wanted` into the JSON file at `path`: objects merge key by key; arrays (hook lists)
/// get our entries appended unless an entry already runs rewind's hook for the agent (that
/// entry is pointed at `hook.1`, the command of this init: an older init's bare
/// `rewind hook <agent>` or another binary path is replaced) or equals ours; scalars the user
/// set are kept.
fn merge_json(
    src: Source<'_>,
    path: &Path,
    wanted: &Value,
    hook: (Agent, &str),
    note: &'static str,
) -> Result<Planned, Failure> {
    let existing = src(path)?;
    let mut current = match &existing {
        None => Value::Object(Map::new()),
        Some(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Some(text) => serde_json::from_str::<Value>(text).map_err(|e| {
            Failure::new(
                Exit::Error,
                format!("{}: not valid JSON ({e}); not touching it", path.display()),
            )
            .hint("fix or move the file, then run rewind init again")
        })?,
    };
    if !current.is_object() {
        return Err(Failure::new(
            Exit::Error,
            format!("{}: not a JSON object; not touching it", path.display()),
        ));
    }
    let before = current.clone();
    merge(&mut current, wanted, hook);
    let content = if existing.is_some() && current == before {
        None
    } else {
        let mut text = serde_json::to_string_pretty(&current)
            .map_err(|e| Failure::new(Exit::Error, format!("cannot render JSON: {e}")))?;
        text.push('\n');
        Some(text)
    };
    Ok(Planned {
        path: path.to_path_buf(),
        shown: String::new(),
        content,
        executable: false,
        note,
    })
}

fn merge(current: &mut Value, wanted: &Value, hook: (Agent, &str)) {
    match (current, wanted) {
        (Value::Object(cur), Value::Object(want)) => {
            for (k, v) in want {
                match cur.get_mut(k) {
                    Some(existing) => merge(existing, v, hook),
                    None => {
                        cur.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(cur), Value::Array(want)) => {
            for item in want {
                if cur.iter().any(|c| c == item) {
                    continue;
                }
                match cur.iter_mut().find(|c| runs_hook(c, hook.0)) {
                    Some(entry) => repoint(entry, hook),
                    None => cur.push(item.clone()),
                }
            }
        }
        // A scalar the user set wins.
        _ => {}
    }
}

/// Does this JSON value (a hook group or entry) run rewind's hook for `agent` anywhere inside?
fn runs_hook(v: &Value, agent: Agent) -> bool {
    match v {
        Value::String(s) => is_hook_command(s, agent),
        Value::Array(items) => items.iter().any(|i| runs_hook(i, agent)),
        Value::Object(map) => map.values().any(|i| runs_hook(i, agent)),
        _ => false,
    }
}

/// Points every rewind hook command for `hook.0` inside this JSON value at `hook.1`.
fn repoint(v: &mut Value, hook: (Agent, &str)) {
    match v {
        Value::String(s) if is_hook_command(s, hook.0) => *s = hook.1.to_string(),
        Value::Array(items) => items.iter_mut().for_each(|i| repoint(i, hook)),
        Value::Object(map) => map.values_mut().for_each(|i| repoint(i, hook)),
        _ => {}
    }
}

/// A file rewind owns whole: written when absent, left alone when present (ours or not).
fn new_file(
    src: Source<'_>,
    path: &Path,
    content: &str,
    executable: bool,
    note: &'static str,
) -> Result<Planned, Failure> {
    let existing = src(path)?;
    let content = match existing {
        None => Some(content.to_string()),
        Some(_) => None,
    };
    Ok(Planned {
        path: path.to_path_buf(),
        shown: String::new(),
        content,
        executable,
        note,
    })
}

/// Append a TOML table unless its header is already there (no TOML parser needed for that).
fn append_toml(
    src: Source<'_>,
    path: &Path,
    header: &str,
    table: &str,
    note: &'static str,
) -> Result<Planned, Failure> {
    let existing = src(path)?;
    let content = match existing {
        Some(text) if text.lines().any(|l| l.trim() == header) => None,
        Some(text) => {
            let sep = if text.is_empty() || text.ends_with("\n\n") {
                ""
            } else if text.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            Some(format!("{text}{sep}{table}"))
        }
        None => Some(table.to_string()),
    };
    Ok(Planned {
        path: path.to_path_buf(),
        shown: String::new(),
        content,
        executable: false,
        note,
    })
}

/// `<file>.rewind-backup`: the file's bytes before `rewind init` first changed it.
fn backup_of(path: &Path) -> PathBuf {
    let mut backup = path.as_os_str().to_os_string();
    backup.push(".rewind-backup");
    PathBuf::from(backup)
}

/// What `--uninstall` does to one file init manages.
#[derive(Clone, Copy)]
enum Removal {
    /// Put the backup back (rename: the original bytes and mode).
    Restore,
    /// The file already holds its original bytes: only the backup goes.
    DropBackup,
    /// init created the file and it is still exactly as init wrote it.
    Remove,
    /// Changed since init wrote it: restoring would lose someone's edit.
    KeepChanged,
    /// Not init's (absent, or a file init left alone).
    Nothing,
}

/// `rewind init <agent> --uninstall`: every file init changed goes back to its backup, every
/// file it created (and still as created) is removed, then the directories that leaves empty.
/// Running it again finds nothing to do.
fn run_uninstall(
    out: &Out,
    agent: Agent,
    rewind: &Invocation,
    target: (&Workspace, &Level),
    dry_run: bool,
) -> Result<Exit, Failure> {
    let ws = target.0;
    let root = ws.root();
    // What init writes given the files as they were before it ever ran: the backup where it
    // kept one, nothing where it created the file. Planned with the binary and home the
    // installed files name (an init run from another binary path, a package manager's
    // versioned directory), when planning with them gives those files exactly.
    let before = |path: &Path| read_existing(&backup_of(path));
    let mut plans = plan(agent, rewind, target, &before)?;
    if let Some(installed) = installed_invocation(&plans)?.filter(|i| i != rewind) {
        let theirs = plan(agent, &installed, target, &before)?;
        if recognized(&theirs)? > recognized(&plans)? {
            plans = theirs;
        }
    }

    let mut text = String::new();
    let mut rows = Vec::new();
    let mut gone: Vec<PathBuf> = Vec::new();
    for p in &plans {
        let (action, line) = undo_file(p, root, removal_of(p)?, dry_run, &mut gone)?;
        text.push_str(&line);
        text.push('\n');
        rows.push(Row {
            path: p.path.display().to_string(),
            action,
        });
    }
    for (d, line) in remove_empty_dirs(root, &gone, dry_run) {
        text.push_str(&line);
        if let Some(d) = d {
            rows.push(Row {
                path: d.display().to_string(),
                action: "remove-dir",
            });
        }
    }

    if out.json {
        out.print_json(&UninstallJson {
            agent: agent.as_str(),
            workspace: root.display().to_string(),
            dry_run,
            uninstall: true,
            files: rows,
        });
    } else {
        out.print(&text);
    }
    Ok(Exit::Ok)
}

/// How many of the planned files are exactly what init made of them (restored or removed
/// by uninstalling).
fn recognized(plans: &[Planned]) -> Result<usize, Failure> {
    let mut n = 0;
    for p in plans {
        if matches!(removal_of(p)?, Removal::Restore | Removal::Remove) {
            n += 1;
        }
    }
    Ok(n)
}

/// The binary and home the installed configuration files name, if any.
fn installed_invocation(plans: &[Planned]) -> Result<Option<Invocation>, Failure> {
    for p in plans {
        if let Some(text) = read_existing(&p.path)? {
            if let Some(found) = Invocation::recover(&text) {
                return Ok(Some(found));
            }
        }
    }
    Ok(None)
}

/// What uninstalling does to one planned file, from its bytes now and its backup's.
fn removal_of(p: &Planned) -> Result<Removal, Failure> {
    let current = read_bytes(&p.path)?;
    let original = read_bytes(&backup_of(&p.path))?;
    Ok(match (&original, &current) {
        (Some(orig), cur) => {
            let ours = p.content.as_deref().map_or(orig.as_slice(), str::as_bytes);
            match cur.as_deref() {
                Some(c) if c == orig.as_slice() => Removal::DropBackup,
                Some(c) if c == ours => Removal::Restore,
                // Deleted since init: the backup still is the user's file.
                None => Removal::Restore,
                Some(_) => Removal::KeepChanged,
            }
        }
        (None, Some(cur)) => match &p.content {
            Some(ours) if cur.as_slice() == ours.as_bytes() => Removal::Remove,
            _ => Removal::Nothing,
        },
        (None, None) => Removal::Nothing,
    })
}

/// Does `removal` to `p` (unless `dry_run`), noting removed files in `gone`; the JSON
/// action and the line that says what happened.
fn undo_file(
    p: &Planned,
    root: &Path,
    removal: Removal,
    dry_run: bool,
    gone: &mut Vec<PathBuf>,
) -> Result<(&'static str, String), Failure> {
    let shown = &p.shown;
    let backup = backup_of(&p.path);
    let backup_shown = backup.strip_prefix(root).unwrap_or(&backup).display();
    let fail =
        |e: std::io::Error| Failure::new(Exit::Error, format!("cannot uninstall {shown}: {e}"));
    let verb = if dry_run { "would " } else { "" };
    Ok(match removal {
        Removal::Restore => {
            if !dry_run {
                std::fs::rename(&backup, &p.path).map_err(fail)?;
            }
            ("restore", format!("{verb}restore {shown} from {backup_shown}"))
        }
        Removal::DropBackup => {
            if !dry_run {
                std::fs::remove_file(&backup).map_err(fail)?;
            }
            gone.push(backup.clone());
            ("drop-backup", format!("{verb}remove {backup_shown} ({shown} is already as before)"))
        }
        Removal::Remove => {
            if !dry_run {
                std::fs::remove_file(&p.path).map_err(fail)?;
            }
            gone.push(p.path.clone());
            ("remove", format!("{verb}remove {shown} ({}, created by rewind init)", p.note))
        }
        Removal::KeepChanged => (
            "keep",
            format!(
                "kept {shown}: changed since rewind init wrote it; its previous bytes are in {backup_shown}"
            ),
        ),
        Removal::Nothing => ("none", format!("nothing to undo in {shown}")),
    })
}

/// Removes (unless `dry_run`) the directories the `gone` files leave empty, deepest first,
/// never the workspace root. Each directory looked at, with the line saying what happened;
/// the directory is `Some` when it was (or would be) removed.
fn remove_empty_dirs(
    root: &Path,
    gone: &[PathBuf],
    dry_run: bool,
) -> Vec<(Option<PathBuf>, String)> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for path in gone {
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == root || !d.starts_with(root) || dirs.iter().any(|x| x == d) {
                break;
            }
            dirs.push(d.to_path_buf());
            dir = d.parent();
        }
    }
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    let mut removed_dirs: Vec<PathBuf> = Vec::new();
    let mut lines = Vec::new();
    for d in dirs {
        if !empty_after(&d, gone, &removed_dirs) {
            continue;
        }
        if !dry_run {
            if let Err(e) = std::fs::remove_dir(&d) {
                lines.push((None, format!("kept directory {}: {e}\n", d.display())));
                continue;
            }
        }
        let shown = d.strip_prefix(root).unwrap_or(&d).display().to_string();
        let verb = if dry_run { "would remove" } else { "removed" };
        lines.push((Some(d.clone()), format!("{verb} empty directory {shown}\n")));
        removed_dirs.push(d);
    }
    lines
}

/// Is `dir` empty once `gone` files and `gone_dirs` are removed? (Also right after they were.)
fn empty_after(dir: &Path, gone: &[PathBuf], gone_dirs: &[PathBuf]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    for entry in entries {
        let Ok(entry) = entry else {
            return false;
        };
        let path = entry.path();
        if !gone.contains(&path) && !gone_dirs.contains(&path) {
            return false;
        }
    }
    true
}

/// The largest agent configuration `init` reads: far over any real one.
const CONFIG_MAX: u64 = 16 << 20;

/// An agent's configuration file: a regular file (through a symlink, which `plan` confines),
/// never a FIFO or device read until it ends.
fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, Failure> {
    match rewind::files::read_regular(path, rewind::files::Follow::Yes, CONFIG_MAX) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::new(
            Exit::Error,
            format!("cannot read {}: {e}", path.display()),
        )),
    }
}

fn read_existing(path: &Path) -> Result<Option<String>, Failure> {
    match rewind::files::read_regular_text(path, rewind::files::Follow::Yes, CONFIG_MAX) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::new(
            Exit::Error,
            format!("cannot read {}: {e}", path.display()),
        )),
    }
}

fn write_file(p: &Planned, content: &str) -> Result<(), Failure> {
    let fail = |e: std::io::Error| {
        Failure::new(
            Exit::Error,
            format!("cannot write {}: {e}", p.path.display()),
        )
    };
    if let Some(parent) = p.path.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    if p.path.exists() {
        let backup = backup_of(&p.path);
        // Keep the user's original, not an earlier rewind edit of it.
        // (`place` refused a backup that is a symlink, so this cannot write through one.)
        if std::fs::symlink_metadata(&backup).is_err() {
            std::fs::copy(&p.path, &backup).map_err(fail)?;
        }
    }
    let dir = p.path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    std::io::Write::write_all(&mut tmp, content.as_bytes()).map_err(fail)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = match std::fs::metadata(&p.path) {
            Ok(m) => m.permissions().mode() & 0o7777,
            Err(_) if p.executable => 0o755,
            Err(_) => 0o644,
        };
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode))
            .map_err(fail)?;
    }
    tmp.persist(&p.path).map_err(|e| fail(e.error))?;
    Ok(())
}
