//! `undo --patch` / `redo --patch` through a real pseudo-terminal: keys typed as a person
//! types them (a line each, as git reads them), the files checked byte for byte after, and
//! `rewind redo` bringing back what was undone.

use std::io::{Read, Write};
use std::process::Child;
use std::time::{Duration, Instant};

use crate::common::Env;

/// A child on a pseudo-terminal: what it printed, once it ends.
struct OnPty {
    child: Child,
    output: std::sync::mpsc::Receiver<Vec<u8>>,
}

/// Runs `rewind ARGS` with a pseudo-terminal as stdin, stdout and stderr, and `keys` typed
/// ahead (the terminal's line discipline hands them over a line per read).
fn on_pty(env: &Env, args: &[&str], keys: &str, extra_env: &[(&str, &str)]) -> OnPty {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("a pty");
    grantpt(&master).expect("grantpt");
    unlockpt(&master).expect("unlockpt");
    let name = ptsname(&master, Vec::new()).expect("ptsname");
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name.to_str().expect("a UTF-8 pty name"))
        .expect("the pty's slave");
    let mut cmd = env.command(args);
    cmd.stdin(slave.try_clone().expect("dup"))
        .stdout(slave.try_clone().expect("dup"))
        .stderr(slave);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("spawn rewind");
    // The parent's copies of the slave are gone with `cmd`: the master reads end (EIO)
    // once the child exits.
    drop(cmd);
    let mut master = std::fs::File::from(master);
    master.write_all(keys.as_bytes()).expect("type the keys");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match master.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
        let _ = tx.send(all);
    });
    OnPty { child, output: rx }
}

impl OnPty {
    /// The exit code and the printed text (`\r\n` as `\n`), within a minute.
    fn finish(mut self) -> (i32, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let seen = self
                    .output
                    .recv_timeout(Duration::from_secs(5))
                    .unwrap_or_default();
                panic!(
                    "--patch still waiting after a minute; it printed:\n{}",
                    String::from_utf8_lossy(&seen)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let out = self
            .output
            .recv_timeout(Duration::from_secs(30))
            .expect("the pty's output");
        let text = String::from_utf8_lossy(&out).replace("\r\n", "\n");
        (status.code().unwrap_or(-1), text)
    }
}

fn numbered(n: usize, edits: &[(usize, &str)]) -> String {
    (1..=n)
        .map(|i| match edits.iter().find(|(at, _)| *at == i) {
            Some((_, t)) => format!("{t}\n"),
            None => format!("line {i}\n"),
        })
        .collect()
}

/// One agent turn: a.txt edited twice (hunks at lines 2 and 15 of its net change), b.txt
/// created, c.txt with one hunk of two changes three lines apart. Returns the turn's afters.
fn turn(env: &Env) -> [String; 3] {
    env.write("a.txt", numbered(20, &[]));
    env.write("c.txt", numbered(10, &[]));
    env.run(&["snap", "a.txt", "c.txt"]).ok();
    env.run(&["record", "a.txt", "c.txt"]).ok();
    env.run(&["window", "open", "--label", "turn"]).ok();
    env.agent_write("a.txt", numbered(20, &[(2, "two")]));
    let a = numbered(20, &[(2, "two"), (15, "fifteen")]);
    env.agent_write("a.txt", &a);
    let b = "new file\n".to_string();
    env.agent_write("b.txt", &b);
    let c = numbered(10, &[(3, "three"), (6, "six")]);
    env.agent_write("c.txt", &c);
    env.run(&["window", "close"]).ok();
    [a, b, c]
}

fn text(env: &Env, rel: &str) -> Option<String> {
    env.read(rel).map(|b| String::from_utf8(b).expect("text"))
}

#[test]
fn undo_patch_undoes_the_chosen_hunks_keeps_a_later_edit_and_redo_brings_them_back() {
    let env = Env::new();
    let [_, b, c] = turn(&env);
    // The user's own edit after the turn, away from the agent's lines: kept by the merge.
    let mine = numbered(20, &[(2, "two"), (9, "mine"), (15, "fifteen")]);
    env.write("a.txt", &mine);
    // a.txt: undo hunk 1, keep hunk 2; b.txt: keep; c.txt: split, undo the first part only.
    let keys = "y\nn\nn\ns\ny\nn\n";
    let (code, shown) = on_pty(&env, &["undo", "--patch"], keys, &[("NO_COLOR", "1")]).finish();
    assert_eq!(code, 0, "{shown}");
    assert!(!shown.contains('\x1b'), "NO_COLOR, yet colored:\n{shown}");
    assert!(
        shown.contains("(1/2) Undo this hunk [y,n,q,a,d,e,?]? "),
        "{shown}"
    );
    assert!(
        shown.contains("Undo this creation [y,n,q,a,d,?]? "),
        "{shown}"
    );
    assert!(shown.contains("Split into 2 hunks."), "{shown}");
    assert!(shown.contains("-line 2\n+two\n"), "{shown}");
    assert_eq!(
        text(&env, "a.txt").as_deref(),
        Some(numbered(20, &[(9, "mine"), (15, "fifteen")]).as_str())
    );
    assert_eq!(text(&env, "b.txt"), Some(b.clone()));
    assert_eq!(
        text(&env, "c.txt").as_deref(),
        Some(numbered(10, &[(6, "six")]).as_str())
    );
    // `rewind redo` takes the whole choice back, byte for byte (the later edit stays).
    env.run(&["redo"]).ok();
    assert_eq!(text(&env, "a.txt"), Some(mine));
    assert_eq!(text(&env, "b.txt"), Some(b));
    assert_eq!(text(&env, "c.txt"), Some(c));
}

#[test]
fn undo_patch_with_nothing_chosen_writes_nothing_and_says_so() {
    let env = Env::new();
    let [a, b, c] = turn(&env);
    let (code, shown) = on_pty(&env, &["undo", "--patch"], "n\nd\nq\n", &[]).finish();
    assert_eq!(code, 4, "{shown}");
    assert!(
        shown.contains("nothing chosen: nothing was written (no undo)"),
        "{shown}"
    );
    assert_eq!(
        [
            text(&env, "a.txt"),
            text(&env, "b.txt"),
            text(&env, "c.txt")
        ],
        [Some(a), Some(b), Some(c)]
    );
}

#[test]
fn undo_patch_refuses_over_a_later_edit_of_a_chosen_hunk_and_writes_nothing() {
    let env = Env::new();
    let [_, b, c] = turn(&env);
    // The user rewrote the agent's line 2 after the turn: undoing that hunk would lose it.
    let mine = numbered(20, &[(2, "my two"), (15, "fifteen")]);
    env.write("a.txt", &mine);
    // Undo everything offered in a.txt and b.txt, all of c.txt.
    let (code, shown) = on_pty(&env, &["undo", "--patch"], "y\nn\ny\na\n", &[]).finish();
    assert_eq!(code, 3, "{shown}");
    assert!(shown.contains("refused: nothing was written"), "{shown}");
    assert!(shown.contains("[overlap]"), "{shown}");
    assert_eq!(
        [
            text(&env, "a.txt"),
            text(&env, "b.txt"),
            text(&env, "c.txt")
        ],
        [Some(mine), Some(b), Some(c)]
    );
}

#[test]
fn every_hunk_chosen_is_the_plain_undo_and_an_edited_hunk_is_written_as_edited() {
    let env = Env::new();
    let [a, b, c] = turn(&env);
    // `a` on every file: the same as `rewind undo`, a plain undo window.
    let (code, shown) = on_pty(&env, &["undo", "--patch"], "a\ny\na\n", &[]).finish();
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains("undid window 2 (recorded as window 3)"),
        "{shown}"
    );
    assert_eq!(
        [
            text(&env, "a.txt"),
            text(&env, "b.txt"),
            text(&env, "c.txt")
        ],
        [Some(numbered(20, &[])), None, Some(numbered(10, &[]))]
    );
    env.run(&["redo"]).ok();
    assert_eq!(text(&env, "a.txt"), Some(a));
    // `e`: the editor (a script here) turns the undo of a.txt's first hunk into "TWO".
    let editor = env.path("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/^+line 2$/+TWO/' \"$1\"\n").expect("write");
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let editor = editor.display().to_string();
    let (code, shown) = on_pty(
        &env,
        &["undo", "--patch", "--path", "a.txt"],
        "e\nn\n",
        &[("VISUAL", ""), ("EDITOR", &editor)],
    )
    .finish();
    assert_eq!(code, 0, "{shown}");
    assert_eq!(
        text(&env, "a.txt").as_deref(),
        Some(numbered(20, &[(2, "TWO"), (15, "fifteen")]).as_str())
    );
    assert_eq!(
        (text(&env, "b.txt"), text(&env, "c.txt")),
        (Some(b), Some(c))
    );
}

#[test]
fn restore_patch_takes_the_chosen_hunks_of_a_version_and_undo_reverses_it() {
    let env = Env::new();
    let [a, _, _] = turn(&env);
    // Version 1 of a.txt is the file before the turn: take back its line 2 only.
    let (code, shown) = on_pty(
        &env,
        &["restore", "a.txt", "--version", "1", "--patch"],
        "y\nn\n",
        &[("NO_COLOR", "1")],
    )
    .finish();
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("(1/2) Restore this hunk"), "{shown}");
    assert!(
        shown.contains("restored the chosen hunks of a.txt"),
        "{shown}"
    );
    assert_eq!(
        text(&env, "a.txt").as_deref(),
        Some(numbered(20, &[(15, "fifteen")]).as_str())
    );
    env.run(&["undo"]).ok();
    assert_eq!(text(&env, "a.txt"), Some(a));
}

#[test]
fn restore_patch_refuses_when_the_file_changed_while_choosing() {
    let env = Env::new();
    turn(&env);
    // The "editor" of `e` is where the file changes behind the person's back.
    let editor = env.path("editor.sh");
    let script = format!(
        "#!/bin/sh\nprintf 'meanwhile\\n' > '{}'\n",
        env.path("a.txt").display()
    );
    std::fs::write(&editor, script).expect("write");
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let editor = editor.display().to_string();
    let (code, shown) = on_pty(
        &env,
        &["restore", "a.txt", "--version", "1", "--patch"],
        "e\nn\n",
        &[("VISUAL", ""), ("EDITOR", &editor), ("NO_COLOR", "1")],
    )
    .finish();
    assert_eq!(code, 3, "{shown}");
    assert!(
        shown.contains(
            "error: a.txt changed since its hunks were shown; nothing was written\nhint: run it again to see the file as it is now"
        ),
        "{shown}"
    );
    assert_eq!(text(&env, "a.txt").as_deref(), Some("meanwhile\n"));
}

#[test]
fn redo_patch_reapplies_only_the_chosen_hunks_of_an_undone_turn() {
    let env = Env::new();
    let [_, b, _] = turn(&env);
    env.run(&["undo"]).ok();
    assert_eq!(text(&env, "b.txt"), None);
    // a.txt: redo hunk 1 only; b.txt: recreate it; c.txt: leave it undone.
    let (code, shown) = on_pty(&env, &["redo", "--patch"], "y\nn\ny\nn\n", &[]).finish();
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("(1/2) Redo this hunk"), "{shown}");
    assert_eq!(
        text(&env, "a.txt").as_deref(),
        Some(numbered(20, &[(2, "two")]).as_str())
    );
    assert_eq!(text(&env, "b.txt"), Some(b));
    assert_eq!(
        text(&env, "c.txt").as_deref(),
        Some(numbered(10, &[]).as_str())
    );
}
