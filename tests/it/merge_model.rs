//! Model test of merge-undo (issue 27): random agent windows and user edits of one file,
//! each rewriting one line to a value never seen before, then merge-undos of random windows
//! and redos, against an in-memory model of the three-way result: a window's undo sets its
//! line back unless an edit since then changed that line or a line next to it (then it is
//! refused as `overlap` and writes nothing). Invariants: every successful undo or redo gives
//! the model's bytes; undo ∘ redo = identity; a refusal writes nothing.

use proptest::prelude::*;
use rewind::engine::{Home, Options};
use rewind::ids::WindowId;
use rewind::model::ToolCall;
use rewind::undo::{self, Conflict, Direction, Request, Status, Target};
use rewind::workspace::Workspace;

const LINES: usize = 12;

#[derive(Debug, Clone)]
enum Op {
    /// An agent window rewriting this line.
    Agent(usize),
    /// The user rewriting this line behind the agent's back.
    User(usize),
    /// Undo the agent window with this index (modulo how many there are).
    Undo(usize),
    Redo,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..LINES).prop_map(Op::Agent),
        1 => (0..LINES).prop_map(Op::User),
        3 => any::<usize>().prop_map(Op::Undo),
        2 => Just(Op::Redo),
    ]
}

/// An agent window: the line it changed and the file before and after it.
#[derive(Clone)]
struct Window {
    id: WindowId,
    line: usize,
    before: Vec<String>,
    after: Vec<String>,
}

/// The model's three-way merge of one window's one-line change: `from` is what the change
/// left, `to` what the undo (or redo) wants. `None`: an edit since touches the line.
fn model_merge(now: &[String], from: &[String], to: &[String], line: usize) -> Option<Vec<String>> {
    let changed = |i: Option<usize>| i.is_some_and(|i| i < LINES && now[i] != from[i]);
    let (above, below) = (changed(line.checked_sub(1)), changed(Some(line + 1)));
    if above || below {
        return None;
    }
    // The line itself changed since: refused, unless to exactly what the undo wants (both
    // sides made the same change, taken once).
    if changed(Some(line)) && now[line] != to[line] {
        return None;
    }
    let mut out = now.to_vec();
    out[line] = to[line].clone();
    Some(out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, .. ProptestConfig::default() })]
    #[test]
    fn merge_undo_and_redo_follow_the_three_way_model(ops in proptest::collection::vec(op(), 1..24)) {
        let dir = tempfile::tempdir().unwrap();
        let ws_dir = dir.path().join("ws");
        std::fs::create_dir(&ws_dir).unwrap();
        let home = Home::open(&dir.path().join("home"), Options::default()).unwrap();
        let file = ws_dir.join("f");
        let write = |lines: &[String]| std::fs::write(&file, lines.concat()).unwrap();
        let read = || String::from_utf8(std::fs::read(&file).unwrap()).unwrap();
        let mut now: Vec<String> = (0..LINES).map(|i| format!("line {i}\n")).collect();
        write(&now);
        let mut fresh = 0;
        let mut value = |line: usize| { fresh += 1; format!("line {line} v{fresh}\n") };
        let mut windows: Vec<Window> = Vec::new();
        // Undone windows (indices into `windows`), most recent last: what redo takes.
        let mut undone: Vec<usize> = Vec::new();
        let req = |direction, target| Request {
            direction, target, paths: vec![], cwd: ws_dir.clone(), dry_run: false,
            later_edits: rewind::undo::LaterEdits::Merge, on_conflict: rewind::undo::OnConflict::RefuseAll, picks: None,
        };
        for op in ops {
            let s = home.session(Workspace::open(&ws_dir).unwrap(), "model").unwrap();
            match op {
                Op::Agent(line) => {
                    let before = now.clone();
                    let id = s.open_window(None).unwrap();
                    s.snap(std::slice::from_ref(&file), &ws_dir, ToolCall::new(Some("Write"), None)).unwrap();
                    now[line] = value(line);
                    write(&now);
                    s.record(std::slice::from_ref(&file), &ws_dir, ToolCall::new(Some("Write"), None), &[]).unwrap();
                    s.close_window().unwrap();
                    windows.push(Window { id, line, before, after: now.clone() });
                }
                Op::User(line) => {
                    now[line] = value(line);
                    write(&now);
                }
                Op::Undo(k) if !windows.is_empty() => {
                    let i = k % windows.len();
                    let w = windows[i].clone();
                    let r = undo::run(&s, &req(Direction::Undo, Target::Window(w.id))).unwrap();
                    if undone.contains(&i) {
                        prop_assert_eq!(r.status, Status::Nothing, "window {} is undone already", w.id);
                        continue;
                    }
                    match model_merge(&now, &w.after, &w.before, w.line) {
                        Some(merged) => {
                            prop_assert_eq!(r.status, Status::Undone, "{:?}", r);
                            now = merged;
                            undone.push(i);
                        }
                        None => {
                            prop_assert_eq!(r.status, Status::Conflict, "{:?}", r);
                            prop_assert_eq!(r.files[0].conflict, Some(Conflict::Overlap));
                        }
                    }
                    prop_assert_eq!(read(), now.concat(), "after the undo of window {}", w.id);
                    // Undo ∘ redo = identity, checked right away half of the time.
                    if r.status == Status::Undone && k % 2 == 0 {
                        let before_undo = model_merge(&now, &w.before, &w.after, w.line);
                        let r = undo::run(&s, &req(Direction::Redo, Target::Latest)).unwrap();
                        prop_assert_eq!(r.status, Status::Redone, "{:?}", r);
                        now = before_undo.expect("a redo right after its undo merges");
                        undone.pop();
                        prop_assert_eq!(read(), now.concat(), "undo then redo of window {}", w.id);
                    }
                }
                Op::Undo(_) => {}
                Op::Redo => {
                    let r = undo::run(&s, &req(Direction::Redo, Target::Latest)).unwrap();
                    let Some(&i) = undone.last() else {
                        prop_assert_eq!(r.status, Status::Nothing);
                        continue;
                    };
                    let w = &windows[i];
                    match model_merge(&now, &w.before, &w.after, w.line) {
                        Some(merged) => {
                            prop_assert_eq!(r.status, Status::Redone, "{:?}", r);
                            now = merged;
                            undone.pop();
                        }
                        None => prop_assert_eq!(r.status, Status::Conflict, "{:?}", r),
                    }
                    prop_assert_eq!(read(), now.concat(), "after the redo of window {}", w.id);
                }
            }
        }
        prop_assert!(rewind::engine::maintenance::verify(&home).unwrap().ok);
    }
}
