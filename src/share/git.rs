//! The project's git repository as sharing uses it: the user's own `git` program for
//! everything that talks to a remote or moves a ref (`push`, `fetch`, `ls-remote`,
//! `update-ref`: credentials, SSH configuration, `insteadOf` and proxies are git's own), and
//! gix for the objects (loose objects written into the repository's object directory, read
//! back with alternates and packs followed).
//!
//! Invariants: every git run is bounded by a deadline and killed past it; its stdin is
//! closed (or fed by this process: `update-ref --stdin`) and `GIT_TERMINAL_PROMPT=0`, so it
//! never waits on a question nobody will answer; refs are only ever named under
//! `refs/rewind/` by the callers; nothing here forces an update.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use gix_hash::ObjectId;
use gix_object::{Find, Write as _};

use super::pack::Content;
use super::ShareError;

/// What a finished git run printed.
#[derive(Debug)]
pub(crate) struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// The project's repository: where `git` runs and where its objects are.
pub(crate) struct Repo {
    program: PathBuf,
    dir: PathBuf,
    /// The common git dir (refs, objects).
    common: PathBuf,
    objects: PathBuf,
    timeout: Duration,
    odb: gix_odb::HandleArc,
    /// The objects held when the repository was opened, looked up without gix's loose file
    /// lookup of each object its packs lack; `None`: gix's lookup (see [`super::held`]).
    held: Option<std::sync::Arc<super::held::Held>>,
    /// Objects are hashed, never written (`push --dry-run`).
    dry_run: bool,
    /// File versions waiting to be written together ([`Repo::write_blob`]).
    pending: std::cell::RefCell<Pending>,
}

/// File versions [`Repo::write_blob`] was given, which [`Repo::flush_blobs`] finishes.
#[derive(Default)]
struct Pending {
    ids: std::collections::HashSet<ObjectId, super::Fast>,
    /// Versions held until there are enough for a pack of their own ([`PACK_FROM`]);
    /// written as loose objects if the push ends first.
    held: Vec<(ObjectId, Content)>,
    held_bytes: usize,
    /// The pack being written on its own thread, once there are enough.
    pack: Option<super::pack::PackWriter>,
}

/// Fewer new file versions than this are written as loose objects, as git itself does
/// with fewer objects than `transfer.unpackLimit` (100): a pack for every small push would
/// pile up packs between two `git gc`.
const PACK_FROM: usize = 100;

/// An object [`Repo::write_buf`] puts in the push's pack is compressed on the caller's
/// thread from this size on.
const COMPRESS_HERE_FROM: usize = 64 << 10;

/// Bytes of versions held before a pack is started anyway.
const HOLD_BYTES: usize = 8 << 20;

impl Repo {
    /// The repository holding `workspace` (its common git dir, so a linked worktree shares
    /// its main repository's objects and refs), read from the workspace's `.git` when it is
    /// the plain case ([`common_dir_of`]) and the environment names no repository, else
    /// asked of git.
    pub fn open(transport: &super::Transport, workspace: &Path) -> Result<Repo, ShareError> {
        let (program, timeout) = (&transport.git, transport.timeout);
        let common = match (transport.git_dir_in_env, common_dir_of(workspace)) {
            (false, Some(common)) => common,
            _ => Repo::ask_common_dir(program, workspace, timeout)?,
        };
        Repo::at(program, workspace, common, timeout)
    }

    /// `git rev-parse --git-common-dir` in `dir`.
    fn ask_common_dir(
        program: &Path,
        dir: &Path,
        timeout: Duration,
    ) -> Result<PathBuf, ShareError> {
        let probe = Repo::run_in(
            program,
            dir,
            timeout,
            ["rev-parse", "--path-format=absolute", "--git-common-dir"],
            None,
            &[],
        )?;
        if !probe.status.success() {
            return Err(ShareError::NotARepository {
                workspace: dir.display().to_string(),
                detail: last_line(&probe.stderr),
            });
        }
        Ok(PathBuf::from(String::from_utf8_lossy(&probe.stdout).trim()))
    }

    /// The repository whose common git dir is `common`, run in `workspace`.
    fn at(
        program: &Path,
        workspace: &Path,
        common: PathBuf,
        timeout: Duration,
    ) -> Result<Repo, ShareError> {
        let objects = common.join("objects");
        let odb = gix_odb::at(&objects, gix_hash::Kind::Sha1)
            .and_then(|odb| odb.into_arc())
            .map_err(|e| ShareError::Odb {
                detail: format!("cannot open {}: {e}", objects.display()),
            })?;
        let held = super::held::Held::open(&objects).map(std::sync::Arc::new);
        Ok(Repo {
            program: program.to_path_buf(),
            dir: workspace.to_path_buf(),
            common,
            objects,
            timeout,
            held,
            odb,
            dry_run: false,
            pending: Default::default(),
        })
    }

    /// This repository with writes turned into hashing: every object gets the id it would
    /// have and nothing is written, so a dry run leaves the object directory as it was.
    pub fn dry_run(self) -> Repo {
        Repo {
            dry_run: true,
            ..self
        }
    }

    /// Run `git args…` in the workspace, bounded by the timeout.
    pub fn git<I, S>(&self, args: I) -> Result<Output, ShareError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Repo::run_in(&self.program, &self.dir, self.timeout, args, None, &[])
    }

    /// [`Repo::git`] started: the caller does other work, then [`Running::wait`]s for it.
    pub fn start<I, S>(&self, args: I) -> Result<Running, ShareError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Repo::start_in(
            &self.program,
            &self.dir,
            self.timeout,
            args,
            Input::None,
            &[],
        )
    }

    /// As [`Repo::git`], with `input` on its stdin.
    pub fn git_with_input<I, S>(&self, args: I, input: Vec<u8>) -> Result<Output, ShareError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Repo::run_in(
            &self.program,
            &self.dir,
            self.timeout,
            args,
            Some(input),
            &[],
        )
    }

    /// As [`Repo::git`], an error (naming the command and git's own message) unless it
    /// succeeded.
    pub fn git_ok<I, S>(&self, what: &str, args: I) -> Result<Output, ShareError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = self.git(args)?;
        if !out.status.success() {
            return Err(ShareError::Git {
                command: what.to_string(),
                detail: git_message(&out.stderr),
            });
        }
        Ok(out)
    }

    fn run_in<I, S>(
        program: &Path,
        dir: &Path,
        timeout: Duration,
        args: I,
        input: Option<Vec<u8>>,
        env: &[(&str, &OsStr)],
    ) -> Result<Output, ShareError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let input = input.map_or(Input::None, Input::Bytes);
        Repo::start_in(program, dir, timeout, args, input, env)?.wait()
    }

    /// Start `git args…` in `dir` with `input` on its stdin, bounded by `timeout` from now:
    /// the caller does other work, then [`Running::wait`]s for it.
    fn start_in<I, S>(
        program: &Path,
        dir: &Path,
        timeout: Duration,
        args: I,
        input: Input,
        env: &[(&str, &OsStr)],
    ) -> Result<Running, ShareError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<std::ffi::OsString> = args
            .into_iter()
            .map(|a| a.as_ref().to_os_string())
            .collect();
        let what = format!(
            "git {}",
            args.first()
                .map(|a| a.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        let deadline = Instant::now() + timeout;
        // `-C dir` rather than a working directory for the child: with none to set, the
        // standard library starts git with `posix_spawn` (a vfork) instead of a fork, which
        // copied the whole address space's page tables for each git run of a push (in a
        // static binary it cannot look up the `posix_spawn` action that changes directory).
        let mut child = Command::new(program)
            .arg("-C")
            .arg(dir)
            .args(&args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .envs(env.iter().copied())
            .stdin(if matches!(input, Input::None) {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| ShareError::NoGit {
                program: program.display().to_string(),
                source,
            })?;
        if let Some(stdin) = child.stdin.take() {
            feed(stdin, input);
        }
        let (closing, closed) = std::sync::mpsc::channel();
        let out = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
            closing.clone(),
        );
        let err = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
            closing,
        );
        Ok(Running {
            child: Some(child),
            out: Some(out),
            err: Some(err),
            closed,
            what,
            program: program.to_path_buf(),
            timeout,
            deadline,
        })
    }

    /// `git ls-remote --refs REMOTE PATTERN`, and whether the remote serves filtered
    /// fetches (the `filter` capability, which a fetch of commits without their trees
    /// needs). The capability is read from git's own packet trace of that one run: git
    /// prints a server's capabilities nowhere else, and a fetch asking for a filter that
    /// the server lacks would fetch everything instead.
    pub fn ls_remote(&self, remote: &str, pattern: &str) -> Result<(Output, bool), ShareError> {
        self.start_ls_remote(remote, pattern)?.finish()
    }

    /// [`Repo::ls_remote`] started: the caller does other work while git lists the refs.
    pub fn start_ls_remote(&self, remote: &str, pattern: &str) -> Result<LsRemote, ShareError> {
        let trace = tempfile::NamedTempFile::new().map_err(|e| ShareError::Odb {
            detail: format!("cannot make a temporary file: {e}"),
        })?;
        let running = Repo::start_in(
            &self.program,
            &self.dir,
            self.timeout,
            ["ls-remote", "--refs", remote, pattern],
            Input::None,
            &[("GIT_TRACE_PACKET", trace.path().as_os_str())],
        )?;
        Ok(LsRemote { running, trace })
    }

    /// The bare repository this process made at `dir` (its git dir is `dir` itself), run with
    /// the same program and deadline.
    pub fn elsewhere(&self, dir: &Path) -> Result<Repo, ShareError> {
        Repo::at(&self.program, dir, dir.to_path_buf(), self.timeout)
    }

    /// The directory git runs in (the workspace).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether object `id` is in the repository (its packs, loose objects or alternates) as
    /// this handle found them: a miss does not list the pack directory again (a listing asks
    /// about a thousand commits it mostly lacks, and each such listing cost more than the
    /// answer).
    /// A pack that arrived since the handle was opened may be missed: the caller then fetches
    /// or writes what it has already, which costs time, never correctness.
    pub fn has(&self, id: &ObjectId) -> bool {
        holds(&self.odb, self.held.as_deref(), id)
    }

    /// Every local ref under `refs/rewind/` and the object it names: read from the ref
    /// files when they are plain ([`super::refs`]), else from `git for-each-ref`.
    pub fn local_refs(&self) -> Result<std::collections::HashMap<String, ObjectId>, ShareError> {
        if let Some(refs) = super::refs::read(&self.common) {
            return Ok(refs);
        }
        let out = self.git_ok(
            "git for-each-ref",
            [
                "for-each-ref",
                "--format=%(objectname) %(refname)",
                "refs/rewind/",
            ],
        )?;
        let mut refs = std::collections::HashMap::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((oid, name)) = line.split_once(' ') {
                refs.insert(name.to_string(), parse_oid(oid, name)?);
            }
        }
        Ok(refs)
    }

    /// Start the `git update-ref --stdin` transaction that [`RefUpdates::finish`] commits
    /// once the moves are known (after a push), with the moves `expected` (each ref to its
    /// new commit, from the commit it names now: what a push the remote takes whole moves)
    /// prepared meanwhile: git locks the refs and checks what they name while the push
    /// runs, so that moving them after it costs a commit, not a process start and the
    /// locking. Git takes the refs' locks for as long as it waits: dropped unfinished, its
    /// stdin closes first, and git aborts (the locks go) and moves nothing.
    pub fn start_update_refs(&self, expected: Moves<'_>) -> Result<RefUpdates, ShareError> {
        let (feed, lines) = std::sync::mpsc::channel();
        let running = Repo::start_in(
            &self.program,
            &self.dir,
            self.timeout,
            ["update-ref", "-m", "rewind", "--stdin"],
            Input::Later(lines),
            &[],
        )?;
        let prepared = (!expected.is_empty()).then(|| owned_moves(expected));
        if let Some(moves) = &prepared {
            // A send fails only when git stopped reading: its exit status says why.
            let _ = feed.send(format!("start\n{}prepare\n", moves_input(moves)).into_bytes());
        }
        Ok(RefUpdates {
            running: Some(running),
            feed: Some(feed),
            prepared,
            program: self.program.clone(),
            dir: self.dir.clone(),
            timeout: self.timeout,
        })
    }

    /// Delete `references` here, all in one `git update-ref --stdin` transaction.
    pub fn delete_refs(&self, references: &[String]) -> Result<(), ShareError> {
        if references.is_empty() {
            return Ok(());
        }
        let input: String = references.iter().map(|r| format!("delete {r}\n")).collect();
        let out = self.git_with_input(["update-ref", "--stdin"], input.into_bytes())?;
        if !out.status.success() {
            return Err(ShareError::Git {
                command: "git update-ref".into(),
                detail: git_message(&out.stderr),
            });
        }
        Ok(())
    }

    /// Start asking which of `paths` (relative to the workspace) the workspace's gitignore
    /// rules match: one `git check-ignore` that runs while the caller reads, answered by
    /// [`Ignoring::finish`]. It does not look in git's index (which cost it a lookup of
    /// every path there, most of its time for a thousand paths): a tracked file is never
    /// ignored, which [`Repo::untracked`] then applies to the few paths it matched. git is
    /// started on a thread of its own: a start holds its caller until the child has
    /// looked git up in PATH and executed it (~1 ms), and the caller reads meanwhile.
    pub fn start_ignored(&self, paths: &[&[u8]]) -> Result<Ignoring, ShareError> {
        if paths.is_empty() {
            return Ok(Ignoring(None));
        }
        let mut input = Vec::new();
        for p in paths {
            input.extend_from_slice(p);
            input.push(0);
        }
        let (program, dir, timeout) = (self.program.clone(), self.dir.clone(), self.timeout);
        let starting = std::thread::Builder::new()
            .spawn(move || {
                let args = ["check-ignore", "--stdin", "-z", "--no-index"];
                Repo::start_in(&program, &dir, timeout, args, Input::Bytes(input), &[])
            })
            .map_err(|e| ShareError::Odb {
                detail: format!("cannot start a thread for git check-ignore: {e}"),
            })?;
        Ok(Ignoring(Some(Launch::Starting(starting))))
    }

    /// Those of `paths` (relative to the workspace) that git does not track: `git ls-files`
    /// of them, each taken literally, a thousand at a time.
    pub fn untracked(
        &self,
        mut paths: std::collections::HashSet<Vec<u8>>,
    ) -> Result<std::collections::HashSet<Vec<u8>>, ShareError> {
        let asked: Vec<Vec<u8>> = paths.iter().cloned().collect();
        for chunk in asked.chunks(1000) {
            let mut args: Vec<std::ffi::OsString> = ["--literal-pathspecs", "ls-files", "-z", "--"]
                .iter()
                .map(Into::into)
                .collect();
            args.extend(chunk.iter().map(|p| os_path(p)));
            let out = self.git_ok("git ls-files", args)?;
            for tracked in out.stdout.split(|b| *b == 0) {
                paths.remove(tracked);
            }
        }
        Ok(paths)
    }

    /// Write an object whose bytes are at hand; one the repository holds already (a file
    /// version in the project's own history, a window pushed before) is not written again.
    /// While a pack of the push's versions is being written ([`Repo::write_blob`]), it goes
    /// in that pack; otherwise it is a loose object.
    pub fn write_buf(&self, kind: gix_object::Kind, bytes: &[u8]) -> Result<ObjectId, ShareError> {
        let id = gix_object::compute_hash(gix_hash::Kind::Sha1, kind, bytes).map_err(|e| {
            ShareError::Odb {
                detail: format!("cannot hash a {kind}: {e}"),
            }
        })?;
        if self.dry_run || self.has(&id) {
            return Ok(id);
        }
        // With a pack of versions under way, it goes in that pack (on the pack's thread,
        // finished by `flush_blobs`), not in a loose file.
        let mut pending = self.pending.borrow_mut();
        let Pending { ids, pack, .. } = &mut *pending;
        if let Some(pack) = pack.as_mut() {
            if ids.insert(id) {
                // A large one (a big window's tree) is compressed here, while the pack's
                // thread compresses what came before it.
                let content = match bytes.len() {
                    n if n >= COMPRESS_HERE_FROM => {
                        Content::Deflated(super::pack::Deflated::of(bytes)?)
                    }
                    _ => Content::Bytes(bytes.to_vec()),
                };
                pack.add_object(id, kind, content)?;
            }
            return Ok(id);
        }
        drop(pending);
        self.loose()
            .write_buf(kind, bytes)
            .map_err(|e| ShareError::Odb {
                detail: format!("cannot write a {kind} into {}: {e}", self.objects.display()),
            })
    }

    /// Write a file version: held, then written with the push's other new versions in one
    /// pack by a thread of its own while the push goes on ([`super::pack`]), which
    /// [`Repo::flush_blobs`] finishes (it must run before anything that refers to them
    /// leaves), since a loose object is a file of its own, and creating a thousand files in
    /// the object directory took most of a first push's time (see benches/RESULTS.md). One
    /// the repository holds already is not written again.
    pub fn write_blob(&self, bytes: Vec<u8>) -> Result<ObjectId, ShareError> {
        let id = blob_id(&bytes)?;
        self.write_hashed_blob(id, bytes)?;
        Ok(id)
    }

    /// [`Repo::write_blob`] of `bytes` whose git id `id` was computed already
    /// ([`blob_id`]).
    pub fn write_hashed_blob(&self, id: ObjectId, bytes: Vec<u8>) -> Result<(), ShareError> {
        if !self.lacks(&id) {
            return Ok(());
        }
        self.write_lacking_blob(id, Content::Bytes(bytes))
    }

    /// [`Repo::write_hashed_blob`] of a blob the caller found the repository lacks
    /// ([`Repo::lacks`]), not looked up again: its bytes, or the store's frame of them.
    pub fn write_lacking_blob(&self, id: ObjectId, content: Content) -> Result<(), ShareError> {
        if self.dry_run {
            return Ok(());
        }
        let mut pending = self.pending.borrow_mut();
        if !pending.ids.insert(id) {
            return Ok(());
        }
        if let Some(pack) = pending.pack.as_mut() {
            return pack.add(id, content);
        }
        pending.held_bytes += content.size() as usize;
        pending.held.push((id, content));
        if pending.held.len() >= PACK_FROM || pending.held_bytes >= HOLD_BYTES {
            let mut pack = super::pack::PackWriter::start(&self.objects)?;
            for (id, content) in std::mem::take(&mut pending.held) {
                pack.add(id, content)?;
            }
            pending.pack = Some(pack);
        }
        Ok(())
    }

    /// [`Repo::lacks`] for another thread.
    pub fn lookup(&self) -> Lookup {
        Lookup {
            odb: (!self.dry_run).then(|| (self.odb.clone(), self.held.clone())),
        }
    }

    /// Whether writing object `id` would write anything: not a dry run, and the repository
    /// does not hold it ([`Repo::has`]).
    pub fn lacks(&self, id: &ObjectId) -> bool {
        !self.dry_run && !self.has(id)
    }

    /// Finish writing the blobs [`Repo::write_blob`] was given: their pack, or as loose
    /// objects when they were few.
    pub fn flush_blobs(&self) -> Result<(), ShareError> {
        let finished = std::mem::take(&mut *self.pending.borrow_mut());
        if let Some(pack) = finished.pack {
            return pack.finish();
        }
        for (_, content) in finished.held {
            self.loose()
                .write_buf(gix_object::Kind::Blob, &content.into_bytes()?)
                .map_err(|e| ShareError::Odb {
                    detail: format!("cannot write a blob into {}: {e}", self.objects.display()),
                })?;
        }
        Ok(())
    }

    /// Write a blob of `size` bytes from `reader`, never held whole.
    pub fn write_stream(&self, size: u64, reader: &mut dyn Read) -> Result<ObjectId, ShareError> {
        if self.dry_run {
            return hash_stream(size, reader);
        }
        self.loose()
            .write_stream(gix_object::Kind::Blob, size, reader)
            .map_err(|e| ShareError::Odb {
                detail: format!("cannot write a blob into {}: {e}", self.objects.display()),
            })
    }

    fn loose(&self) -> gix_odb::loose::Store {
        gix_odb::loose::Store::at(&self.objects, gix_hash::Kind::Sha1)
    }

    /// Object `id` of kind `kind`, verified against its id, refused over `max` bytes.
    pub fn read(
        &self,
        id: &ObjectId,
        kind: gix_object::Kind,
        max: u64,
        what: &str,
    ) -> Result<Vec<u8>, ShareError> {
        let malformed = |detail: String| ShareError::Malformed {
            object: format!("{what} {id}"),
            detail,
        };
        let header = gix_object::FindHeader::try_header(&self.odb, id)
            .map_err(|e| malformed(e.to_string()))?
            .ok_or_else(|| malformed("missing from the repository".into()))?;
        if header.kind != kind {
            return Err(malformed(format!("is a {}, not a {kind}", header.kind)));
        }
        if header.size > max {
            return Err(malformed(format!(
                "is {} bytes, over the limit of {max}",
                header.size
            )));
        }
        let mut buf = Vec::new();
        let data = self
            .odb
            .try_find(id, &mut buf)
            .map_err(|e| malformed(e.to_string()))?
            .ok_or_else(|| malformed("missing from the repository".into()))?;
        data.verify_checksum(id)
            .map_err(|e| malformed(e.to_string()))?;
        Ok(buf)
    }

    /// Read blobs `ids` through one `git cat-file --batch` (git's own delta-base cache, one
    /// process however many): `sink` gets each one's id, size and a reader of exactly its
    /// bytes, in the order asked. A blob that is missing or not a blob is an error, and so
    /// is a run past the deadline (the process is killed).
    pub fn cat_blobs(&self, ids: &[ObjectId], sink: &mut BlobSink<'_>) -> Result<(), ShareError> {
        if ids.is_empty() {
            return Ok(());
        }
        let what = "git cat-file --batch";
        // `-C`, not a working directory: see `start_in`.
        let mut child = Command::new(&self.program)
            .arg("-C")
            .arg(&self.dir)
            .args(["cat-file", "--batch"])
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| ShareError::NoGit {
                program: self.program.display().to_string(),
                source,
            })?;
        let mut input = Vec::with_capacity(ids.len() * 41);
        for id in ids {
            input.extend_from_slice(id.to_hex().to_string().as_bytes());
            input.push(b'\n');
        }
        if let Some(mut stdin) = child.stdin.take() {
            // On its own thread: git answers while it reads, and would block on a full
            // stdout pipe while this one blocks writing to a full stdin pipe.
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = stdin.write_all(&input);
            });
        }
        let stdout = child.stdout.take();
        let child = std::sync::Arc::new(std::sync::Mutex::new(child));
        let (done, watchdog) = deadline_watch(child.clone(), self.timeout);
        let read = match stdout {
            Some(out) => read_batch(std::io::BufReader::with_capacity(256 << 10, out), ids, sink),
            None => Err(ShareError::Odb {
                detail: format!("{what}: no output"),
            }),
        };
        drop(done);
        let killed = watchdog.join().unwrap_or(true);
        let mut child = child
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = child.kill();
        let _ = child.wait();
        if killed {
            return Err(ShareError::Timeout {
                command: what.to_string(),
                seconds: self.timeout.as_secs(),
            });
        }
        read
    }
}

/// Drain `pipe` on a thread of its own, so a chatty git never blocks on a full pipe while
/// this process waits for it to exit.
fn drain(
    pipe: Option<Box<dyn Read + Send>>,
    closed: std::sync::mpsc::Sender<()>,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        // Wakes a wait for the process ([`wait_bounded`]): it is ending, most likely.
        let _ = closed.send(());
        buf
    })
}

/// Write `input` to a git's `stdin` on a thread of its own (git answers while it reads, and
/// would block on a full stdout pipe while this process blocks on a full stdin pipe); its
/// stdin is closed when all of it is written, or git stopped reading.
fn feed(mut stdin: std::process::ChildStdin, input: Input) {
    std::thread::spawn(move || {
        use std::io::Write;
        match input {
            Input::None => {}
            Input::Bytes(bytes) => {
                let _ = stdin.write_all(&bytes);
            }
            Input::Later(chunks) => {
                for bytes in chunks {
                    if stdin.write_all(&bytes).is_err() {
                        break;
                    }
                }
            }
        }
    });
}

/// What a git run reads on its stdin.
enum Input {
    /// Nothing (stdin is `/dev/null`).
    None,
    Bytes(Vec<u8>),
    /// What comes from this channel, as it comes; stdin is closed once the sender is gone.
    Later(std::sync::mpsc::Receiver<Vec<u8>>),
}

/// Refs to move: each ref, the commit it is to name, and the one it must name now (`None`:
/// it must not exist).
pub(crate) type Moves<'a> = &'a [(&'a str, ObjectId, Option<ObjectId>)];

fn owned_moves(moves: Moves<'_>) -> Vec<(String, ObjectId, Option<ObjectId>)> {
    moves
        .iter()
        .map(|(r, new, old)| (r.to_string(), *new, *old))
        .collect()
}

/// `git update-ref --stdin`'s lines for `moves`.
fn moves_input(moves: &[(String, ObjectId, Option<ObjectId>)]) -> String {
    let null = ObjectId::null(gix_hash::Kind::Sha1);
    moves
        .iter()
        .map(|(reference, new, old)| format!("update {reference} {new} {}\n", old.unwrap_or(null)))
        .collect()
}

fn update_ref_result(out: &Output) -> Result<(), ShareError> {
    if !out.status.success() {
        return Err(ShareError::Git {
            command: "git update-ref".into(),
            detail: git_message(&out.stderr),
        });
    }
    Ok(())
}

/// A `git update-ref --stdin` started before its moves are known
/// ([`Repo::start_update_refs`]), with the moves expected prepared in a transaction.
pub(crate) struct RefUpdates {
    /// `None` once finished.
    running: Option<Running>,
    /// Closed (`None`) before git is waited for.
    feed: Option<std::sync::mpsc::Sender<Vec<u8>>>,
    /// The moves sent to prepare, if any.
    prepared: Option<Vec<(String, ObjectId, Option<ObjectId>)>>,
    /// To run a `git update-ref` of its own when the moves are not the ones prepared.
    program: PathBuf,
    dir: PathBuf,
    timeout: Duration,
}

impl RefUpdates {
    /// Point each `reference` at `new`, provided it still names `old` (`None`: does not
    /// exist): git's own compare-and-swap, never forced, in one transaction (every ref
    /// moves, or none does). No moves: git ends having moved nothing. The moves prepared
    /// are committed when they are exactly `moves`; otherwise (some ref was not taken, or
    /// git could not prepare: a ref locked or moved meanwhile, a git without
    /// transactions) that transaction is aborted and `moves` go in one of their own.
    pub fn finish(mut self, moves: Moves<'_>) -> Result<(), ShareError> {
        let expected = self.prepared.take();
        let moves = owned_moves(moves);
        let as_prepared = expected.as_ref() == Some(&moves);
        let input = match &expected {
            Some(_) if as_prepared => "commit\n".to_string(),
            Some(_) => "abort\n".to_string(),
            None => moves_input(&moves),
        };
        let out = self.close(input)?;
        if expected.is_none() {
            return update_ref_result(&out);
        }
        // "prepare: ok" and a failure: the commit itself failed.
        let prepared = String::from_utf8_lossy(&out.stdout).contains("prepare: ok");
        if as_prepared && (out.status.success() || prepared) {
            return update_ref_result(&out);
        }
        if moves.is_empty() {
            return Ok(());
        }
        let out = Repo::run_in(
            &self.program,
            &self.dir,
            self.timeout,
            ["update-ref", "-m", "rewind", "--stdin"],
            Some(moves_input(&moves).into_bytes()),
            &[],
        )?;
        update_ref_result(&out)
    }

    /// Send git `input`, close its stdin and wait for it (its deadline counted from now,
    /// not from its start: it waited through a push).
    fn close(&mut self, input: String) -> Result<Output, ShareError> {
        if let Some(feed) = self.feed.take() {
            if !input.is_empty() {
                // A send fails only when git stopped reading: its exit status says why.
                let _ = feed.send(input.into_bytes());
            }
        }
        let mut running = self.running.take().ok_or_else(|| ShareError::Odb {
            detail: "git update-ref was waited for already".into(),
        })?;
        running.deadline = Instant::now() + running.timeout;
        running.wait()
    }
}

impl Drop for RefUpdates {
    /// Unfinished: its stdin closes with nothing more sent, so git aborts a prepared
    /// transaction (its locks go) or commits an empty one, and it is waited for (killed
    /// only past a few seconds), never left holding a ref's lock.
    fn drop(&mut self) {
        drop(self.feed.take());
        if let Some(mut running) = self.running.take() {
            running.deadline = Instant::now() + Duration::from_secs(5).min(running.timeout);
            let _ = running.wait();
        }
    }
}

/// A `git check-ignore` under way ([`Repo::start_ignored`]); `None`: no path was asked about.
pub(crate) struct Ignoring(Option<Launch>);

/// A git run being started on a thread of its own, then started. Dropped while starting,
/// the thread goes on alone and drops the run it started (which kills and reaps it).
enum Launch {
    Starting(std::thread::JoinHandle<Result<Running, ShareError>>),
    Started(Running),
}

impl Launch {
    /// The run, once started (waiting for its start if need be).
    fn started(self) -> Result<Running, ShareError> {
        match self {
            Launch::Started(run) => Ok(run),
            Launch::Starting(thread) => thread.join().unwrap_or_else(|_| {
                Err(ShareError::Odb {
                    detail: "the thread starting git check-ignore panicked".into(),
                })
            }),
        }
    }
}

impl Ignoring {
    /// The paths asked about that are ignored, once it has answered; `None` while it runs.
    pub fn try_finish(&mut self) -> Result<Option<std::collections::HashSet<Vec<u8>>>, ShareError> {
        let mut run = match self.0.take() {
            None => return Ok(Some(Default::default())),
            Some(Launch::Starting(thread)) if !thread.is_finished() => {
                self.0 = Some(Launch::Starting(thread));
                return Ok(None);
            }
            Some(launch) => launch.started()?,
        };
        let Some(out) = run.try_wait()? else {
            self.0 = Some(Launch::Started(run));
            return Ok(None);
        };
        ignored_paths(&out).map(Some)
    }

    /// The paths asked about that are ignored (waiting for the answer).
    pub fn finish(self) -> Result<std::collections::HashSet<Vec<u8>>, ShareError> {
        match self.0 {
            None => Ok(Default::default()),
            Some(launch) => ignored_paths(&launch.started()?.wait()?),
        }
    }
}

/// The paths a `git check-ignore --stdin -z` printed (those ignored).
fn ignored_paths(out: &Output) -> Result<std::collections::HashSet<Vec<u8>>, ShareError> {
    // 0: some are ignored, 1: none is; anything else is an error.
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(ShareError::Git {
            command: "git check-ignore".into(),
            detail: git_message(&out.stderr),
        });
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
}

/// A git run started by [`Repo::start_in`]. Dropped without [`Running::wait`] (an error
/// elsewhere), it is killed and reaped: no git outlives the operation that started it.
/// A `git ls-remote` under way ([`Repo::start_ls_remote`]), with its packet trace.
pub(crate) struct LsRemote {
    running: Running,
    trace: tempfile::NamedTempFile,
}

impl LsRemote {
    /// Its output, and whether the remote serves filtered fetches (see [`Repo::ls_remote`]).
    pub fn finish(self) -> Result<(Output, bool), ShareError> {
        let out = self.running.wait()?;
        let traced = std::fs::read(self.trace.path()).unwrap_or_default();
        Ok((out, serves_filter(&traced)))
    }
}

pub(crate) struct Running {
    child: Option<std::process::Child>,
    out: Option<std::thread::JoinHandle<Vec<u8>>>,
    err: Option<std::thread::JoinHandle<Vec<u8>>>,
    /// A message each time one of its output pipes is closed (by its end, usually).
    closed: std::sync::mpsc::Receiver<()>,
    what: String,
    program: PathBuf,
    timeout: Duration,
    /// When it was started, plus the timeout: killed past this.
    deadline: Instant,
}

impl Running {
    /// Wait for it to finish (killed at its deadline) and what it printed.
    pub fn wait(mut self) -> Result<Output, ShareError> {
        let mut child = self
            .child
            .take()
            .expect("a run is waited for once, by value");
        let left = self.deadline.saturating_duration_since(Instant::now());
        let wait = wait_bounded(&mut child, left, &self.what, &self.program, &self.closed);
        let status = wait.map_err(|e| {
            match e {
                // The timeout the user gave, not what was left of it.
                ShareError::Timeout { command, .. } => ShareError::Timeout {
                    command,
                    seconds: self.timeout.as_secs(),
                },
                e => e,
            }
        })?;
        Ok(self.output(status))
    }

    /// What it printed once it has finished, `None` while it runs; past its deadline it is
    /// killed (an error).
    pub fn try_wait(&mut self) -> Result<Option<Output>, ShareError> {
        let Some(child) = self.child.as_mut() else {
            return Ok(None);
        };
        match child.try_wait() {
            Ok(Some(status)) => {
                self.child = None;
                Ok(Some(self.output(status)))
            }
            Ok(None) if Instant::now() >= self.deadline => {
                let _ = child.kill();
                let _ = child.wait();
                self.child = None;
                Err(ShareError::Timeout {
                    command: self.what.clone(),
                    seconds: self.timeout.as_secs(),
                })
            }
            Ok(None) => Ok(None),
            Err(source) => Err(ShareError::NoGit {
                program: self.program.display().to_string(),
                source,
            }),
        }
    }

    /// Its stdout and stderr, drained by their threads, and its exit status.
    fn output(&mut self, status: ExitStatus) -> Output {
        let join = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
            h.and_then(|h| h.join().ok()).unwrap_or_default()
        };
        let stdout = join(self.out.take());
        let stderr = String::from_utf8_lossy(&join(self.err.take())).into_owned();
        Output {
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// [`Repo::lacks`] on a thread of its own ([`Repo::lookup`]).
pub(crate) struct Lookup {
    /// `None` in a dry run, which writes nothing.
    odb: Option<(
        gix_odb::HandleArc,
        Option<std::sync::Arc<super::held::Held>>,
    )>,
}

impl Lookup {
    /// Whether writing object `id` would write anything (see [`Repo::has`]).
    pub fn lacks(&self, id: &ObjectId) -> bool {
        (self.odb.as_ref()).is_some_and(|(odb, held)| !holds(odb, held.as_deref(), id))
    }
}

/// Whether object `id` is held: by the snapshot `held` when there is one, else by gix's
/// handle as it found the repository ([`Repo::has`]).
fn holds(odb: &gix_odb::HandleArc, held: Option<&super::held::Held>, id: &ObjectId) -> bool {
    match held {
        Some(held) => held.has(id),
        None => odb.exists_without_refresh(id),
    }
}

/// What [`Repo::cat_blobs`] hands each blob to: its id, its size and a reader of its bytes.
pub(crate) type BlobSink<'a> =
    dyn FnMut(&ObjectId, u64, &mut dyn Read) -> Result<(), ShareError> + 'a;

/// A thread that kills `child` once `timeout` has passed, unless the returned sender is
/// dropped first; it returns whether it killed.
fn deadline_watch(
    child: std::sync::Arc<std::sync::Mutex<std::process::Child>>,
    timeout: Duration,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<bool>) {
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || match wait.recv_timeout(timeout) {
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            let mut c = child
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let _ = c.kill();
            true
        }
        _ => false,
    });
    (done, watchdog)
}

/// Read `git cat-file --batch`'s answers to `ids` (in their order) from `out`: a header
/// line `<id> blob <size>` then the bytes and a newline, or `<id> missing`.
fn read_batch(
    mut out: impl std::io::BufRead,
    ids: &[ObjectId],
    sink: &mut BlobSink<'_>,
) -> Result<(), ShareError> {
    let mut line = String::new();
    for id in ids {
        let bad = |detail: String| ShareError::Malformed {
            object: format!("blob {id}"),
            detail,
        };
        line.clear();
        out.read_line(&mut line)
            .map_err(|e| bad(format!("git cat-file: {e}")))?;
        let words: Vec<&str> = line.trim_end().split(' ').collect();
        let size = match words[..] {
            [""] => {
                return Err(bad("git cat-file said nothing more (stopped?)".into()));
            }
            [oid, ..] if ObjectId::from_hex(oid.as_bytes()).ok() != Some(*id) => {
                return Err(bad(format!(
                    "git cat-file said {:?} (another object)",
                    line.trim_end()
                )))
            }
            [_, "blob", size] => size
                .parse::<u64>()
                .map_err(|_| bad(format!("git cat-file said {:?}", line.trim_end())))?,
            [_, "missing"] => return Err(bad("missing from the repository".into())),
            [_, kind, _] => return Err(bad(format!("is a {kind}, not a blob"))),
            _ => {
                return Err(bad(format!(
                    "git cat-file said {:?} (stopped?)",
                    line.trim_end()
                )))
            }
        };
        let mut body = (&mut out).take(size);
        sink(id, size, &mut body)?;
        // What the sink left unread, then the newline after the bytes.
        std::io::copy(&mut body, &mut std::io::sink())
            .map_err(|e| bad(format!("git cat-file: {e}")))?;
        if body.limit() != 0 {
            return Err(bad(format!("git cat-file stopped inside its {size} bytes")));
        }
        let mut newline = [0u8; 1];
        out.read_exact(&mut newline)
            .map_err(|e| bad(format!("git cat-file: {e}")))?;
    }
    Ok(())
}

/// The common git dir of the repository whose work tree's root is `workspace`, as git finds
/// it there: `.git` is the directory, or a file `gitdir: <dir>` (a linked worktree, a
/// submodule) whose directory names the common one in `commondir` (a linked worktree).
/// `None` for anything else (no `.git` at the root, an unexpected shape): git is asked.
fn common_dir_of(workspace: &Path) -> Option<PathBuf> {
    let dot_git = workspace.join(".git");
    let git_dir = if std::fs::metadata(&dot_git).ok()?.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        workspace.join(
            text.strip_prefix("gitdir: ")?
                .trim_end_matches(['\n', '\r']),
        )
    };
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim_end_matches(['\n', '\r'])),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => git_dir,
        Err(_) => return None,
    };
    let common = common.canonicalize().ok()?;
    (common.join("objects").is_dir() && common.join("HEAD").is_file()).then_some(common)
}

/// Whether a packet trace of `git ls-remote` shows the server offering `filter`: in its
/// protocol v2 `fetch=` capability line, or in the capabilities after the first ref of
/// protocol v0 (only lines ls-remote received count, not what a local upload-pack sent).
fn serves_filter(trace: &[u8]) -> bool {
    String::from_utf8_lossy(trace).lines().any(|line| {
        let Some((_, received)) = line.split_once("ls-remote< ") else {
            return false;
        };
        let v2 = received.strip_prefix("fetch=");
        let v0 = received
            .split_once('\0')
            .map(|(_, caps)| caps)
            .or_else(|| received.split_once("\\0").map(|(_, caps)| caps));
        v2.or(v0)
            .is_some_and(|caps| caps.split_ascii_whitespace().any(|c| c == "filter"))
    })
}

/// The git id of blob `bytes`.
pub(crate) fn blob_id(bytes: &[u8]) -> Result<ObjectId, ShareError> {
    gix_object::compute_hash(gix_hash::Kind::Sha1, gix_object::Kind::Blob, bytes).map_err(|e| {
        ShareError::Odb {
            detail: format!("cannot hash a blob: {e}"),
        }
    })
}

/// A plain SHA-1 (no collision detection) of `parts`, one after the other. Only for what
/// needs no detection: a pack's checksum (git's own has used plain SHA-1 for it since
/// 2.47), and bytes checked against a git id that was hashed with detection when it was
/// kept ([`crate::store`]: a blob whose hash found an attack keeps none), where equal bytes
/// hash equal either way and other bytes are damage.
pub(crate) fn plain_sha1(parts: &[&[u8]]) -> ObjectId {
    use sha1::Digest;
    let mut h = sha1::Sha1::new();
    for part in parts {
        h.update(part);
    }
    let digest: [u8; 20] = h.finalize().into();
    ObjectId::from(digest)
}

/// The git id of blob `bytes` by [`plain_sha1`]: only to check bytes against a kept id.
pub(crate) fn kept_blob_id(bytes: &[u8]) -> ObjectId {
    let header = gix_object::encode::loose_header(gix_object::Kind::Blob, bytes.len() as u64);
    plain_sha1(&[&header, bytes])
}

/// The git id of a blob of `size` bytes read from `reader`, written nowhere.
fn hash_stream(size: u64, reader: &mut dyn Read) -> Result<ObjectId, ShareError> {
    let odb = |detail: String| ShareError::Odb { detail };
    let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
    hasher.update(&gix_object::encode::loose_header(
        gix_object::Kind::Blob,
        size,
    ));
    let mut buf = vec![0; 64 << 10];
    let mut read = 0u64;
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| odb(format!("cannot read a blob to hash it: {e}")))?;
        if n == 0 {
            break;
        }
        read += n as u64;
        hasher.update(&buf[..n]);
    }
    if read != size {
        return Err(odb(format!(
            "a blob of {size} bytes gave {read} bytes to hash"
        )));
    }
    hasher
        .try_finalize()
        .map_err(|e| odb(format!("cannot hash a blob: {e}")))
}

/// Wait for `child` until `timeout`, then kill it.
fn wait_bounded(
    child: &mut std::process::Child,
    timeout: Duration,
    what: &str,
    program: &Path,
    closed: &std::sync::mpsc::Receiver<()>,
) -> Result<ExitStatus, ShareError> {
    let started = Instant::now();
    // Whether a pipe may still close and wake the wait.
    let mut open = true;
    let deadline = started + timeout;
    let mut pause = Duration::from_micros(100);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ShareError::Timeout {
                    command: what.to_string(),
                    seconds: timeout.as_secs(),
                });
            }
            Ok(None) => {
                // A git closes its output as it ends: the wait wakes then. Otherwise (its
                // pipes are closed already, or a process it started holds them) it looks
                // again soon, then less often, so a wait never adds much to what git took
                // (at most 1 ms, or a hundredth of the wait so far, up to 5 ms).
                if open {
                    use std::sync::mpsc::RecvTimeoutError;
                    match closed.recv_timeout(pause) {
                        Err(RecvTimeoutError::Timeout) => {}
                        woke => {
                            // Closed: it is exiting; look again in a moment.
                            open = woke.is_ok();
                            pause = Duration::from_micros(50);
                            continue;
                        }
                    }
                } else {
                    std::thread::sleep(pause);
                }
                let most = (started.elapsed() / 100)
                    .clamp(Duration::from_millis(1), Duration::from_millis(5));
                pause = (pause * 2).min(most);
            }
            Err(source) => {
                return Err(ShareError::NoGit {
                    program: program.display().to_string(),
                    source,
                })
            }
        }
    }
}

/// A path's bytes as an argument.
#[cfg(unix)]
fn os_path(bytes: &[u8]) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStrExt;
    OsStr::from_bytes(bytes).to_os_string()
}

#[cfg(not(unix))]
fn os_path(bytes: &[u8]) -> std::ffi::OsString {
    String::from_utf8_lossy(bytes).into_owned().into()
}

pub(crate) fn parse_oid(hex: &str, what: &str) -> Result<ObjectId, ShareError> {
    ObjectId::from_hex(hex.as_bytes()).map_err(|_| ShareError::Malformed {
        object: what.to_string(),
        detail: format!("{hex:?} is not a git object id"),
    })
}

fn last_line(s: &str) -> String {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// git's message, without its hint lines, joined on one line per line of it (at most a
/// few, so a remote that prints pages is still one readable error).
pub(crate) fn git_message(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !l.starts_with("hint:"))
        .collect();
    let keep = lines.len().saturating_sub(8);
    lines[keep..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_hash_is_the_id_git_gives_the_blob() {
        for bytes in [&b""[..], b"one\ntwo\n", &[7u8; 200_000]] {
            let want =
                gix_object::compute_hash(gix_hash::Kind::Sha1, gix_object::Kind::Blob, bytes)
                    .expect("sha1 hashes anything");
            let got = hash_stream(bytes.len() as u64, &mut &bytes[..]).expect("hashed");
            assert_eq!(got, want);
        }
        assert!(
            hash_stream(5, &mut &b"abc"[..]).is_err(),
            "short of its size"
        );
    }

    /// The plain SHA-1 a kept id is checked with gives the id git (and sha1dc) gives, for
    /// any size (across SHA-1's 64-byte blocks and its padding).
    #[test]
    fn a_kept_id_is_checked_against_the_id_git_gives_the_blob() {
        let sizes = [0usize, 1, 55, 56, 63, 64, 65, 119, 4096, 1 << 20];
        for (i, size) in sizes.into_iter().enumerate() {
            let bytes: Vec<u8> = (0..size).map(|j| (j * 31 + i) as u8).collect();
            let want = blob_id(&bytes).expect("hashed");
            assert_eq!(kept_blob_id(&bytes), want, "{size} bytes");
        }
        let abc = plain_sha1(&[b"a", b"", b"bc"]);
        assert_eq!(
            abc,
            oid("a9993e364706816aba3e25717850c26c9cd0d89d"),
            "FIPS 180's \"abc\""
        );
    }

    fn oid(hex: &str) -> ObjectId {
        ObjectId::from_hex(hex.as_bytes()).expect("hex id")
    }

    /// What `read_batch` hands its sink, or its error's text.
    fn batch(answer: &[u8], ids: &[ObjectId]) -> Result<Vec<Vec<u8>>, String> {
        let mut got = Vec::new();
        let mut sink = |_: &ObjectId, _: u64, r: &mut dyn Read| {
            let mut bytes = Vec::new();
            r.read_to_end(&mut bytes).expect("read");
            got.push(bytes);
            Ok(())
        };
        read_batch(answer, ids, &mut sink).map_err(|e| e.to_string())?;
        Ok(got)
    }

    #[test]
    fn a_batch_answer_that_is_not_every_blob_whole_is_an_error_naming_the_blob() {
        let a = oid("a9f8d4c1a3f2e0b7c6d5e4f3a2b1c0d9e8f7a6b5");
        let b = oid("0123456789abcdef0123456789abcdef01234567");
        let ok = format!("{a} blob 4\none\n\n{b} blob 0\n\n");
        assert_eq!(
            batch(ok.as_bytes(), &[a, b]),
            Ok(vec![b"one\n".to_vec(), Vec::new()])
        );
        for (answer, says) in [
            (format!("{a} missing\n"), "missing from the repository"),
            (format!("{a} tree 30\n"), "is a tree, not a blob"),
            (format!("{a} blob 10\nshort"), "stopped inside its 10 bytes"),
            (format!("{b} blob 4\none\n\n"), "(another object)"),
            (String::new(), "(stopped?)"),
        ] {
            let err = batch(answer.as_bytes(), &[a]).expect_err(&answer);
            assert!(err.contains(&format!("blob {a}")), "{err}");
            assert!(err.contains(says), "{answer:?}: {err}");
        }
    }

    #[test]
    fn a_cat_file_that_does_not_answer_is_killed_at_the_timeout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let ok = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&root)
            .status()
            .expect("git init");
        assert!(ok.success());
        // A "git" that reads its input and never answers.
        let slow = root.join("slow-git");
        std::fs::write(&slow, "#!/bin/sh\nexec sleep 60\n").expect("script");
        let mut perms = std::fs::metadata(&slow).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&slow, perms).expect("chmod");
        let repo =
            Repo::at(&slow, &root, root.join(".git"), Duration::from_secs(1)).expect("repository");
        let started = std::time::Instant::now();
        let mut sink = |_: &ObjectId, _: u64, _: &mut dyn Read| Ok(());
        let err = repo
            .cat_blobs(
                &[oid("0123456789abcdef0123456789abcdef01234567")],
                &mut sink,
            )
            .expect_err("no answer");
        assert!(
            matches!(err, ShareError::Timeout { seconds: 1, .. }),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(30), "not waited on");
    }

    #[test]
    fn the_common_dir_read_from_dot_git_is_the_one_git_names() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let git = |cwd: &Path, args: &[&str]| {
            let out = Command::new("git")
                .args(args)
                .current_dir(cwd)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", &root)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@t")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@t")
                .output()
                .expect("git runs");
            assert!(out.status.success(), "git {args:?}: {out:?}");
            String::from_utf8(out.stdout).expect("utf-8")
        };
        git(&root, &["init", "-q", "main"]);
        let main = root.join("main");
        git(&main, &["commit", "-q", "--allow-empty", "-m", "base"]);
        git(&main, &["worktree", "add", "-q", "../linked"]);
        for ws in [&main, &root.join("linked")] {
            let asked = git(
                ws,
                &["rev-parse", "--path-format=absolute", "--git-common-dir"],
            );
            let asked = Path::new(asked.trim()).canonicalize().expect("exists");
            assert_eq!(common_dir_of(ws), Some(asked), "{}", ws.display());
        }
        assert_eq!(common_dir_of(&root), None, "no .git: git is asked");
        std::fs::write(root.join(".git"), "not a gitdir line\n").expect("write");
        assert_eq!(
            common_dir_of(&root),
            None,
            "an unexpected .git: git is asked"
        );
    }

    #[test]
    fn the_filter_capability_is_read_from_what_ls_remote_received() {
        let v2 =
            "08:54:13.0 pkt-line.c:86  packet:    ls-remote< fetch=shallow wait-for-done filter\n";
        assert!(serves_filter(v2.as_bytes()));
        let without = "packet:    ls-remote< fetch=shallow wait-for-done\n";
        assert!(!serves_filter(without.as_bytes()));
        // What a local upload-pack sent is not what the remote offers ls-remote.
        let sent = "packet:  upload-pack> fetch=shallow filter\npacket: ls-remote< fetch=shallow\n";
        assert!(!serves_filter(sent.as_bytes()));
        let v0 = "packet: ls-remote< 3f2a HEAD\0multi_ack thin-pack filter agent=git/2.47\n";
        assert!(serves_filter(v0.as_bytes()));
        let v0_escaped = "packet: ls-remote< 3f2a HEAD\\0multi_ack filter\n";
        assert!(serves_filter(v0_escaped.as_bytes()));
        let a_ref_named_filter = "packet: ls-remote< 3f2a refs/rewind/0b/a/filter\n";
        assert!(!serves_filter(a_ref_named_filter.as_bytes()));
    }
}
