//! `undo --patch` and `redo --patch`: the `git add -p` loop over the target's hunks. Each
//! path's net change in the target is shown hunk by hunk (the hunks `rewind diff`, `undo
//! --hunk` and the review page number), the person answers `y n q a d s e ?` as git defines
//! them, and what was chosen becomes one undo through the executor, planned, merged over
//! later edits and refused exactly as any undo ([`rewind::undo::Request::picks`]). Answers
//! are read a line at a time (git's default), so it works over SSH, in tmux and in an
//! agent's terminal; without a terminal on stdin it refuses.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};

use clap::ValueEnum;
use rewind::engine::RestoreSource;
use rewind::undo::patch::{Compose, EditError, Edited, Patch, Piece};
use rewind::undo::{self, Choice, Direction, PatchFile, Request, Side, Status};

use super::undo::{exit_of, render, Plan};
use crate::cli::context::{Ctx, Invocation};
use crate::cli::exit::{Exit, Failure};
use crate::cli::render::{name, Out};

/// When `--patch` colors its hunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorWhen {
    /// When stdout is a terminal and NO_COLOR is not set
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    fn on(self) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        }
    }
}

/// Runs an interactive undo or redo of `plan`'s target.
pub(super) fn run(
    inv: &Invocation,
    out: &Out,
    plan: Plan,
    color: ColorWhen,
) -> Result<Exit, Failure> {
    let verb = verb(plan.direction);
    refuse_unless_asked(verb, out, "without a terminal: `rewind diff --window ID --path P` numbers a file's hunks and `rewind undo --window ID --path P --hunk N` undoes some; `rewind review` offers them on a page")?;
    let ctx = Ctx::open_as(inv, plan.agent)?;
    let flags = undo::Flags {
        dry_run: plan.dry_run,
        force: false,
        strict: plan.strict,
        hunks: Vec::new(),
        skip_unsafe: false,
    };
    let mut req = Request::from_flags(
        plan.direction,
        plan.target,
        plan.paths,
        ctx.cwd.clone(),
        flags,
    )?;
    let (files, direction) = undo::patch_files(&ctx.session, &req)?;
    if files.is_empty() {
        out.print(&format!("nothing to {verb}\n"));
        return Ok(Exit::Nothing);
    }
    let texts: Vec<Texts> = files.iter().map(Texts::of).collect();
    let mut term = Term {
        input: std::io::stdin().lock(),
        output: std::io::stdout().lock(),
        color: color.on(),
        edit: &edit_in_editor,
    };
    let how = match direction {
        Direction::Undo => Compose::Revert,
        Direction::Redo => Compose::Apply,
    };
    let answers = ask(&mut term, &files, &texts, how)?;
    drop(term);
    let Some(picks) = picks(&files, &texts, &answers, how) else {
        out.print(&format!(
            "nothing chosen: nothing was written (no {verb})\n"
        ));
        return Ok(Exit::Nothing);
    };
    // Everything chosen whole is the plain undo (or redo): its own kind of window, which a
    // plain redo (undo) reverses.
    let everything = picks.len() == files.len() && picks.values().all(|c| *c == Choice::Whole);
    if !everything {
        req.picks = Some(picks);
    }
    let report = undo::run(&ctx.session, &req)?;
    out.print(&render(direction, &report));
    if report.status == Status::Nothing && req.picks.is_some() {
        out.print("the chosen hunks are already as the undo would make them\n");
    }
    Ok(exit_of(&report))
}

/// `--patch` talks to a person: not in `--json`, not without a terminal on stdin.
fn refuse_unless_asked(verb: &str, out: &Out, hint: &str) -> Result<(), Failure> {
    if out.json {
        return Err(Failure::new(
            Exit::Usage,
            format!("{verb} --patch asks about each hunk in words; it cannot answer in --json"),
        ));
    }
    if !std::io::stdin().is_terminal() {
        return Err(Failure::new(
            Exit::Usage,
            format!("{verb} --patch asks about each hunk and needs a terminal on stdin; stdin is not one"),
        )
        .hint(hint));
    }
    Ok(())
}

/// `restore PATH … --patch`: the hunks from the file as it is to the stored version, each
/// taken or not (`Restore this hunk`), then one restore of what was chosen, refused when the
/// file changed while the person chose.
pub(super) fn restore(
    inv: &Invocation,
    out: &Out,
    path: &std::path::Path,
    source: RestoreSource,
    color: ColorWhen,
) -> Result<Exit, Failure> {
    refuse_unless_asked("restore", out, "without a terminal: restore the version whole (without --patch), or undo the restore's hunks afterwards with `rewind undo --window W --path P --hunk N`")?;
    let ctx = Ctx::open(inv)?;
    let version = ctx
        .session
        .history()
        .restore_bytes(path, &ctx.cwd, source)?;
    let now = std::fs::read(ctx.cwd.join(path)).ok();
    let whole = || {
        Failure::new(
            Exit::Usage,
            format!(
                "restore --patch needs {} and the version as text; restore it whole (without --patch)",
                name(&path.display().to_string())
            ),
        )
    };
    let (Some(now), Some(version)) = (now, version) else {
        return Err(whole());
    };
    let (Ok(now_text), Ok(version_text)) =
        (rewind::merge::text(&now), rewind::merge::text(&version))
    else {
        return Err(whole());
    };
    let patch = Patch::new(now_text, version_text);
    if patch.hunks().is_empty() {
        out.print("nothing to restore: the file already holds that version\n");
        return Ok(Exit::Nothing);
    }
    let mut term = Term {
        input: std::io::stdin().lock(),
        output: std::io::stdout().lock(),
        color: color.on(),
        edit: &edit_in_editor,
    };
    let shown = name(&path.display().to_string()).into_owned();
    let head =
        format!("diff a/{shown} b/{shown}\n--- a/{shown} (now)\n+++ b/{shown} (the version)\n");
    term.say(&head)?;
    let mut pieces: Vec<(Piece, Option<Answer>)> =
        patch.hunks().iter().map(|h| (*h, None)).collect();
    ask_pieces(&mut term, &patch, &mut pieces, Compose::Apply, "Restore")?;
    drop(term);
    let Some(text) = composed(&patch, &pieces, Compose::Apply) else {
        out.print("nothing chosen: nothing was written (no restore)\n");
        return Ok(Exit::Nothing);
    };
    let id = rewind::ids::BlobId::of(&now);
    let report = ctx
        .session
        .writer()?
        .restore_text(path, &ctx.cwd, id, &text)?;
    out.print(&format!(
        "restored the chosen hunks of {} (recorded as window {}, `rewind undo` reverses it)\n",
        name(&report.path),
        report.window_id
    ));
    Ok(Exit::Ok)
}

/// The text the chosen and edited `pieces` make (`None`: nothing chosen).
fn composed(
    patch: &Patch<'_>,
    pieces: &[(Piece, Option<Answer>)],
    how: Compose,
) -> Option<Vec<u8>> {
    let chosen: Vec<Piece> = pieces
        .iter()
        .filter(|(_, a)| *a == Some(Answer::Yes))
        .map(|(p, _)| *p)
        .collect();
    let edited: Vec<Edited> = pieces
        .iter()
        .filter_map(|(_, a)| match a {
            Some(Answer::Edited(e)) => Some(e.clone()),
            _ => None,
        })
        .collect();
    if chosen.is_empty() && edited.is_empty() {
        return None;
    }
    // Overlapping edits were refused when they were made.
    patch.compose(&chosen, &edited, how).ok()
}

fn verb(direction: Direction) -> &'static str {
    match direction {
        Direction::Undo => "undo",
        Direction::Redo => "redo",
    }
}

/// A path's sides as text, when both are (then it is offered hunk by hunk).
struct Texts {
    before: Option<String>,
    after: Option<String>,
}

impl Texts {
    fn of(f: &PatchFile) -> Texts {
        let text = |s: &Side| match s {
            Side::Bytes(b) => rewind::merge::text(b).ok().map(str::to_string),
            _ => None,
        };
        Texts {
            before: text(&f.before),
            after: text(&f.after),
        }
    }

    fn patch(&self) -> Option<Patch<'_>> {
        match (&self.before, &self.after) {
            (Some(b), Some(a)) => Some(Patch::new(b, a)),
            _ => None,
        }
    }
}

/// What was answered for one piece.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Yes,
    No,
    Edited(Edited),
}

/// One path's answers: the whole change's, or each piece's (pieces in file order, after
/// splits).
#[derive(Debug, Clone)]
enum FileAnswers {
    Whole(Option<Answer>),
    Pieces(Vec<(Piece, Option<Answer>)>),
}

/// The terminal the loop talks to, and how it edits a hunk (a seam for the unit tests).
struct Term<'e, R: BufRead, W: Write> {
    input: R,
    output: W,
    color: bool,
    edit: &'e dyn Fn(&str) -> Result<String, String>,
}

impl<R: BufRead, W: Write> Term<'_, R, W> {
    fn say(&mut self, text: &str) -> Result<(), Failure> {
        self.output
            .write_all(text.as_bytes())
            .and_then(|()| self.output.flush())
            .map_err(|e| Failure::new(Exit::Error, format!("cannot write to the terminal: {e}")))
    }

    /// One answer: the first character of the next line (`None`: end of input, which
    /// quits, as in git).
    fn answer(&mut self, prompt: &str) -> Result<Option<char>, Failure> {
        let prompt = match self.color {
            true => format!("\x1b[1;34m{prompt}\x1b[m"),
            false => prompt.to_string(),
        };
        self.say(&prompt)?;
        let mut line = String::new();
        let n = self
            .input
            .read_line(&mut line)
            .map_err(|e| Failure::new(Exit::Error, format!("cannot read the answer: {e}")))?;
        if n == 0 {
            self.say("\n")?;
            return Ok(None);
        }
        Ok(Some(line.trim().chars().next().unwrap_or('\0')))
    }
}

/// Asks about every piece of every path, in order.
fn ask<R: BufRead, W: Write>(
    term: &mut Term<'_, R, W>,
    files: &[PatchFile],
    texts: &[Texts],
    how: Compose,
) -> Result<Vec<FileAnswers>, Failure> {
    let what = match how {
        Compose::Revert => "Undo",
        Compose::Apply => "Redo",
    };
    let mut answers = Vec::with_capacity(files.len());
    let mut quit = false;
    for (file, text) in files.iter().zip(texts) {
        let patch = text.patch();
        let mut a = match &patch {
            Some(p) => FileAnswers::Pieces(p.hunks().iter().map(|h| (*h, None)).collect()),
            None => FileAnswers::Whole(None),
        };
        if !quit {
            term.say(&header(file, term.color))?;
            quit = match (&patch, &mut a) {
                (Some(p), FileAnswers::Pieces(pieces)) => ask_pieces(term, p, pieces, how, what)?,
                (_, FileAnswers::Whole(answer)) => ask_whole(term, file, answer, what)?,
                _ => false,
            };
        }
        answers.push(a);
    }
    Ok(answers)
}

/// `diff a/P b/P` and the `---`/`+++` lines, as git prints a file's header.
fn header(file: &PatchFile, color: bool) -> String {
    let path = file.path.display();
    let path = name(&path);
    let side = |s: &Side, prefix: &str| match s {
        Side::Absent => "/dev/null".to_string(),
        _ => format!("{prefix}/{path}"),
    };
    let text = format!(
        "diff a/{path} b/{path}\n--- {}\n+++ {}\n",
        side(&file.before, "a"),
        side(&file.after, "b")
    );
    match color {
        true => format!("\x1b[1m{}\x1b[m\n", text.trim_end()),
        false => text,
    }
}

/// The loop over one text file's pieces. `true`: the person quit.
fn ask_pieces<R: BufRead, W: Write>(
    term: &mut Term<'_, R, W>,
    patch: &Patch<'_>,
    pieces: &mut Vec<(Piece, Option<Answer>)>,
    how: Compose,
    what: &str,
) -> Result<bool, Failure> {
    let mut i = 0;
    while i < pieces.len() {
        let piece = pieces[i].0;
        let splits = patch.split(piece).len() > 1;
        term.say(&patch.render(piece, false, term.color))?;
        let keys = if splits {
            "y,n,q,a,d,s,e,?"
        } else {
            "y,n,q,a,d,e,?"
        };
        let prompt = format!("({}/{}) {what} this hunk [{keys}]? ", i + 1, pieces.len());
        match term.answer(&prompt)? {
            Some('y') => {
                pieces[i].1 = Some(Answer::Yes);
                i += 1;
            }
            Some('n') => {
                pieces[i].1 = Some(Answer::No);
                i += 1;
            }
            Some(key @ ('a' | 'd')) => {
                let answer = if key == 'a' { Answer::Yes } else { Answer::No };
                for (_, a) in pieces[i..].iter_mut().filter(|(_, a)| a.is_none()) {
                    *a = Some(answer.clone());
                }
                i = pieces.len();
            }
            Some('q') | None => return Ok(true),
            Some('s') if splits => {
                let parts = patch.split(piece);
                term.say(&format!("Split into {} hunks.\n", parts.len()))?;
                pieces.splice(i..=i, parts.into_iter().map(|p| (p, None)));
            }
            Some('e') => {
                if let Some(edited) = edit(term, patch, piece, how, pieces)? {
                    pieces[i].1 = Some(Answer::Edited(edited));
                    i += 1;
                }
            }
            _ => term.say(&help(what, splits, true))?,
        }
    }
    Ok(false)
}

/// The loop for a path offered whole (created, deleted, not text). `true`: quit.
fn ask_whole<R: BufRead, W: Write>(
    term: &mut Term<'_, R, W>,
    file: &PatchFile,
    answer: &mut Option<Answer>,
    what: &str,
) -> Result<bool, Failure> {
    let (shown, noun) = match (&file.before, &file.after) {
        (Side::Absent, _) => ("created by the change\n", "creation"),
        (_, Side::Absent) => ("deleted by the change\n", "deletion"),
        (Side::Unknown, _) | (_, Side::Unknown) => (
            "rewind does not hold both sides of this change (the undo will say why)\n",
            "change",
        ),
        _ => ("Binary files differ (or not text)\n", "change"),
    };
    term.say(shown)?;
    loop {
        let prompt = format!("(1/1) {what} this {noun} [y,n,q,a,d,?]? ");
        match term.answer(&prompt)? {
            Some('y' | 'a') => *answer = Some(Answer::Yes),
            Some('n' | 'd') => *answer = Some(Answer::No),
            Some('q') | None => return Ok(true),
            _ => {
                term.say(&help(what, false, false))?;
                continue;
            }
        }
        return Ok(false);
    }
}

/// `e`: the piece in the editor as the change the undo makes there; the person's version
/// replaces the piece's lines. `None`: given up or not applicable (the piece is asked about
/// again).
fn edit<R: BufRead, W: Write>(
    term: &mut Term<'_, R, W>,
    patch: &Patch<'_>,
    piece: Piece,
    how: Compose,
    pieces: &[(Piece, Option<Answer>)],
) -> Result<Option<Edited>, Failure> {
    let verb = match how {
        Compose::Revert => "undo",
        Compose::Apply => "redo",
    };
    let text = patch.edit_text(piece, how, verb);
    let written = match (term.edit)(&text) {
        Ok(t) => t,
        Err(e) => {
            term.say(&format!("cannot edit the hunk: {e}\n"))?;
            return Ok(None);
        }
    };
    let edited = match patch.parse_edit(piece, how, &written) {
        Ok(e) => e,
        Err(EditError::Empty) => {
            term.say("the edited hunk is empty: edit given up\n")?;
            return Ok(None);
        }
        Err(EditError::DoesNotApply) => {
            term.say("the edited hunk does not apply (its ' ' and '-' lines must be the file's lines as they are): asked again\n")?;
            return Ok(None);
        }
    };
    // Two edited pieces that share context lines cannot both replace them.
    let others: Vec<Edited> = pieces
        .iter()
        .filter_map(|(_, a)| match a {
            Some(Answer::Edited(e)) => Some(e.clone()),
            _ => None,
        })
        .chain(std::iter::once(edited.clone()))
        .collect();
    if patch.compose(&[], &others, how).is_err() {
        term.say("the edited hunk overlaps another hunk you edited: asked again\n")?;
        return Ok(None);
    }
    Ok(Some(edited))
}

/// The help `?` prints (git's words, for an undo).
fn help(what: &str, splits: bool, edits: bool) -> String {
    let w = what.to_lowercase();
    let mut text = format!(
        "y - {w} this hunk\n\
         n - do not {w} this hunk\n\
         q - quit; do not {w} this hunk or any of the remaining ones\n\
         a - {w} this hunk and all later hunks in the file\n\
         d - do not {w} this hunk or any of the later hunks in the file\n"
    );
    if splits {
        text.push_str("s - split the current hunk into smaller hunks\n");
    }
    if edits {
        text.push_str("e - manually edit the current hunk ($VISUAL, $EDITOR, else vi)\n");
    }
    text.push_str("? - print help\n");
    text
}

/// The choice per path from the answers (`None`: nothing chosen).
fn picks(
    files: &[PatchFile],
    texts: &[Texts],
    answers: &[FileAnswers],
    how: Compose,
) -> Option<BTreeMap<rewind::workspace::RelPath, Choice>> {
    let mut picks = BTreeMap::new();
    for ((file, text), answer) in files.iter().zip(texts).zip(answers) {
        let choice = match answer {
            FileAnswers::Whole(Some(Answer::Yes)) => Choice::Whole,
            FileAnswers::Whole(_) => continue,
            FileAnswers::Pieces(pieces) => {
                if pieces.iter().all(|(_, a)| *a == Some(Answer::Yes)) {
                    Choice::Whole
                } else {
                    match composed(&text.patch()?, pieces, how) {
                        Some(bytes) => Choice::Text(bytes),
                        None => continue,
                    }
                }
            }
        };
        picks.insert(file.path.clone(), choice);
    }
    (!picks.is_empty()).then_some(picks)
}

/// Opens `text` in the person's editor (`$VISUAL`, else `$EDITOR`, else `vi`, run by the
/// shell as git runs its editor) and returns what they saved.
fn edit_in_editor(text: &str) -> Result<String, String> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|e| !e.is_empty())
        .or_else(|| std::env::var("EDITOR").ok().filter(|e| !e.is_empty()))
        .unwrap_or_else(|| "vi".to_string());
    let file = tempfile::Builder::new()
        .prefix("rewind-hunk-")
        .suffix(".diff")
        .tempfile()
        .map_err(|e| format!("cannot make a file to edit: {e}"))?;
    std::fs::write(file.path(), text).map_err(|e| e.to_string())?;
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(&editor)
        .arg(file.path())
        .status()
        .map_err(|e| format!("cannot run {editor}: {e}"))?;
    if !status.success() {
        return Err(format!("{editor} exited with {status}"));
    }
    std::fs::read_to_string(file.path()).map_err(|e| e.to_string())
}
