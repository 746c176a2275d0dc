//! The proof rules for one tool call and one path (pure: bytes in, verdict out). A change is
//! `derived` only when the tool's own input turns the snapshot's before bytes into its after
//! bytes exactly; anything else is refused with the reason. A `completed` status, a path in
//! a patch part, a hash without text, the current disk: none of them is ever proof, so none
//! of them is an input here.

use serde_json::Value;

use super::opencode::ToolPart;
use crate::model::MetadataReason;

/// The file tools whose input names the paths they change, and can prove a transition.
pub const FILE_TOOLS: &[&str] = &["write", "edit", "apply_patch"];

/// Tools that change no file (their steps' tree differences are someone else's).
pub const READ_ONLY_TOOLS: &[&str] = &[
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
pub const SHELL_TOOLS: &[&str] = &["bash", "task"];

/// The paths (as the agent spelled them) a file tool's input says it changes.
pub fn claimed_paths(tool: &ToolPart) -> Vec<String> {
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
fn patch_paths(text: &str) -> Vec<String> {
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
    before: Option<&[u8]>,
    after: Option<&[u8]>,
) -> Result<(), MetadataReason> {
    match tool.tool.as_str() {
        "write" => prove_write(&tool.input, before, after),
        "edit" => prove_edit(&tool.input, before, after),
        "apply_patch" => prove_patch(&tool.input, before, after),
        _ => Err(MetadataReason::NotProven),
    }
}

/// `write`: the after bytes are the written content; without content, only a create
/// (absent before, present after) is proven by the tree pair.
fn prove_write(
    input: &Value,
    before: Option<&[u8]>,
    after: Option<&[u8]>,
) -> Result<(), MetadataReason> {
    let Some(after) = after else {
        return Err(MetadataReason::NotProven);
    };
    match input.get("content") {
        Some(Value::String(content)) if content.as_bytes() == after => Ok(()),
        Some(Value::String(_)) => Err(MetadataReason::NotProven),
        None | Some(Value::Null) if before.is_none() => Ok(()),
        _ => Err(MetadataReason::NotProven),
    }
}

/// `edit`: `oldString` occurs exactly once in the before text and replacing it with
/// `newString` gives the after text. `replaceAll`, an empty `oldString` or several
/// occurrences are ambiguous.
fn prove_edit(
    input: &Value,
    before: Option<&[u8]>,
    after: Option<&[u8]>,
) -> Result<(), MetadataReason> {
    let (Some(before), Some(after)) = (before, after) else {
        return Err(MetadataReason::NotProven);
    };
    let (Ok(before), Ok(after)) = (std::str::from_utf8(before), std::str::from_utf8(after)) else {
        return Err(MetadataReason::Binary);
    };
    let text = |k: &str| input.get(k).and_then(Value::as_str);
    let (Some(old), Some(new)) = (text("oldString"), text("newString")) else {
        return Err(MetadataReason::NotProven);
    };
    if input.get("replaceAll").and_then(Value::as_bool) == Some(true) || old.is_empty() {
        return Err(MetadataReason::AmbiguousEdit);
    }
    let mut found = before.match_indices(old);
    let Some((at, _)) = found.next() else {
        return Err(MetadataReason::NotProven);
    };
    if found.next().is_some() {
        return Err(MetadataReason::AmbiguousEdit);
    }
    let edited = [&before[..at], new, &before[at + old.len()..]].concat();
    if edited == after {
        Ok(())
    } else {
        Err(MetadataReason::NotProven)
    }
}

/// `apply_patch`: a deleted file is proven by the tree pair (present before, absent after);
/// added and updated files are not verified yet (their hunks would have to be applied and
/// compared), nor are moves.
fn prove_patch(
    input: &Value,
    before: Option<&[u8]>,
    after: Option<&[u8]>,
) -> Result<(), MetadataReason> {
    let text = input.get("patchText").and_then(Value::as_str).unwrap_or("");
    let only_deletes = text.lines().all(|l| {
        !(l.starts_with("*** Add File: ")
            || l.starts_with("*** Update File: ")
            || l.starts_with("*** Move to: "))
    });
    if only_deletes && before.is_some() && after.is_none() {
        Ok(())
    } else {
        Err(MetadataReason::UnsupportedPatch)
    }
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
        }
    }

    #[test]
    fn a_write_is_proven_only_by_its_content() {
        let w = tool("write", json!({"filePath": "/w/a", "content": "new\n"}));
        assert_eq!(prove(&w, None, Some(b"new\n")), Ok(()));
        assert_eq!(prove(&w, Some(b"old\n"), Some(b"new\n")), Ok(()));
        assert_eq!(
            prove(&w, None, Some(b"new\nplus the user's line\n")),
            Err(MetadataReason::NotProven)
        );
        assert_eq!(prove(&w, Some(b"x"), None), Err(MetadataReason::NotProven));
        let no_content = tool("write", json!({"filePath": "/w/a"}));
        assert_eq!(prove(&no_content, None, Some(b"x")), Ok(()), "a create");
        assert_eq!(
            prove(&no_content, Some(b"y"), Some(b"x")),
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
        assert_eq!(prove(&e, Some(b"one\ntwo\n"), Some(b"one\nTWO\n")), Ok(()));
        assert_eq!(
            prove(&e, Some(b"one\ntwo\n"), Some(b"one\nTWO\nmore\n")),
            Err(MetadataReason::NotProven)
        );
        assert_eq!(
            prove(&e, Some(b"two two\n"), Some(b"TWO two\n")),
            Err(MetadataReason::AmbiguousEdit)
        );
        assert_eq!(
            prove(&e, Some(b"none\n"), Some(b"none\n")),
            Err(MetadataReason::NotProven)
        );
        let all = tool(
            "edit",
            json!({"oldString": "two", "newString": "TWO", "replaceAll": true}),
        );
        assert_eq!(
            prove(&all, Some(b"two\n"), Some(b"TWO\n")),
            Err(MetadataReason::AmbiguousEdit)
        );
        let empty = tool("edit", json!({"oldString": "", "newString": "x"}));
        assert_eq!(
            prove(&empty, Some(b""), Some(b"x")),
            Err(MetadataReason::AmbiguousEdit)
        );
        assert_eq!(
            prove(&e, Some(&[0xff, b't', b'w', b'o']), Some(b"TWO")),
            Err(MetadataReason::Binary)
        );
    }

    #[test]
    fn a_patch_proves_only_a_delete() {
        let del = tool(
            "apply_patch",
            json!({"patchText": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"}),
        );
        assert_eq!(claimed_paths(&del), vec!["a.txt".to_string()]);
        assert_eq!(prove(&del, Some(b"x"), None), Ok(()));
        let upd = tool(
            "apply_patch",
            json!({"patchText": "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+y\n*** End Patch"}),
        );
        assert_eq!(
            prove(&upd, Some(b"x\n"), Some(b"y\n")),
            Err(MetadataReason::UnsupportedPatch)
        );
    }

    #[test]
    fn other_tools_prove_nothing() {
        let b = tool("bash", json!({"command": "sed -i s/a/b/ f"}));
        assert!(claimed_paths(&b).is_empty());
        assert_eq!(
            prove(&b, Some(b"a"), Some(b"b")),
            Err(MetadataReason::NotProven)
        );
    }
}
