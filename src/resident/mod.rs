//! The resident helper (`rewind helper`), what it decides: its wire protocol ([`protocol`]),
//! whether it takes a hook event or leaves it to the client ([`Ledger::admit`],
//! [`Ledger::check_call`], [`check_timely`]), when it gives back memory and when it exits
//! ([`Ledger`]), and what it reports. The program keeps the transport: the socket, `poll`,
//! the peer's credentials, starting and stopping the process, running the hook.
//!
//! A helper and its clients must be the same build: the build id names the executable's
//! version and file, and a helper whose own file was replaced is stale and stops.

pub mod protocol;

use std::time::{Duration, Instant};

pub use protocol::{output_len, receive, send, send_with, Call, Reply, Request, Status};

use crate::scan::WatchCounts;

/// The helper's socket, in the home.
pub const SOCKET: &str = "helper.sock";
/// Held by the running helper, so there is one per home.
pub const LOCK: &str = "helper.lock";
/// Longest socket path the kernel takes (`sun_path` is 108 bytes with its NUL).
pub const SOCKET_PATH_MAX: usize = 107;
/// How long a hook waits for the helper's answer before it gives up (and allows the tool
/// call). Longer than an agent waits for a hook: in practice the agent's limit applies.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the helper waits for a client to send its request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an event may wait in the helper's queue (behind a slow event, a gc batch)
/// before the helper leaves it to the client. Well under the 30 s `rewind init` gives a hook:
/// a client the agent killed meanwhile must not have its event run late, against a file
/// the tool call has already written.
pub const QUEUE_LIMIT: Duration = Duration::from_secs(10);
/// How long the helper stays quiet (no event, no scan) before it gives back the memory its
/// last work used: long enough that the events of one tool call (before and after it) share
/// the index's map and zstd contexts, short enough that an idle helper is small soon after a
/// scan.
pub const RELEASE_AFTER: Duration = Duration::from_secs(1);

/// What the helper does after a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
    /// The helper is stale (its executable or index replaced) or failed: stop, and leave
    /// queued events to their clients.
    Abort,
}

/// An event the helper leaves to its client (which runs it in its own process), and what
/// the helper does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decline {
    pub why: String,
    pub flow: Flow,
}

impl Decline {
    fn new(why: impl Into<String>, flow: Flow) -> Decline {
        Decline {
            why: why.into(),
            flow,
        }
    }
}

/// What becomes of a hook request before its payload is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Read the payload and go on.
    Read,
    /// Answer [`Reply::Declined`].
    Decline(Decline),
    /// End the connection without an answer (a payload too large to be a hook's).
    Drop(Flow),
}

/// When a client would rather run its event itself than have the helper start it.
pub fn start_by_ms(now_ms: u64) -> u64 {
    now_ms.saturating_add(QUEUE_LIMIT.as_millis() as u64)
}

/// The last check before an event runs: one that waited too long in the queue, or whose
/// client is gone (the agent killed it and went on with the tool call), is not run late.
pub fn check_timely(start_by_ms: u64, now_ms: u64, hung_up: bool) -> Result<(), Decline> {
    match now_ms > start_by_ms || hung_up {
        true => Err(Decline::new(
            "the event waited too long in the helper's queue",
            Flow::Continue,
        )),
        false => Ok(()),
    }
}

/// The helper's state: who it is, what it has done, and when it last worked.
#[derive(Debug)]
pub struct Ledger {
    build: String,
    served: u64,
    busy: Duration,
    last: Instant,
    idle_timeout: Duration,
    /// When the last event or scan ended whose memory is not given back yet.
    unreleased: Option<Instant>,
    /// What the scans' watches did, as of the last look.
    pub watched: WatchCounts,
}

impl Ledger {
    pub fn new(build: String, idle_timeout: Duration, now: Instant) -> Ledger {
        Ledger {
            build,
            served: 0,
            busy: Duration::ZERO,
            last: now,
            idle_timeout,
            unreleased: None,
            watched: WatchCounts::default(),
        }
    }

    pub fn build(&self) -> &str {
        &self.build
    }

    pub fn served(&self) -> u64 {
        self.served
    }

    /// A hook request from a client of build `build`, with a payload of `payload_len`
    /// bytes; `current` is the build id of the helper's executable file now. A client of
    /// another build is declined; the helper is stale when its own file was replaced
    /// (another installation's client is just not its business).
    pub fn admit(&self, build: &str, current: &str, payload_len: u64, max: u64) -> Admission {
        if build != self.build {
            let flow = match current == self.build {
                true => Flow::Continue,
                false => Flow::Abort,
            };
            return Admission::Decline(Decline::new(
                "the helper runs another build of rewind",
                flow,
            ));
        }
        match payload_len > max {
            true => Admission::Drop(Flow::Continue),
            false => Admission::Read,
        }
    }

    /// Whether the helper can run `call` as the client would: the same size limit, and the
    /// same directory at its `cwd` (`seen`: its device and inode as the helper sees them).
    pub fn check_call(
        &self,
        call: &Call,
        own_max_file_size: Option<u64>,
        seen: Option<(u64, u64)>,
    ) -> Result<(), Decline> {
        if call.max_file_size != own_max_file_size {
            return Err(Decline::new(
                "REWIND_MAX_FILE_SIZE differs from the helper's",
                Flow::Continue,
            ));
        }
        if seen != Some(call.cwd_id) {
            return Err(Decline::new(
                format!(
                    "the helper sees another directory at {} (the agent runs in a sandbox or another mount namespace)",
                    call.cwd
                ),
                Flow::Continue,
            ));
        }
        Ok(())
    }

    /// An event ran (answered or not).
    pub fn ran(&mut self, now: Instant) {
        self.served += 1;
        self.last = now;
    }

    /// A hook request was answered after `took`: its memory is given back once quiet.
    pub fn answered(&mut self, took: Duration, now: Instant) {
        self.busy += took;
        self.unreleased = Some(now);
    }

    /// Quiet for [`RELEASE_AFTER`] since work whose memory is not given back yet.
    pub fn release_due(&self, now: Instant) -> bool {
        self.unreleased
            .is_some_and(|t| now.saturating_duration_since(t) >= RELEASE_AFTER)
    }

    pub fn released(&mut self) {
        self.unreleased = None;
    }

    /// No event for the idle timeout: the helper exits.
    pub fn idle_expired(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last) >= self.idle_timeout
    }

    pub fn status(&self, pid: u32, home: String, now: Instant) -> Status {
        Status {
            pid,
            home,
            build: self.build.clone(),
            served: self.served,
            busy_us: self.busy.as_micros() as u64,
            idle_secs: now.saturating_duration_since(self.last).as_secs(),
            idle_timeout_secs: self.idle_timeout.as_secs(),
            watches: self.watched.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(max_file_size: Option<u64>, cwd_id: (u64, u64)) -> Call {
        Call {
            agent: "codex".into(),
            cwd: "/work/p".into(),
            workspace: None,
            session: None,
            max_file_size,
            read_before_write: None,
            scan_budget_ms: None,
            ai_agent: None,
            cwd_id,
        }
    }

    #[test]
    fn a_client_of_another_build_is_declined_and_a_replaced_helper_stops() {
        let l = Ledger::new("b1".into(), Duration::from_secs(60), Instant::now());
        assert_eq!(l.admit("b1", "b1", 10, 100), Admission::Read);
        let Admission::Decline(d) = l.admit("b0", "b1", 10, 100) else {
            panic!("another installation's client must be declined");
        };
        assert_eq!(
            (d.why.as_str(), d.flow),
            ("the helper runs another build of rewind", Flow::Continue)
        );
        let Admission::Decline(d) = l.admit("b2", "b2", 10, 100) else {
            panic!("a client of the new build must be declined");
        };
        assert_eq!(
            d.flow,
            Flow::Abort,
            "the helper's own file was replaced: it is stale"
        );
    }

    #[test]
    fn a_payload_over_the_limit_ends_the_connection_without_an_answer() {
        let l = Ledger::new("b".into(), Duration::from_secs(60), Instant::now());
        assert_eq!(l.admit("b", "b", 100, 100), Admission::Read);
        assert_eq!(l.admit("b", "b", 101, 100), Admission::Drop(Flow::Continue));
    }

    #[test]
    fn an_event_is_run_only_with_the_same_size_limit_and_the_same_directory() {
        let l = Ledger::new("b".into(), Duration::from_secs(60), Instant::now());
        assert_eq!(
            l.check_call(&call(None, (1, 2)), None, Some((1, 2))),
            Ok(())
        );
        let d = l
            .check_call(&call(Some(5), (1, 2)), None, Some((1, 2)))
            .unwrap_err();
        assert_eq!(d.why, "REWIND_MAX_FILE_SIZE differs from the helper's");
        let d = l
            .check_call(&call(None, (1, 2)), None, Some((1, 3)))
            .unwrap_err();
        assert!(d.why.contains("another directory at /work/p"), "{}", d.why);
        let d = l.check_call(&call(None, (1, 2)), None, None).unwrap_err();
        assert_eq!(
            d.flow,
            Flow::Continue,
            "a directory the helper cannot see: declined"
        );
    }

    #[test]
    fn an_event_that_waited_too_long_or_whose_client_left_is_not_run_late() {
        let by = start_by_ms(1_000);
        assert_eq!(by, 1_000 + QUEUE_LIMIT.as_millis() as u64);
        assert_eq!(check_timely(by, by, false), Ok(()));
        assert!(check_timely(by, by + 1, false).is_err());
        assert!(check_timely(by, 0, true).is_err());
        assert_eq!(start_by_ms(u64::MAX), u64::MAX, "no overflow");
    }

    #[test]
    fn memory_is_given_back_once_quiet_and_the_helper_exits_when_idle() {
        let t0 = Instant::now();
        let mut l = Ledger::new("b".into(), Duration::from_secs(30), t0);
        assert!(
            !l.release_due(t0 + Duration::from_secs(5)),
            "nothing to give back yet"
        );
        l.ran(t0);
        l.answered(Duration::from_millis(3), t0);
        assert!(!l.release_due(t0 + RELEASE_AFTER / 2));
        assert!(l.release_due(t0 + RELEASE_AFTER));
        l.released();
        assert!(!l.release_due(t0 + RELEASE_AFTER * 2));
        assert!(!l.idle_expired(t0 + Duration::from_secs(29)));
        assert!(l.idle_expired(t0 + Duration::from_secs(30)));
        let s = l.status(7, "/h".into(), t0 + Duration::from_secs(4));
        assert_eq!(
            (s.pid, s.served, s.busy_us, s.idle_secs, s.idle_timeout_secs),
            (7, 1, 3_000, 4, 30)
        );
    }
}
