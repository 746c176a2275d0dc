//! Model-based property test: random writes, undos and redos against an in-memory model of
//! what every file must contain (undo ∘ redo = identity; nothing but targeted paths change).

use std::collections::BTreeMap;

use proptest::prelude::*;
use rewind::engine::{Home, Options};
use rewind::undo::{self, Direction, Request, Status, Target};
use rewind::workspace::Workspace;

#[derive(Debug, Clone)]
enum Op {
    /// An agent turn writing (Some) or deleting (None) some of the files.
    Turn(Vec<(usize, Option<u8>)>),
    Undo,
    Redo,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => proptest::collection::vec((0usize..4, proptest::option::of(any::<u8>())), 1..3).prop_map(Op::Turn),
        2 => Just(Op::Undo),
        1 => Just(Op::Redo),
    ]
}

type Files = BTreeMap<usize, Option<Vec<u8>>>;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, .. ProptestConfig::default() })]
    #[test]
    fn undo_and_redo_follow_the_model(ops in proptest::collection::vec(op(), 1..14)) {
        let dir = tempfile::tempdir().unwrap();
        let ws_dir = dir.path().join("ws");
        std::fs::create_dir(&ws_dir).unwrap();
        let home = Home::open(&dir.path().join("home"), Options::default()).unwrap();
        let s = home.session(Workspace::open(&ws_dir).unwrap(), "model").unwrap();
        let path = |i: usize| ws_dir.join(format!("f{i}"));
        let read = || -> Files { (0..4).map(|i| (i, std::fs::read(path(i)).ok())).collect() };
        // Model: a stack of applied turns (before/after of each file), and a redo stack.
        // `done` is kept in turn order: undo's default target is the newest agent window in
        // effect, even when an older one was redone more recently.
        let mut done: Vec<(usize, Files, Files)> = Vec::new();
        let mut undone: Vec<(usize, Files, Files)> = Vec::new();
        let mut turns = 0;
        let req = |direction| Request { direction, target: Target::Latest, paths: vec![], cwd: ws_dir.clone(), dry_run: false, force: false };
        for op in ops {
            match op {
                Op::Turn(writes) => {
                    let before = read();
                    s.open_window(None).unwrap();
                    let paths: Vec<_> = writes.iter().map(|(i, _)| path(*i)).collect();
                    s.snap(&paths, &ws_dir, Some("Write"), None).unwrap();
                    for (i, content) in &writes {
                        match content {
                            Some(b) => std::fs::write(path(*i), [*b; 3]).unwrap(),
                            None => { let _ = std::fs::remove_file(path(*i)); }
                        }
                    }
                    s.record(&paths, &ws_dir, Some("Write"), None, &[]).unwrap();
                    s.close_window().unwrap();
                    turns += 1;
                    done.push((turns, before, read()));
                    // A new turn does not clear the redo stack in rewind, but redoing an undo
                    // whose paths were touched since would conflict; keep the model simple by
                    // forgetting redos that the new turn touched.
                    let touched: Vec<usize> = writes.iter().map(|(i, _)| *i).collect();
                    undone.retain(|(_, b, a)| touched.iter().all(|t| b.get(t) == a.get(t)));
                }
                Op::Undo => {
                    let r = undo::run(&s, &req(Direction::Undo)).unwrap();
                    // Turns that changed nothing still have changes (same before/after):
                    // rewind undoes them too, as no-ops.
                    match done.pop() {
                        Some((turn, before, after)) => {
                            prop_assert!(matches!(r.status, Status::Undone), "{:?}", r);
                            let now = read();
                            for i in 0..4 {
                                if before.get(&i) != after.get(&i) {
                                    prop_assert_eq!(now.get(&i), before.get(&i), "file {} after undo", i);
                                }
                            }
                            undone.push((turn, before, after));
                        }
                        None => prop_assert_eq!(r.status, Status::Nothing),
                    }
                }
                Op::Redo => {
                    let before_redo = read();
                    let r = undo::run(&s, &req(Direction::Redo)).unwrap();
                    match r.status {
                        Status::Redone => {
                            let (turn, b, a) = undone.pop().expect("rewind redid something the model had not undone");
                            let now = read();
                            for i in 0..4 {
                                if b.get(&i) != a.get(&i) {
                                    prop_assert_eq!(now.get(&i), a.get(&i));
                                } else {
                                    prop_assert_eq!(now.get(&i), before_redo.get(&i), "untargeted file {} changed", i);
                                }
                            }
                            done.push((turn, b, a));
                            done.sort_by_key(|(t, _, _)| *t);
                        }
                        Status::Nothing => prop_assert!(undone.is_empty() || r.files.is_empty()),
                        Status::Conflict => prop_assert_eq!(read(), before_redo, "a refused redo wrote something"),
                        other => prop_assert!(false, "unexpected {:?}", other),
                    }
                }
            }
        }
        prop_assert!(home.verify().unwrap().ok);
    }
}
