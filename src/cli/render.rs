//! Human and JSON rendering of each command's result. JSON field names are an interface
//! (documented in the README): change them only with a CHANGELOG entry.

use rewind::engine::{CheckReport, DiffEntry, LogSession, RecordReport, RestoreReport, SnapReport};
use rewind::ids::WindowId;
use rewind::maintenance::{GcReport, VerifyReport};
use rewind::undo::{Direction, FileReport, Report, Shown, Status};
use rewind::workspace::Workspace;
use serde_json::json;

use super::Out;

fn short(s: &Shown) -> String {
    match serde_json::to_value(s) {
        Ok(serde_json::Value::String(hex)) if hex.len() == 64 => hex[..12].to_string(),
        Ok(serde_json::Value::String(other)) => other,
        _ => "absent".to_string(),
    }
}

pub fn snap(out: &Out, reports: &[SnapReport]) {
    if out.json {
        return out.print_json(&json!({ "files": reports }));
    }
    let mut text = String::new();
    for r in reports {
        let before = r.before.map_or("absent".to_string(), |b| b.short());
        text.push_str(&format!(
            "snapped {} ({before}) in window {}, change {}\n",
            r.path, r.window_id, r.change_id
        ));
        if let Some(reason) = &r.reason {
            text.push_str(&format!(
                "  metadata-only: {reason} (undo will refuse this change)\n"
            ));
        }
        if let Some(hint) = &r.hint {
            text.push_str(&format!("  externally modified: {hint}\n"));
        }
    }
    out.print(&text);
}

pub fn record(out: &Out, reports: &[RecordReport]) {
    if out.json {
        return out.print_json(&json!({ "files": reports }));
    }
    let mut text = String::new();
    for r in reports {
        let after = r.after.map_or("absent".to_string(), |b| b.short());
        text.push_str(&format!(
            "recorded {} ({after}) in window {}, change {}{}\n",
            r.path,
            r.window_id,
            r.change_id,
            if r.had_snapshot {
                ""
            } else {
                " — no snapshot preceded this write"
            }
        ));
        if let Some(reason) = &r.reason {
            text.push_str(&format!("  {}: {reason}\n", r.proof.as_str()));
        }
    }
    out.print(&text);
}

pub fn check(out: &Out, reports: &[CheckReport]) {
    if out.json {
        return out.print_json(&json!({
            "externally_modified": reports.iter().any(|r| r.externally_modified),
            "files": reports,
        }));
    }
    let mut text = String::new();
    for r in reports {
        match &r.hint {
            Some(hint) => text.push_str(&format!(
                "{}: {} — {hint}\n",
                r.path,
                match r.reason {
                    Some(rewind::engine::ModReason::Deleted) => "deleted",
                    _ => "modified",
                }
            )),
            None if r.snapshot.is_none() && r.current.is_some() => {
                text.push_str(&format!("{}: no snapshot yet\n", r.path))
            }
            None => text.push_str(&format!("{}: unchanged\n", r.path)),
        }
    }
    out.print(&text);
}

pub fn undo(out: &Out, direction: Direction, report: &Report) {
    if out.json {
        return out.print_json(&serde_json::to_value(report).unwrap_or_default());
    }
    let verb = match direction {
        Direction::Undo => "undo",
        Direction::Redo => "redo",
    };
    let targets = report
        .targets
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = match report.status {
        Status::Undone | Status::Redone if report.finished_interrupted => format!(
            "finished the interrupted {verb} of window {targets} (recorded as window {}); nothing more was {}\n",
            opt(report.window_id),
            if direction == Direction::Undo { "undone" } else { "redone" }
        ),
        Status::Nothing => format!("nothing to {verb}\n"),
        Status::Undone => format!(
            "undid window {targets} (recorded as window {})\n",
            opt(report.window_id)
        ),
        Status::Redone => format!(
            "redid window {targets} (recorded as window {})\n",
            opt(report.window_id)
        ),
        Status::DryRun => {
            format!("{verb} of window {targets} would do (dry run, nothing written):\n")
        }
        Status::Conflict => format!("{verb} of window {targets} refused: nothing was written\n"),
    };
    for f in &report.files {
        text.push_str(&file_line(f));
    }
    if report.status == Status::Conflict {
        text.push_str("hint: inspect with `rewind diff`; `--force` overrides modified-since and later-change (what it overwrites is snapshotted first)\n");
    }
    out.print(&text);
}

fn opt(w: Option<WindowId>) -> String {
    w.map_or("-".to_string(), |w| w.to_string())
}

fn file_line(f: &FileReport) -> String {
    let outcome = serde_json::to_value(f.outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    match (&f.conflict, &f.detail) {
        (Some(c), detail) => {
            let kind = serde_json::to_value(c)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            format!(
                "  {:<14} {}  [{kind}] expected {} found {}{}\n",
                outcome,
                f.path,
                short(&f.expected),
                short(&f.current),
                detail
                    .as_ref()
                    .map(|d| format!(" — {d}"))
                    .unwrap_or_default()
            )
        }
        (None, _) => format!(
            "  {:<14} {}  {} → {}\n",
            outcome,
            f.path,
            short(&f.current),
            short(&f.target)
        ),
    }
}

pub fn log(out: &Out, ws: &Workspace, log: &[LogSession]) {
    if out.json {
        return out
            .print_json(&json!({ "workspace": ws.root().display().to_string(), "sessions": log }));
    }
    let mut text = format!("workspace {}\n", ws.root().display());
    for s in log {
        text.push_str(&format!("session {}\n", s.session));
        if s.windows.is_empty() {
            text.push_str("  (no windows)\n");
        }
        for w in &s.windows {
            let mut flags = Vec::new();
            if w.open {
                flags.push("open".to_string());
            }
            if w.undone {
                flags.push("undone".to_string());
            }
            if w.status != rewind::model::WindowStatus::Done {
                flags.push(w.status.as_str().to_string());
            }
            text.push_str(&format!(
                "  window {} [{}] {}{}{}\n",
                w.id,
                w.kind,
                w.opened_at,
                w.label
                    .as_ref()
                    .map(|l| format!(" {l:?}"))
                    .unwrap_or_default(),
                if flags.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", flags.join(", "))
                }
            ));
            for c in &w.changes {
                let after = c.after.as_ref().map_or("pending".to_string(), short);
                text.push_str(&format!(
                    "    {:>5} {}  {} → {}  {}{}{}\n",
                    c.id,
                    c.path,
                    short(&c.before),
                    after,
                    c.proof.as_str(),
                    c.tool.as_ref().map(|t| format!(" {t}")).unwrap_or_default(),
                    c.undone_by
                        .map(|u| format!(" (undone by {u})"))
                        .unwrap_or_default(),
                ));
            }
        }
    }
    out.print(&text);
}

pub fn diff(out: &Out, window: WindowId, entries: &[DiffEntry]) {
    let mut files = Vec::new();
    let mut text = String::new();
    for e in entries {
        let body = unified(e);
        if out.json {
            files.push(
                json!({ "path": e.path, "change_id": e.change_id, "note": e.note, "diff": body }),
            );
        } else {
            text.push_str(&colorize(&body, out.color));
        }
    }
    if out.json {
        return out.print_json(&json!({ "window_id": window, "files": files }));
    }
    out.print(&text);
}

fn unified(e: &DiffEntry) -> String {
    let a_name = if e.before.is_some() {
        format!("a/{}", e.path)
    } else {
        "/dev/null".into()
    };
    let b_name = if e.after.is_some() {
        format!("b/{}", e.path)
    } else {
        "/dev/null".into()
    };
    if let Some(note) = &e.note {
        return format!("--- {a_name}\n+++ {b_name}\n# {note}\n");
    }
    let before = e.before.as_deref().unwrap_or_default();
    let after = e.after.as_deref().unwrap_or_default();
    match (std::str::from_utf8(before), std::str::from_utf8(after)) {
        (Ok(a), Ok(b)) if !before.contains(&0) && !after.contains(&0) => {
            similar::TextDiff::from_lines(a, b)
                .unified_diff()
                .context_radius(3)
                .header(&a_name, &b_name)
                .to_string()
        }
        _ if before == after => String::new(),
        _ => format!("Binary files {a_name} and {b_name} differ\n"),
    }
}

fn colorize(diff: &str, color: bool) -> String {
    if !color {
        return diff.to_string();
    }
    diff.lines()
        .map(|l| {
            let code = if l.starts_with("+++") || l.starts_with("---") {
                "1"
            } else if l.starts_with('+') {
                "32"
            } else if l.starts_with('-') {
                "31"
            } else if l.starts_with("@@") {
                "36"
            } else {
                ""
            };
            if code.is_empty() {
                format!("{l}\n")
            } else {
                format!("\x1b[{code}m{l}\x1b[0m\n")
            }
        })
        .collect()
}

pub fn restore(out: &Out, r: &RestoreReport) {
    if out.json {
        return out.print_json(&serde_json::to_value(r).unwrap_or_default());
    }
    out.print(&format!(
        "restored {} to {} (was {}; recorded as window {}, `rewind undo` reverses it)\n",
        r.path,
        short(&r.restored),
        short(&r.previous),
        r.window_id
    ));
}

pub fn verify(out: &Out, r: &VerifyReport) {
    if out.json {
        return out.print_json(&serde_json::to_value(r).unwrap_or_default());
    }
    let mut text = format!(
        "{} blobs ({} bytes, {} stored; {} inline, {} in {} pack files, {} object files), {} references\n",
        r.blobs,
        r.blob_bytes,
        r.stored_bytes,
        r.inline_blobs,
        r.packed_blobs,
        r.pack_files,
        r.object_files,
        r.references
    );
    if r.orphan_files > 0 {
        text.push_str(&format!(
            "{} orphan object or pack files (gc removes them)\n",
            r.orphan_files
        ));
    }
    for p in &r.problems {
        text.push_str(&format!("damaged: {}: {}\n", p.object, p.detail));
    }
    text.push_str(if r.ok { "ok\n" } else { "verify FAILED\n" });
    out.print(&text);
}

pub fn gc(out: &Out, r: &GcReport) {
    if out.json {
        return out.print_json(&serde_json::to_value(r).unwrap_or_default());
    }
    out.print(&format!(
        "removed {} windows, {} blobs ({} bytes), {} orphan files; rewrote {} pack files ({} bytes freed); {} unreferenced blobs kept within the grace period\n",
        r.windows_removed,
        r.blobs_removed,
        r.bytes_freed,
        r.orphan_files_removed,
        r.packs_rewritten,
        r.pack_bytes_freed,
        r.blobs_kept_in_grace
    ));
}
