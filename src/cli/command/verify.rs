//! `rewind verify`: re-hash every stored object and check every index reference; exit 1
//! naming each damaged object.

use rewind::engine::maintenance::VerifyReport;

use crate::cli::context::Invocation;
use crate::cli::exit::{Exit, Failure};
use crate::cli::progress::Bars;
use crate::cli::render::Out;

pub fn run(inv: &Invocation, out: &Out) -> Result<Exit, Failure> {
    let mut bars = Bars::on_stderr();
    let report = rewind::engine::maintenance::verify_with(inv.home()?, &mut bars)?;
    drop(bars);
    if out.json {
        out.print_json(&report);
    } else {
        out.print(&render(&report));
    }
    Ok(if report.ok { Exit::Ok } else { Exit::Error })
}

fn render(r: &VerifyReport) -> String {
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
    text.push_str(&format!(
        "index {} bytes ({} free)\n",
        r.index_bytes, r.index_free_bytes
    ));
    if r.git_blobs > 0 {
        text.push_str(&format!(
            "{} of them kept by reference to git's objects (committed files of a first baseline: read from git and verified, copied into the home before a change rewind sees)\n",
            r.git_blobs
        ));
    }
    if r.orphan_files > 0 {
        text.push_str(&format!(
            "{} orphan object or pack files (gc removes them)\n",
            r.orphan_files
        ));
    }
    for p in &r.problems {
        text.push_str(&format!("damaged: {}: {}\n", p.object, p.detail));
    }
    if r.problems
        .iter()
        .any(|p| p.detail.ends_with("which git no longer has"))
    {
        text.push_str("hint: git no longer has an object rewind kept a version by (a `git gc --prune` after it became unreachable, or a removed repository); it cannot be copied after the fact, so undo and restore of that version are refused\n");
    }
    text.push_str(if r.ok { "ok\n" } else { "verify FAILED\n" });
    text
}
