//! Model-based property test: random agent turns (file tools and shell commands), edits by
//! the user, undos, redos and gc, against an in-memory model of what every file must contain
//! (undo ∘ redo = identity; nothing but targeted paths ever changes; a `--strict` undo over
//! the user's edit is refused and writes nothing; merge-undo has its model in
//! `merge_model.rs`).

use rewind::model::ToolCall;
use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use rewind::engine::maintenance::Retention;
use rewind::engine::{Home, Options, Session};
use rewind::scan::{scan, Phase, ScanOptions};
use rewind::undo::{self, Direction, Request, Status, Target};
use rewind::workspace::Workspace;

const FILES: usize = 4;

#[derive(Debug, Clone)]
enum Op {
    /// An agent turn through file tools: write (Some) or delete (None) some files.
    Turn(Vec<(usize, Option<u8>)>),
    /// The same through a shell command, captured by workspace scans.
    ShellTurn(Vec<(usize, Option<u8>)>),
    /// The user edits a file behind the agent's back (5 bytes: never equal to an agent's
    /// 3-byte version, so the model can tell).
    UserEdit(usize, u8),
    Undo,
    Redo,
    Gc,
}

fn writes() -> impl Strategy<Value = Vec<(usize, Option<u8>)>> {
    proptest::collection::vec((0..FILES, proptest::option::of(any::<u8>())), 1..3)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => writes().prop_map(Op::Turn),
        2 => writes().prop_map(Op::ShellTurn),
        1 => (0..FILES, any::<u8>()).prop_map(|(i, b)| Op::UserEdit(i, b)),
        3 => Just(Op::Undo),
        2 => Just(Op::Redo),
        1 => Just(Op::Gc),
    ]
}

type Files = BTreeMap<usize, Option<Vec<u8>>>;

struct Turn {
    number: usize,
    before: Files,
    after: Files,
    /// Paths rewind recorded a change for: every path a file tool was called on (even when
    /// the write changed nothing), every path a scan saw change.
    touched: Vec<usize>,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, .. ProptestConfig::default() })]
    #[test]
    fn undo_and_redo_follow_the_model(ops in proptest::collection::vec(op(), 1..16)) {
        let dir = tempfile::tempdir().unwrap();
        let ws_dir = dir.path().join("ws");
        std::fs::create_dir(&ws_dir).unwrap();
        let mut home = Home::open(&dir.path().join("home"), Options::default()).unwrap();
        let path = |i: usize| ws_dir.join(format!("f{i}"));
        let read = || -> Files { (0..FILES).map(|i| (i, std::fs::read(path(i)).ok())).collect() };
        fn session<'h>(home: &'h Home, ws: &std::path::Path) -> Session<'h> {
            home.session(Workspace::open(ws).unwrap(), "model").unwrap()
        }
        let req = |direction| Request {
            direction, target: Target::Latest, paths: vec![], cwd: ws_dir.clone(), dry_run: false, later_edits: rewind::undo::LaterEdits::Refuse, on_conflict: rewind::undo::OnConflict::RefuseAll, picks: None,
        };
        let apply_writes = |writes: &[(usize, Option<u8>)]| {
            for (i, content) in writes {
                match content {
                    Some(b) => std::fs::write(path(*i), [*b; 3]).unwrap(),
                    None => { let _ = std::fs::remove_file(path(*i)); }
                }
            }
        };
        // `done` in turn order: undo's default target is the newest agent window in effect,
        // even when an older one was redone more recently. `undone` is a stack.
        let mut done: Vec<Turn> = Vec::new();
        let mut undone: Vec<Turn> = Vec::new();
        let mut turns = 0;
        for op in ops {
            let shell = matches!(op, Op::ShellTurn(_));
            match op {
                Op::Turn(w) | Op::ShellTurn(w) => {
                    let s = session(&home, &ws_dir);
                    let before = read();
                    s.open_window(None).unwrap();
                    if shell {
                        scan(&s, Phase::Before, ToolCall::new(Some("Bash"), Some("sh")), &ScanOptions::default(), &mut |_| {}).unwrap();
                        apply_writes(&w);
                        scan(&s, Phase::After, ToolCall::new(Some("Bash"), Some("sh")), &ScanOptions::default(), &mut |_| {}).unwrap();
                    } else {
                        let paths: Vec<_> = w.iter().map(|(i, _)| path(*i)).collect();
                        s.snap(&paths, &ws_dir, ToolCall::new(Some("Write"), None)).unwrap();
                        apply_writes(&w);
                        s.record(&paths, &ws_dir, ToolCall::new(Some("Write"), None), &[]).unwrap();
                    }
                    s.close_window().unwrap();
                    let after = read();
                    turns += 1;
                    let mut touched: Vec<usize> = if shell {
                        (0..FILES).filter(|i| before.get(i) != after.get(i)).collect()
                    } else {
                        w.iter().map(|(i, _)| *i).collect()
                    };
                    touched.sort();
                    touched.dedup();
                    // A redo over paths a newer turn touched is refused (later-change): the
                    // model forgets those redos.
                    undone.retain(|t| touched.iter().all(|i| !t.touched.contains(i)));
                    // A shell turn that changed nothing records nothing: not an undo target.
                    if !touched.is_empty() {
                        done.push(Turn { number: turns, before, after, touched });
                    }
                }
                Op::UserEdit(i, b) => std::fs::write(path(i), [b; 5]).unwrap(),
                Op::Undo => {
                    let s = session(&home, &ws_dir);
                    let now = read();
                    let r = undo::run(&s, &req(Direction::Undo)).unwrap();
                    match done.last() {
                        None => prop_assert_eq!(r.status, Status::Nothing),
                        Some(turn) if turn.touched.iter().any(|i| now.get(i) != turn.after.get(i)) => {
                            prop_assert_eq!(r.status, Status::Conflict, "undo over the user's edit: {:?}", r);
                            prop_assert_eq!(read(), now, "a refused undo wrote something");
                        }
                        Some(_) => {
                            prop_assert_eq!(r.status, Status::Undone, "{:?}", r);
                            let turn = done.pop().unwrap();
                            let after_undo = read();
                            for i in 0..FILES {
                                let expect = if turn.touched.contains(&i) { turn.before.get(&i) } else { now.get(&i) };
                                prop_assert_eq!(after_undo.get(&i), expect, "file {} after undo of turn {}", i, turn.number);
                            }
                            undone.push(turn);
                        }
                    }
                }
                Op::Redo => {
                    let s = session(&home, &ws_dir);
                    let now = read();
                    let r = undo::run(&s, &req(Direction::Redo)).unwrap();
                    match r.status {
                        Status::Redone => {
                            let turn = undone.pop().expect("rewind redid something the model had not undone");
                            let after_redo = read();
                            for i in 0..FILES {
                                let expect = if turn.touched.contains(&i) { turn.after.get(&i) } else { now.get(&i) };
                                prop_assert_eq!(after_redo.get(&i), expect, "file {} after redo of turn {}", i, turn.number);
                            }
                            done.push(turn);
                            done.sort_by_key(|t| t.number);
                        }
                        Status::Nothing => prop_assert!(undone.is_empty(), "nothing to redo, but the model has {}", undone.len()),
                        Status::Conflict => prop_assert_eq!(read(), now, "a refused redo wrote something"),
                        other => prop_assert!(false, "unexpected {:?}", other),
                    }
                }
                Op::Gc => {
                    let report = rewind::engine::maintenance::gc(&mut home, &Retention { grace: Duration::ZERO, ..Retention::default() }).unwrap();
                    prop_assert_eq!(report.windows_removed, 0);
                }
            }
            prop_assert!(rewind::engine::maintenance::verify(&home).unwrap().ok);
        }
    }
}
