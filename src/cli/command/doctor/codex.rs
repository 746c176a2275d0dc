//! Codex's trust, as doctor reads it from Codex's own configuration (never writes it).

use std::collections::BTreeMap;
use std::path::Path;

use rewind::hooks::Agent;

use super::config::{hook_command, read_text, Places};
use super::{CodexHook, CodexTrust, Configured, Problem};

/// Codex runs a project's hooks only when the project is trusted (`[projects."<dir>"]
/// trust_level = "trusted"` in `$CODEX_HOME/config.toml`) and each hook is: Codex keeps a
/// `trusted_hash` per hook under `[hooks.state."<hooks.json>:<event>:<group>:<index>"]`
/// (openai/codex, `codex-rs/hooks/src/engine/discovery.rs`), set from `/hooks`, and runs the
/// hook only while that is the hook's hash now ([`codex_hook_hash`]); else it is `modified`.
pub(super) fn codex_trust(
    places: &Places,
    configured: &[Configured],
    problems: &mut Vec<Problem>,
) -> CodexTrust {
    let config = places
        .codex_home
        .clone()
        .unwrap_or_default()
        .join("config.toml");
    let tables = toml_tables(&read_text(&config).unwrap_or_default());
    let root = places.ws.root().display().to_string();
    let project = table(&tables, &["projects", &root]).and_then(|t| t.get("trust_level").cloned());
    let mut hooks = Vec::new();
    let files: Vec<&str> = configured
        .iter()
        .filter(|c| c.file.ends_with("hooks.json"))
        .map(|c| c.file.as_str())
        .collect();
    for file in files {
        for (key, hash) in codex_hook_keys(Path::new(file)) {
            let state = table(&tables, &["hooks", "state", &key]);
            let trusted_hash = state.and_then(|s| s.get("trusted_hash"));
            hooks.push(CodexHook {
                trusted: trusted_hash == Some(&hash),
                modified: trusted_hash.is_some_and(|t| *t != hash),
                enabled: state
                    .and_then(|s| s.get("enabled"))
                    .is_none_or(|v| v != "false"),
                key,
            });
        }
    }
    let project_file = configured.iter().any(|c| c.level == "project");
    if project_file && project.as_deref() != Some("trusted") {
        problems.push(Problem {
            agent: Some("codex"),
            problem: format!("Codex does not trust this project ({}), so it loads none of its .codex configuration", config.display()),
            fix: format!("run `codex` here and accept the trust prompt, or add to {}:\n[projects.\"{root}\"]\ntrust_level = \"trusted\"", config.display()),
        });
    }
    let modified = hooks.iter().filter(|h| h.modified).count();
    if modified > 0 {
        problems.push(Problem {
            agent: Some("codex"),
            problem: format!("{modified} of rewind's {} Codex hooks changed since Codex trusted them (.codex/hooks.json was rewritten, e.g. by `rewind init codex` from another install); Codex marks them modified and runs none of them", hooks.len()),
            fix: "run `codex` here, type `/hooks`, and trust rewind's hooks again".into(),
        });
    }
    let untrusted = hooks
        .iter()
        .filter(|h| !h.modified && (!h.trusted || !h.enabled))
        .count();
    if untrusted > 0 {
        problems.push(Problem {
            agent: Some("codex"),
            problem: format!("{untrusted} of rewind's {} Codex hooks are not trusted or are disabled; Codex skips them silently", hooks.len()),
            fix: "run `codex` here, type `/hooks`, and trust rewind's hooks".into(),
        });
    }
    CodexTrust {
        config: config.display().to_string(),
        project,
        hooks,
    }
}

/// The keys Codex gives the hooks of `hooks.json` that run rewind
/// (`<path>:<event in snake case>:<group index>:<hook index>`), each with its hash now.
fn codex_hook_keys(file: &Path) -> Vec<(String, String)> {
    let Some(value) =
        read_text(file).and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    let Some(events) = value.get("hooks").and_then(|h| h.as_object()) else {
        return keys;
    };
    for (event, groups) in events {
        for (gi, group) in groups.as_array().into_iter().flatten().enumerate() {
            let handlers = group.get("hooks").and_then(|h| h.as_array());
            for (hi, handler) in handlers.into_iter().flatten().enumerate() {
                let command = handler
                    .get("command")
                    .and_then(|c| c.as_str())
                    .unwrap_or_default();
                if hook_command(command, Agent::Codex).is_some() {
                    let matcher = group.get("matcher").and_then(|m| m.as_str());
                    keys.push((
                        format!("{}:{}:{gi}:{hi}", file.display(), snake(event)),
                        codex_hook_hash(&snake(event), matcher, handler),
                    ));
                }
            }
        }
    }
    keys
}

/// The hash Codex gives a command hook (`currentHash` in `hooks/list`; openai/codex
/// `command_hook_hash`, `version_for_toml`): `sha256:` and the hex SHA-256 of the compact JSON,
/// keys sorted, of `{event_name, matcher, hooks: [{type: "command", command, timeout, async,
/// statusMessage}]}` — the matcher only for the events that take one, the timeout 600 when not
/// set and at least 1, fields that are not set left out.
fn codex_hook_hash(event: &str, matcher: Option<&str>, handler: &serde_json::Value) -> String {
    use serde_json::{json, Map, Value};
    use sha2::Digest;
    let str_of = |k: &str| handler.get(k).and_then(Value::as_str);
    let mut hook = Map::new();
    hook.insert(
        "async".into(),
        json!(handler
            .get("async")
            .and_then(Value::as_bool)
            .unwrap_or(false)),
    );
    hook.insert("command".into(), json!(str_of("command").unwrap_or("")));
    if let Some(m) = str_of("statusMessage") {
        hook.insert("statusMessage".into(), json!(m));
    }
    let timeout = handler
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(600)
        .max(1);
    hook.insert("timeout".into(), json!(timeout));
    hook.insert("type".into(), json!("command"));
    let mut identity = Map::new();
    identity.insert("event_name".into(), json!(event));
    identity.insert("hooks".into(), json!([Value::Object(hook)]));
    let takes_matcher = !matches!(event, "user_prompt_submit" | "stop");
    if let Some(m) = matcher.filter(|_| takes_matcher) {
        identity.insert("matcher".into(), json!(m));
    }
    // Keys were inserted in sorted order; serde_json keeps either that order or its own
    // sorted one.
    let bytes = serde_json::to_vec(&Value::Object(identity)).unwrap_or_default();
    let digest = sha2::Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// `PreToolUse` → `pre_tool_use`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A TOML file's tables as (header path → key → raw value), read line by line: enough for
/// the `[a."b c".d]` tables with `key = value` lines that Codex writes (no TOML parser is a
/// dependency for this one read).
fn toml_tables(text: &str) -> BTreeMap<Vec<String>, BTreeMap<String, String>> {
    let mut tables: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    let mut current = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = toml_path(header);
            tables.entry(current.clone()).or_default();
        } else if let Some((k, v)) = line.split_once('=') {
            let v = v.trim();
            let v = v.split(" #").next().unwrap_or(v).trim();
            tables
                .entry(current.clone())
                .or_default()
                .insert(unquote(k.trim()), unquote(v));
        }
    }
    tables
}

fn table<'a>(
    tables: &'a BTreeMap<Vec<String>, BTreeMap<String, String>>,
    path: &[&str],
) -> Option<&'a BTreeMap<String, String>> {
    let key: Vec<String> = path.iter().map(|s| s.to_string()).collect();
    tables.get(&key)
}

/// `a."b.c".d` → `["a", "b.c", "d"]`.
fn toml_path(header: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in header.trim().chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '.') => parts.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    parts.push(cur.trim().to_string());
    parts
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|x| x.strip_suffix(q)) {
            return inner.to_string();
        }
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `currentHash` Codex 0.169.0's `hooks/list` gave the hooks `rewind init codex` wrote
    /// for a binary at /tmp/cxt/bin2/rewind (timeout 30; tool events with a matcher).
    #[test]
    fn codex_hook_hash_is_the_one_codex_computes() {
        let command = "r='/tmp/cxt/bin2/rewind'; [ -x \"$r\" ] || r=$(command -v rewind) || { cat >/dev/null; echo 'rewind: not found, the codex hook lets the tool call proceed' >&2; exit 0; }; exec \"$r\" hook codex";
        let handler = serde_json::json!({"type": "command", "command": command, "timeout": 30});
        let m = Some("apply_patch|Bash");
        for (event, matcher, hash) in [
            (
                "pre_tool_use",
                m,
                "04ff1548f8fa54e654d78ed777edb8417382667fadce8616d350be468034a71a",
            ),
            (
                "post_tool_use",
                m,
                "594bfd64abc10b288be3374f2ee4c414b9fe8d387142f3e5a3e53d53ed2eacd5",
            ),
            (
                "session_start",
                None,
                "ee1963470c1768ccf4be7d6a02afeb99c03a0360881f0bbc349b2db75d22ab03",
            ),
            (
                "user_prompt_submit",
                None,
                "1edf329a3d657f743661b1cd937cd4c96c26d06a44c390aca011dc267b13383e",
            ),
            // A matcher on an event that takes none is not part of the hash.
            (
                "stop",
                m,
                "2db94d33d7011348b33b40810da9208c1fea99781b101eaf6c2d0d4404f97b8e",
            ),
        ] {
            assert_eq!(
                codex_hook_hash(event, matcher, &handler),
                format!("sha256:{hash}"),
                "{event}"
            );
        }
    }

    #[test]
    fn toml_tables_read_quoted_headers() {
        let t = toml_tables(
            "model = \"x\"\n[projects.\"/a/b.c\"]\ntrust_level = \"trusted\"\n\n[hooks.state.\"/a/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:1\"\nenabled = false\n",
        );
        assert_eq!(
            table(&t, &["projects", "/a/b.c"])
                .and_then(|m| m.get("trust_level"))
                .map(String::as_str),
            Some("trusted")
        );
        let state = table(
            &t,
            &["hooks", "state", "/a/.codex/hooks.json:pre_tool_use:0:0"],
        )
        .unwrap();
        assert_eq!(state.get("enabled").map(String::as_str), Some("false"));
        assert_eq!(snake("UserPromptSubmit"), "user_prompt_submit");
    }
}
