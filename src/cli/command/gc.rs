//! `rewind gc`: retention, then delete unreferenced blobs older than the grace period.

use std::time::Duration;

use clap::Args;
use rewind::engine::maintenance::{GcReport, Retention, VersionRetention};
use rewind::engine::Home;
use rewind::store::HistoryReport;

use crate::cli::context::{home_dir, open_home_owned, options};
use crate::cli::exit::{Exit, Failure};
use crate::cli::options::Global;
use crate::cli::progress::Bars;
use crate::cli::render::Out;

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Drop windows older than this many days
    #[arg(long, value_name = "DAYS")]
    pub older_than_days: Option<u64>,
    /// Keep only the newest N windows per session
    #[arg(long, value_name = "N")]
    pub keep_windows: Option<usize>,
    /// Drop oldest windows until the store is under this many bytes
    #[arg(long, value_name = "BYTES")]
    pub max_size: Option<u64>,
    /// Of the versions recorded as edits outside the agents (`external`, what `rewind watch`
    /// records), keep at least the newest N of each file...
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub keep_versions: usize,
    /// ...and every one younger than this many days (fractions allowed); older ones go
    #[arg(long, value_name = "DAYS", default_value_t = 1.0)]
    pub keep_versions_days: f64,
    /// Never delete anything younger than this many seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub grace_seconds: u64,
    /// The index is lost (missing or empty) and cannot be put back: start a new, empty
    /// history, whose gc then deletes what only the lost index referenced
    #[arg(long)]
    pub accept_index_loss: bool,
    /// Then re-encode the history written one version at a time into pack files, each
    /// version a delta against the one before it at a high compression level (slow, once
    /// per version; writes stay append-only)
    #[arg(long)]
    pub pack: bool,
}

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
            .map(|d| now.saturating_sub(whole_days_ns(d))),
        windows_per_session: args.keep_windows,
        max_total_bytes: args.max_size,
        external_versions: Some(VersionRetention {
            keep_per_path: args.keep_versions,
            newer_than: now.saturating_sub(days_ns(args.keep_versions_days)?),
        }),
        grace: Duration::from_secs(args.grace_seconds),
    };
    let mut bars = Bars::on_stderr();
    let report = rewind::engine::maintenance::gc_with(&mut home, &policy, &mut bars)?;
    let packed = if args.pack {
        Some(rewind::engine::maintenance::pack_history(
            &mut home, &mut bars,
        )?)
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

/// `days` in nanoseconds, saturating at i64::MAX (about 292 years): a count of days too big
/// to subtract from now means "older than anything", never a wrapped cutoff in the future.
fn whole_days_ns(days: u64) -> i64 {
    i64::try_from(days)
        .unwrap_or(i64::MAX)
        .saturating_mul(NANOS_PER_DAY)
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
        "packed {} blobs of history ({} as deltas) in {} batches: {} bytes stored, {} before; {} left as they were (run rewind verify)\n{}",
        r.blobs,
        r.deltas,
        r.batches,
        r.stored_after,
        r.stored_before,
        r.skipped,
        compacted(r.index_bytes_freed)
    )
}

fn render(r: &GcReport) -> String {
    format!(
        "removed {} windows, {} external versions, {} blobs ({} bytes), {} orphan files; rewrote {} pack files ({} bytes freed); {} unreferenced blobs kept within the grace period\n{}",
        r.windows_removed,
        r.versions_removed,
        r.blobs_removed,
        r.bytes_freed,
        r.orphan_files_removed,
        r.packs_rewritten,
        r.pack_bytes_freed,
        r.blobs_kept_in_grace,
        compacted(r.index_bytes_freed)
    )
}

/// A line for an index that gave bytes back, none when it was left as it was.
fn compacted(freed: u64) -> String {
    match freed {
        0 => String::new(),
        n => format!("compacted the index: {n} bytes given back\n"),
    }
}
