//! Refused edits leave a record (issue 29): each refusal of `edit`/`write` (CLI and MCP) and
//! each read-before-write denial by a hook is noted with time, session, path, kind and tool,
//! never content, and `rewind log --refusals` lists them newest first. The refusal itself is
//! answered exactly as before.

use serde_json::Value;

use rewind::ids::SessionRowId;
use rewind::index::KEEP_REFUSALS;
use rewind::model::RefusalKind;
use rewind::workspace::RelPath;

use crate::common::{index, index_file, workspace_id, Env};
use crate::hooks::read_then_change_then_edit;
use crate::tools::Mcp;

const FIVE: &str = "line 1\nline 2\nline 3\nline 4\nline 5\n";

fn refusals(env: &Env) -> Vec<Value> {
    let run = env.run(&["--json", "log", "--refusals"]);
    run.ok();
    run.json()["refusals"].as_array().unwrap().clone()
}

/// (kind, tool) of each refusal, oldest first.
fn kinds(env: &Env) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = refusals(env)
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["tool"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    all.reverse();
    all
}

fn token(env: &Env, rel: &str) -> String {
    let run = env.run(&["--json", "read", rel]);
    run.ok();
    run.json()["token"].as_str().unwrap().to_string()
}

#[test]
fn each_refusal_of_edit_and_write_is_recorded_with_its_kind() {
    let env = Env::new();
    env.write("f.txt", FIVE);
    let good = token(&env, "f.txt");
    let stale = "blake3:0123456789abcdef0123456789abcdef";
    let replace_2 = r#"[{"op":"replace","start":2,"end":2,"expected":"line 2","content":"TWO"}]"#;
    let wrong_expected =
        r#"[{"op":"replace","start":2,"end":2,"expected":"not line 2","content":"TWO"}]"#;
    let overlap = r#"[{"op":"replace","start":2,"end":3,"expected":"line 2\nline 3","content":"x"},{"op":"delete","start":3,"end":3,"expected":"line 3"}]"#;
    let past_end = r#"[{"op":"delete","start":9,"end":9,"expected":"line 9"}]"#;
    let edits: [(Option<&str>, &str, i32); 6] = [
        (None, replace_2, 3),
        (Some("nope"), replace_2, 3),
        (Some(stale), replace_2, 3),
        (Some(&good), wrong_expected, 3),
        (Some(&good), overlap, 3),
        (Some(&good), past_end, 3),
    ];
    for (tok, ops, _) in &edits {
        let mut args = vec!["edit", "f.txt", "--ops", "-"];
        if let Some(t) = tok {
            args.extend(["--token", t]);
        }
        let run = env.run_stdin(&args, ops.as_bytes());
        assert_ne!(run.code, 0, "{ops}: {}", run.stderr);
    }
    let no_token = env.run_stdin(&["write", "f.txt"], b"new\n");
    assert_ne!(no_token.code, 0, "{}", no_token.stderr);
    let exists = env.run_stdin(&["write", "f.txt", "--create"], b"new\n");
    assert_ne!(exists.code, 0, "{}", exists.stderr);
    assert_eq!(
        env.read("f.txt").unwrap(),
        FIVE.as_bytes(),
        "nothing written"
    );

    let want: Vec<(String, String)> = [
        ("no-token", "edit"),
        ("invalid-token", "edit"),
        ("stale-token", "edit"),
        ("expected-mismatch", "edit"),
        ("overlap", "edit"),
        ("bad-range", "edit"),
        ("no-token", "write"),
        ("exists", "write"),
    ]
    .iter()
    .map(|(k, t)| (k.to_string(), t.to_string()))
    .collect();
    assert_eq!(kinds(&env), want);
    let newest = &refusals(&env)[0];
    assert_eq!(newest["path"], "f.txt");
    assert_eq!(newest["session"], "test-session");
    assert!(newest["at"].as_str().unwrap().ends_with('Z'), "{newest}");
}

#[test]
fn a_refusal_is_answered_as_before_and_a_success_records_nothing() {
    let env = Env::new();
    env.write("f.txt", FIVE);
    let stale = "blake3:0123456789abcdef0123456789abcdef";
    let run = env.run_stdin(&["write", "f.txt", "--token", stale], b"new\n");
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("hash mismatch: the file changed since it was read — read it again"),
        "{}",
        run.stderr
    );
    let good = token(&env, "f.txt");
    env.run_stdin(&["write", "f.txt", "--token", &good], b"new\n")
        .ok();
    assert_eq!(kinds(&env), vec![("stale-token".into(), "write".into())]);
}

#[test]
fn a_stored_refusal_holds_no_file_content() {
    let env = Env::new();
    let secret = "SECRET-CONTENT-7f3a\n";
    env.write("f.txt", secret);
    let stale = "blake3:0123456789abcdef0123456789abcdef";
    env.run_stdin(&["write", "f.txt", "--token", stale], b"NEW-SECRET-91c2\n");
    let ops = r#"[{"op":"replace","start":1,"end":1,"expected":"EXPECTED-SECRET","content":"OPS-SECRET"}]"#;
    env.run_stdin(
        &["edit", "f.txt", "--token", stale, "--ops", "-"],
        ops.as_bytes(),
    );
    let db = rusqlite::Connection::open(index_file(&env)).unwrap();
    let mut st = db.prepare("SELECT * FROM refusals").unwrap();
    let columns = st.column_count();
    let rows: Vec<Vec<rusqlite::types::Value>> = st
        .query_map([], |r| (0..columns).map(|i| r.get(i)).collect())
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(rows.len(), 2);
    let names: Vec<&str> = st.column_names();
    assert_eq!(
        names,
        [
            "id",
            "workspace_id",
            "session_id",
            "path",
            "kind",
            "tool",
            "at"
        ]
    );
    for row in &rows {
        let text: Vec<u8> = row
            .iter()
            .flat_map(|v| match v {
                rusqlite::types::Value::Text(t) => t.as_bytes().to_vec(),
                rusqlite::types::Value::Blob(b) => b.clone(),
                _ => Vec::new(),
            })
            .collect();
        let text = String::from_utf8_lossy(&text);
        for content in ["SECRET", "blake3", "line"] {
            assert!(!text.contains(content), "{content} stored: {row:?}");
        }
    }
}

#[test]
fn a_hook_denial_over_a_stale_read_is_recorded() {
    let env = Env::new();
    let run = read_then_change_then_edit(&env, |e| e.write("src/lib.rs", "pub fn x() {}\n"), &[]);
    assert_eq!(
        run.json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    let all = refusals(&env);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["kind"], "stale-read");
    assert_eq!(all[0]["path"], "src/lib.rs");
    assert_eq!(all[0]["tool"], "Edit");
    assert_eq!(all[0]["session"], "8c35adc1-3f0e-4b8e-9a55-2b7c1f0d9e11");
}

/// Over MCP the ops arrive parsed, so an empty batch reaches the tool and is refused there.
#[test]
fn mcp_edit_file_refusals_are_recorded() {
    let env = Env::new();
    env.write("f.txt", FIVE);
    let good = token(&env, "f.txt");
    let mut mcp = Mcp::start(&env);
    mcp.request(
        "initialize",
        &serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
    );
    mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for token in ["nope", good.as_str()] {
        let (is_error, text) = mcp.call(
            "edit_file",
            &serde_json::json!({"path": "f.txt", "token": token, "ops": []}),
        );
        assert!(is_error, "{text}");
    }
    drop(mcp);
    assert_eq!(
        kinds(&env),
        vec![
            ("invalid-token".into(), "edit".into()),
            ("invalid-ops".into(), "edit".into())
        ]
    );
}

#[test]
fn only_the_newest_ten_thousand_refusals_are_kept() {
    let env = Env::new();
    env.write("f.txt", FIVE);
    // A refusal through the binary creates the workspace and the session.
    env.run_stdin(&["write", "f.txt"], b"x\n");
    let idx = index(&env);
    let ws = workspace_id(&env, &idx);
    let path = RelPath::from_stored(b"f.txt".to_vec()).unwrap();
    let extra = 5;
    idx.write(|tx| -> Result<(), rewind::index::IndexError> {
        let session: SessionRowId = tx.find_session(ws, "test-session")?.unwrap();
        for i in 0..KEEP_REFUSALS + extra {
            tx.record_refusal(ws, session, &path, RefusalKind::Overlap, Some("edit"), i)?;
        }
        Ok(())
    })
    .unwrap();
    let kept = idx.read().refusals(ws).unwrap();
    assert_eq!(kept.len() as i64, KEEP_REFUSALS);
    assert_eq!(kept[0].at, KEEP_REFUSALS + extra - 1, "newest first");
    assert_eq!(kept.last().unwrap().at, extra, "the oldest ones dropped");
    assert!(kept.iter().all(|r| r.kind == RefusalKind::Overlap));
}

/// The note is best effort: with the refusals table gone (the insert fails), the refusal is
/// still answered with its own message and exit code, not with an index error.
#[test]
fn a_refusal_whose_note_cannot_be_written_is_still_answered_as_before() {
    let env = Env::new();
    env.write("f.txt", FIVE);
    let _ = token(&env, "f.txt");
    rusqlite::Connection::open(index_file(&env))
        .unwrap()
        .execute_batch("DROP TABLE refusals")
        .unwrap();
    let stale = "blake3:0123456789abcdef0123456789abcdef";
    let run = env.run_stdin(&["write", "f.txt", "--token", stale], b"new\n");
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("hash mismatch: the file changed since it was read — read it again"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("index"), "{}", run.stderr);
    assert_eq!(env.read("f.txt").unwrap(), FIVE.as_bytes());
}
