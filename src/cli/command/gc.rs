//! `rewind gc`: retention, then delete unreferenced blobs older than the grace period.

use std::time::Duration;

use rewind::maintenance::{GcReport, Retention, VersionRetention};
use rewind::store::HistoryReport;

use crate::cli::args::{GcArgs, Global};
use rewind::engine::Home;

use crate::cli::context::{home_dir, open_home_owned, options};
use crate::cli::exit::{Exit, Failure};
use crate::cli::progress::Bars;
use crate::cli::render::Out;

const NANOS_PER_DAY: i64 = 86_400 * 1_000_000_000;

pub fn run(g: &Global, out: &Out, args: &GcArgs) -> Result<Exit, Failure> {
    let mut home = if args.accept_index_loss {
        let mut opts = options(g);
        opts.accept_index_loss = true;
        Home::open(&home_dir(g)?, opts)?
    } else {
        open_home_owned(g)?
    };
    let now = home.now();
    let policy = Retention {
        older_than: args
            .older_than_days
            .map(|d| now - (d as i64) * NANOS_PER_DAY),
        windows_per_session: args.keep_windows,
        max_total_bytes: args.max_size,
        external_versions: Some(VersionRetention {
            keep_per_path: args.keep_versions,
            newer_than: now.saturating_sub(days_ns(args.keep_versions_days)?),
        }),
        grace: Duration::from_secs(args.grace_seconds),
    };
    let mut bars = Bars::on_stderr();
    let report = rewind::maintenance::gc_with(&mut home, &policy, &mut bars)?;
    let packed = if args.pack {
        Some(rewind::maintenance::pack_history(&mut home, &mut bars)?)
    } else {
        None
    };
    drop(bars);
    match (out.json, packed) {
        (true, None) => out.print_json(&report),
        (true, Some(history_pack)) => out.print_json(&Packed {
            gc: report,
            history_pack,
        }),
        (false, packed) => {
            out.print(&render(&report));
            if let Some(p) = packed {
                out.print(&render_pack(&p));
            }
        }
    }
    Ok(Exit::Ok)
}

/// `days` in nanoseconds; a usage error unless it is a finite number of days, zero or more.
fn days_ns(days: f64) -> Result<i64, Failure> {
    if !(days.is_finite() && days >= 0.0) {
        return Err(Failure::new(
            Exit::Usage,
            format!("--keep-versions-days takes a number of days, zero or more (not {days})"),
        ));
    }
    // Saturates at i64::MAX (about 292 years), which keeps everything.
    Ok((days * NANOS_PER_DAY as f64) as i64)
}

/// `gc --pack --json`: the gc report with the pack step's.
#[derive(serde::Serialize)]
struct Packed {
    #[serde(flatten)]
    gc: GcReport,
    history_pack: HistoryReport,
}

fn render_pack(r: &HistoryReport) -> String {
    format!(
        "packed {} blobs of history ({} as deltas) in {} batches: {} bytes stored, {} before; {} left as they were (run rewind verify)\n",
        r.blobs, r.deltas, r.batches, r.stored_after, r.stored_before, r.skipped
    )
}

fn render(r: &GcReport) -> String {
    format!(
        "removed {} windows, {} external versions, {} blobs ({} bytes), {} orphan files; rewrote {} pack files ({} bytes freed); {} unreferenced blobs kept within the grace period\n",
        r.windows_removed,
        r.versions_removed,
        r.blobs_removed,
        r.bytes_freed,
        r.orphan_files_removed,
        r.packs_rewritten,
        r.pack_bytes_freed,
        r.blobs_kept_in_grace
    )
}
