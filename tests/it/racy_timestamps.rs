//! Racy timestamps: a rewrite that leaves size, mtime, inode and mode as recorded is still
//! detected, by the read check and by the workspace scan.

use rewind::model::ToolCall;
use std::time::Duration;

use crate::common::Env;

/// Same-size rewrites with the mtime forced back to the value rewind recorded: the size,
/// mtime, inode and mode all match the file state, so only content (or ctime) can tell.
/// Both the read check and the workspace scan must see every change.
#[test]
fn rewrites_with_mtime_forced_back_to_the_recorded_value_are_always_detected() {
    use rewind::engine::{Home, Options};
    use rewind::scan::{scan, ChangeKind, Phase, ScanOptions};
    use rewind::workspace::Workspace;
    let env = Env::new();
    let home = Home::open(&env.home, Options::default()).unwrap();
    let s = home
        .session(Workspace::open(&env.ws).unwrap(), "racy")
        .unwrap();
    let other = home
        .session(Workspace::open(&env.ws).unwrap(), "never-read")
        .unwrap();
    let f = env.path("f.txt");
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    let set_mtime = || {
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(old)
            .unwrap()
    };
    std::fs::write(&f, "v0000").unwrap();
    set_mtime();
    let scan_opts = ScanOptions::default();
    scan(&s, Phase::Before, ToolCall::NONE, &scan_opts, &mut |_| {}).unwrap();
    s.check(std::slice::from_ref(&f), &env.ws, true).unwrap();
    for i in 1..=1000u32 {
        // Same size, new bytes, written in place (same inode), mtime put back.
        std::fs::write(&f, format!("v{i:04}")).unwrap();
        set_mtime();
        let r = s.check(std::slice::from_ref(&f), &env.ws, false).unwrap();
        assert!(r[0].externally_modified, "iteration {i}: check missed it");
        let scan = scan(&s, Phase::Before, ToolCall::NONE, &scan_opts, &mut |_| {}).unwrap();
        assert!(
            scan.changes
                .iter()
                .any(|c| c.path == "f.txt" && c.kind == ChangeKind::Modified),
            "iteration {i}: scan missed it: {scan:?}"
        );
        // The scan accepted the edit: the next check compares with these bytes (in a session
        // that never read the file: this one's own last read would tell it the file changed
        // since, which it did).
        let r = other
            .check(std::slice::from_ref(&f), &env.ws, false)
            .unwrap();
        assert!(
            !r[0].externally_modified,
            "iteration {i}: scan did not record it"
        );
    }
}
