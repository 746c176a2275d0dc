//! The proof rules for one tool call and one path (pure: bytes in, verdict out). A change is
//! `derived` only when the tool's own input turns the snapshot's before bytes into its after
//! bytes exactly; anything else is refused with the reason. A `completed` status, a path in
//! a patch part, a hash without text, the current disk: none of them is ever proof, so none
//! of them is an input here.

use serde_json::Value;

use super::opencode::ToolPart;
use crate::model::MetadataReason;

/// The file tools whose input names the paths they change, and can prove a transition.
pub(crate) const FILE_TOOLS: &[&str] = &["write", "edit", "apply_patch"];

/// Tools that change no file (their steps' tree differences are someone else's).
pub(crate) const READ_ONLY_TOOLS: &[&str] = &[
    "read",
    "glob",
    "grep",
    "list",
    "webfetch",
    "websearch",
    "codesearch",
    "todowrite",
    "todoread",
    "question",
    "skill",
    "lsp",
    "invalid",
];

/// Tools that change files without naming them (a shell, a subagent).
pub(crate) const SHELL_TOOLS: &[&str] = &["bash", "task"];

/// The paths (as the agent spelled them) a file tool's input says it changes.
pub(crate) fn claimed_paths(tool: &ToolPart) -> Vec<String> {
    match tool.tool.as_str() {
        "write" | "edit" => tool
            .input
            .get("filePath")
            .and_then(Value::as_str)
            .map(|p| vec![p.to_string()])
            .unwrap_or_default(),
        "apply_patch" => patch_paths(
            tool.input
                .get("patchText")
                .and_then(Value::as_str)
                .unwrap_or(""),
        ),
        _ => Vec::new(),
    }
}

/// The file headers of an OpenCode patch (`*** Add File: p`, `*** Update File: p`,
/// `*** Delete File: p`, `*** Move to: p`).
pub(crate) fn patch_paths(text: &str) -> Vec<String> {
    const HEADERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    text.lines()
        .filter_map(|l| {
            HEADERS
                .iter()
                .find_map(|h| l.strip_prefix(h))
                .map(|p| p.trim().to_string())
        })
        .collect()
}

/// Does `tool`'s input prove the transition `before` → `after` (`None`: absent)?
pub fn prove(
    tool: &ToolPart,
    rel: &str,
    before: Option<&[u8]>,
    after: Option<&[u8]>,
) -> Result<(), MetadataReason> {
    // A `write` that kept no content proves only a create, by the tree pair.
    let content = tool.input.get("content");
    if tool.tool == "write" && matches!(content, None | Some(Value::Null)) {
        return match (before, after) {
            (None, Some(_)) => Ok(()),
            _ => Err(MetadataReason::NotProven),
        };
    }
    if after.is_some_and(is_binary) || (tool.tool != "write" && before.is_some_and(is_binary)) {
        return Err(MetadataReason::Binary);
    }
    if apply(tool, rel, before)?.as_deref() == after {
        Ok(())
    } else {
        Err(MetadataReason::NotProven)
    }
}

/// What `tool`'s input makes of path `rel` whose bytes were `before` (`None`: absent), when
/// the input says so exactly: the written content, the one occurrence replaced, the patch's
/// section applied strictly (`None`: deleted).
pub fn apply(
    tool: &ToolPart,
    rel: &str,
    before: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, MetadataReason> {
    match tool.tool.as_str() {
        "write" => match tool.input.get("content") {
            Some(Value::String(content)) => Ok(Some(content.as_bytes().to_vec())),
            _ => Err(MetadataReason::NotProven),
        },
        "edit" => apply_edit_input(&tool.input, before).map(Some),
        "apply_patch" => apply_patch(&tool.input, rel, before),
        _ => Err(MetadataReason::NotProven),
    }
}

/// `edit`: `oldString` replaced by `newString` in the before text ([`apply_edit`]).
fn apply_edit_input(input: &Value, before: Option<&[u8]>) -> Result<Vec<u8>, MetadataReason> {
    let Some(before) = before else {
        return Err(MetadataReason::NotProven);
    };
    if is_binary(before) {
        return Err(MetadataReason::Binary);
    }
    let Ok(before) = std::str::from_utf8(before) else {
        return Err(MetadataReason::Binary);
    };
    let text = |k: &str| input.get(k).and_then(Value::as_str);
    let (Some(old), Some(new)) = (text("oldString"), text("newString")) else {
        return Err(MetadataReason::NotProven);
    };
    let replace_all = input.get("replaceAll").and_then(Value::as_bool) == Some(true);
    apply_edit(before, old, new, replace_all).map(String::into_bytes)
}

/// One exact-replacement edit (OpenCode's `edit`, Claude Code's `Edit` and each edit of its
/// `MultiEdit`): `old` must occur exactly once in `before`; the result replaces it with
/// `new`. `replace_all`, an empty `old` or several occurrences are ambiguous.
pub(crate) fn apply_edit(
    before: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<String, MetadataReason> {
    if replace_all || old.is_empty() {
        return Err(MetadataReason::AmbiguousEdit);
    }
    let mut found = before.match_indices(old);
    let Some((at, _)) = found.next() else {
        return Err(MetadataReason::NotProven);
    };
    if found.next().is_some() {
        return Err(MetadataReason::AmbiguousEdit);
    }
    Ok([&before[..at], new, &before[at + old.len()..]].concat())
}

/// `apply_patch` (OpenCode's patch format: `*** Begin Patch`, then per file `*** Add File:`,
/// `*** Delete File:` or `*** Update File:` with `@@` hunks of ` `/`-`/`+` lines): the
/// section of the patch for this path, applied strictly (each hunk's old lines found exactly
/// once, in order). A delete needs the file present; an add needs it absent. Moves and
/// anything unparsed are `unsupported-patch`.
fn apply_patch(
    input: &Value,
    rel: &str,
    before: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, MetadataReason> {
    let text = input.get("patchText").and_then(Value::as_str).unwrap_or("");
    apply_patch_text(text, rel, before)
}

/// Whether `bytes` are not text: a NUL byte, or not UTF-8. No text tool's input proves
/// such a file's bytes (a NUL in a JSON string is an escape, not evidence of text).
pub(crate) fn is_binary(bytes: &[u8]) -> bool {
    bytes.contains(&0) || std::str::from_utf8(bytes).is_err()
}

/// [`apply_patch`] of a patch's text (OpenCode's `patchText`, Codex's `apply_patch` input).
pub(crate) fn apply_patch_text(
    text: &str,
    rel: &str,
    before: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, MetadataReason> {
    let Some(section) = patch_sections(text)
        .into_iter()
        .find(|s| path_matches(&s.path, rel))
    else {
        return Err(MetadataReason::UnsupportedPatch);
    };
    if section.moved {
        return Err(MetadataReason::UnsupportedPatch);
    }
    if before.is_some_and(is_binary) {
        return Err(MetadataReason::Binary);
    }
    let Ok(before) = before.map(std::str::from_utf8).transpose() else {
        return Err(MetadataReason::Binary);
    };
    match (section.op, before) {
        (PatchOp::Delete, Some(_)) => Ok(None),
        (PatchOp::Add, None) => {
            let mut content = section
                .lines
                .iter()
                .map(|l| l.strip_prefix('+').ok_or(MetadataReason::UnsupportedPatch))
                .collect::<Result<Vec<_>, _>>()?
                .join("\n");
            content.push('\n');
            Ok(Some(content.into_bytes()))
        }
        (PatchOp::Update, Some(before)) => {
            apply_hunks(before, &section.lines).map(|t| Some(t.into_bytes()))
        }
        _ => Err(MetadataReason::NotProven),
    }
}

/// Whether the patch's spelling of a path (relative, or absolute under the worktree) names
/// workspace path `rel`.
fn path_matches(patch_path: &str, rel: &str) -> bool {
    patch_path == rel || patch_path.ends_with(&format!("/{rel}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchOp {
    Add,
    Delete,
    Update,
}

/// One file's part of a patch: its lines after the header.
struct Section<'a> {
    path: String,
    op: PatchOp,
    moved: bool,
    lines: Vec<&'a str>,
}

fn patch_sections(text: &str) -> Vec<Section<'_>> {
    let mut out: Vec<Section<'_>> = Vec::new();
    for line in text.lines() {
        let header = [
            ("*** Add File: ", PatchOp::Add),
            ("*** Delete File: ", PatchOp::Delete),
            ("*** Update File: ", PatchOp::Update),
        ]
        .into_iter()
        .find_map(|(h, op)| line.strip_prefix(h).map(|p| (p.trim().to_string(), op)));
        if let Some((path, op)) = header {
            out.push(Section {
                path,
                op,
                moved: false,
                lines: Vec::new(),
            });
        } else if line.starts_with("*** Move to: ") {
            if let Some(s) = out.last_mut() {
                s.moved = true;
            }
        } else if line.starts_with("*** ") {
            // `*** Begin Patch`, `*** End Patch`, `*** End of File`: no content.
        } else if let Some(s) = out.last_mut() {
            s.lines.push(line);
        }
    }
    out
}

/// Apply `@@`-separated hunks to `before`, each hunk's old lines (context and `-`) found
/// exactly once at or after the previous hunk.
fn apply_hunks(before: &str, lines: &[&str]) -> Result<String, MetadataReason> {
    let mut text: Vec<String> = before.split('\n').map(str::to_string).collect();
    let mut from = 0;
    for hunk in lines.split(|l| l.starts_with("@@")) {
        if hunk.is_empty() {
            continue;
        }
        let mut old = Vec::new();
        let mut new = Vec::new();
        for l in hunk {
            match l.split_at_checked(1) {
                Some((" ", rest)) => {
                    old.push(rest);
                    new.push(rest);
                }
                Some(("-", rest)) => old.push(rest),
                Some(("+", rest)) => new.push(rest),
                None => {
                    old.push("");
                    new.push("");
                }
                _ => return Err(MetadataReason::UnsupportedPatch),
            }
        }
        if old.is_empty() {
            return Err(MetadataReason::UnsupportedPatch);
        }
        let found: Vec<usize> = (from..=text.len().saturating_sub(old.len()))
            .filter(|&i| text[i..i + old.len()].iter().zip(&old).all(|(a, b)| a == b))
            .collect();
        let [at] = found.as_slice() else {
            return Err(MetadataReason::NotProven);
        };
        let at = *at;
        text.splice(at..at + old.len(), new.iter().map(|s| s.to_string()));
        from = at + new.len();
    }
    Ok(text.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, input: Value) -> ToolPart {
        ToolPart {
            part_id: "prt_1".into(),
            tool: name.into(),
            call_id: Some("call_1".into()),
            status: Some("completed".into()),
            input,
            started_ms: None,
        }
    }

    #[test]
    fn a_write_is_proven_only_by_its_content() {
        let w = tool("write", json!({"filePath": "/w/a", "content": "new\n"}));
        assert_eq!(prove(&w, "a", None, Some(b"new\n")), Ok(()));
        assert_eq!(prove(&w, "a", Some(b"old\n"), Some(b"new\n")), Ok(()));
        assert_eq!(
            prove(&w, "a", None, Some(b"new\nplus the user's line\n")),
            Err(MetadataReason::NotProven)
        );
        assert_eq!(
            prove(&w, "a", Some(b"x"), None),
            Err(MetadataReason::NotProven)
        );
        let no_content = tool("write", json!({"filePath": "/w/a"}));
        assert_eq!(
            prove(&no_content, "a", None, Some(b"x")),
            Ok(()),
            "a create"
        );
        assert_eq!(
            prove(&no_content, "a", Some(b"y"), Some(b"x")),
            Err(MetadataReason::NotProven),
            "an overwrite without the content proves nothing"
        );
    }

    #[test]
    fn an_edit_is_proven_by_one_occurrence_replaced() {
        let e = tool(
            "edit",
            json!({"filePath": "/w/a", "oldString": "two", "newString": "TWO"}),
        );
        assert_eq!(
            prove(&e, "a", Some(b"one\ntwo\n"), Some(b"one\nTWO\n")),
            Ok(())
        );
        assert_eq!(
            prove(&e, "a", Some(b"one\ntwo\n"), Some(b"one\nTWO\nmore\n")),
            Err(MetadataReason::NotProven)
        );
        assert_eq!(
            prove(&e, "a", Some(b"two two\n"), Some(b"TWO two\n")),
            Err(MetadataReason::AmbiguousEdit)
        );
        assert_eq!(
            prove(&e, "a", Some(b"none\n"), Some(b"none\n")),
            Err(MetadataReason::NotProven)
        );
        let all = tool(
            "edit",
            json!({"oldString": "two", "newString": "TWO", "replaceAll": true}),
        );
        assert_eq!(
            prove(&all, "a", Some(b"two\n"), Some(b"TWO\n")),
            Err(MetadataReason::AmbiguousEdit)
        );
        let empty = tool("edit", json!({"oldString": "", "newString": "x"}));
        assert_eq!(
            prove(&empty, "a", Some(b""), Some(b"x")),
            Err(MetadataReason::AmbiguousEdit)
        );
        assert_eq!(
            prove(&e, "a", Some(&[0xff, b't', b'w', b'o']), Some(b"TWO")),
            Err(MetadataReason::Binary)
        );
    }

    #[test]
    fn a_patch_is_proven_by_applying_its_own_hunks() {
        let del = tool(
            "apply_patch",
            json!({"patchText": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"}),
        );
        assert_eq!(claimed_paths(&del), vec!["a.txt".to_string()]);
        assert_eq!(prove(&del, "a.txt", Some(b"x"), None), Ok(()));
        let upd = tool(
            "apply_patch",
            json!({"patchText": "*** Begin Patch\n*** Update File: src/a.txt\n@@\n one\n-two\n+TWO\n*** Add File: b.txt\n+new\n+file\n*** End Patch"}),
        );
        assert_eq!(
            claimed_paths(&upd),
            vec!["src/a.txt".to_string(), "b.txt".into()]
        );
        assert_eq!(
            prove(
                &upd,
                "src/a.txt",
                Some(b"one\ntwo\nthree\n"),
                Some(b"one\nTWO\nthree\n")
            ),
            Ok(())
        );
        assert_eq!(
            prove(
                &upd,
                "src/a.txt",
                Some(b"one\ntwo\n"),
                Some(b"one\nTWO\nuser\n")
            ),
            Err(MetadataReason::NotProven)
        );
        assert_eq!(
            prove(
                &upd,
                "src/a.txt",
                Some(b"one\ntwo\none\ntwo\n"),
                Some(b"one\nTWO\none\ntwo\n")
            ),
            Err(MetadataReason::NotProven),
            "the hunk matches twice"
        );
        assert_eq!(prove(&upd, "b.txt", None, Some(b"new\nfile\n")), Ok(()));
        assert_eq!(
            prove(&upd, "b.txt", None, Some(b"new\nfile")),
            Err(MetadataReason::NotProven)
        );
        assert_eq!(
            prove(&upd, "c.txt", None, Some(b"x")),
            Err(MetadataReason::UnsupportedPatch)
        );
        let mv = tool(
            "apply_patch",
            json!({"patchText": "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y\n*** End Patch"}),
        );
        assert_eq!(
            prove(&mv, "a.txt", Some(b"x\n"), None),
            Err(MetadataReason::UnsupportedPatch)
        );
    }

    #[test]
    fn content_with_a_nul_byte_is_binary_whatever_the_tool() {
        let w = tool(
            "write",
            json!({"filePath": "/w/a", "content": "\u{0}\u{1}bin\u{0}"}),
        );
        assert_eq!(
            prove(&w, "a", None, Some(b"\0\x01bin\0")),
            Err(MetadataReason::Binary)
        );
        let e = tool(
            "edit",
            json!({"filePath": "/w/a", "oldString": "two", "newString": "TWO"}),
        );
        assert_eq!(
            prove(&e, "a", Some(b"one\0two\n"), Some(b"one\0TWO\n")),
            Err(MetadataReason::Binary)
        );
        let p = tool(
            "apply_patch",
            json!({"patchText": "*** Begin Patch\n*** Update File: a\n@@\n-two\n+TWO\n*** End Patch"}),
        );
        assert_eq!(
            prove(&p, "a", Some(b"\0\ntwo\n"), Some(b"\0\nTWO\n")),
            Err(MetadataReason::Binary)
        );
        assert!(!is_binary(b"plain text\n"));
        assert!(is_binary(&[0xff, b'a']));
    }

    #[test]
    fn other_tools_prove_nothing() {
        let b = tool("bash", json!({"command": "sed -i s/a/b/ f"}));
        assert!(claimed_paths(&b).is_empty());
        assert_eq!(
            prove(&b, "f", Some(b"a"), Some(b"b")),
            Err(MetadataReason::NotProven)
        );
    }
}
