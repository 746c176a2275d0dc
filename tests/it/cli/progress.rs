//! Progress bars: drawn on stderr when it is a terminal (here a pseudo-terminal from
//! util-linux `script`), never otherwise, so agents, scripts and `--json` readers see none.

use crate::common::{Env, Run};

/// `rewind ARGS` with its stdout and stderr on a pseudo-terminal; what the terminal showed.
#[cfg(target_os = "linux")]
fn on_terminal(env: &Env, args: &str) -> Run {
    let line = format!("{} {args}", env!("CARGO_BIN_EXE_rewind"));
    env.command_of(
        std::path::Path::new("script"),
        &["-qec", &line, "/dev/null"],
    )
    .output()
    .unwrap()
    .into()
}

/// Two versions of a few files: blobs to verify, and old ones for gc to delete.
fn history(env: &Env) {
    for i in 0..5 {
        env.agent_write(&format!("f{i}.txt"), format!("one {i}\n"));
        env.agent_write(&format!("f{i}.txt"), format!("two {i}\n"));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn verify_and_gc_draw_a_progress_bar_on_a_terminal() {
    let env = Env::new();
    history(&env);
    let run = on_terminal(&env, "verify");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("rewind: verifying blobs ["),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("ok"), "{}", run.stdout);
    let run = on_terminal(&env, "gc --keep-windows 0 --grace-seconds 0");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("rewind: deleting unreferenced blobs ["),
        "{}",
        run.stdout
    );
}

#[test]
fn verify_and_gc_draw_nothing_when_stderr_is_not_a_terminal() {
    let env = Env::new();
    history(&env);
    let run = env.run(&["verify"]);
    run.ok();
    assert_eq!(run.stderr, "");
    let run = env.run(&[
        "--json",
        "gc",
        "--keep-windows",
        "0",
        "--grace-seconds",
        "0",
    ]);
    run.ok();
    assert_eq!(run.stderr, "");
    assert!(
        run.json()["blobs_removed"].as_u64().unwrap() > 0,
        "{}",
        run.stdout
    );
}
