//! Progress bars on stderr (`indicatif`), for the long library calls: a verify, a gc, a
//! hook's first baseline of a workspace. Only when stderr is a terminal: an agent capturing
//! a hook's stderr, a script, or a test gets nothing. The library only reports progress
//! (`maintenance::Progress`, the scan's callback); drawing is here.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar per phase; nothing at all when stderr is not a terminal.
pub(crate) struct Bars {
    live: bool,
    bar: Option<ProgressBar>,
}

impl Bars {
    pub(crate) fn on_stderr() -> Bars {
        Bars {
            live: std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    /// A new bar of `steps` steps labelled `what`, replacing the previous one.
    pub(crate) fn start(&mut self, what: &str, steps: u64) {
        self.clear();
        if !self.live || steps == 0 {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("rewind: {msg} [{wide_bar}] {pos}/{len} ({eta})")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        self.bar = Some(bar);
    }

    /// Where the current bar is: `done` of its steps.
    pub(crate) fn set(&mut self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    pub(crate) fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Bars {
    fn drop(&mut self) {
        self.clear();
    }
}

impl rewind::engine::maintenance::Progress for Bars {
    fn phase(&mut self, what: &'static str, steps: u64) {
        self.start(what, steps);
    }

    fn step(&mut self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }
}
