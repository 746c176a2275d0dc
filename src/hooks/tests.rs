//! Tests of the hook payload layer: every fixture under `fixtures/hooks/` parses to the expected
//! action, malformed payloads are errors, answers carry the fields each agent reads,
//! `reverse_edits` round-trips, and the patch reader never panics.

use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::Value;

use super::*;

macro_rules! fixture {
    ($agent:literal, $name:literal) => {
        include_str!(concat!(
            "../../fixtures/hooks/",
            $agent,
            "/",
            $name,
            ".json"
        ))
    };
}

fn parsed(agent: Agent, text: &str) -> HookEvent {
    parse(agent, text.as_bytes()).expect("fixture parses")
}

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

fn edit(old: &str, new: &str, replace_all: bool) -> TextEdit {
    TextEdit {
        old: old.to_string(),
        new: new.to_string(),
        replace_all,
    }
}

fn is_ignore(action: &Action) -> bool {
    matches!(action, Action::Ignore { .. })
}

fn stdout_json(answer: &Answer) -> Value {
    let out = answer.stdout.as_deref().expect("answer prints json");
    serde_json::from_str(out).expect("answer is valid json")
}

// ---------------------------------------------------------------- Claude Code

const CLAUDE_SESSION: &str = "8c35adc1-3f0e-4b8e-9a55-2b7c1f0d9e11";

#[test]
fn claude_lifecycle_fixtures() {
    let start = parsed(Agent::ClaudeCode, fixture!("claude-code", "session-start"));
    // A session start opens no (empty) window; it closes what a previous run left open,
    // and delivers the root's context files.
    assert_eq!(start.action, Action::SessionStart { fresh: false });
    assert_eq!(start.session_id.as_deref(), Some(CLAUDE_SESSION));
    assert_eq!(start.cwd, Some(p("/home/u/proj")));
    assert_eq!(start.event_name, "SessionStart");

    let prompt = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "user-prompt-submit"),
    );
    assert_eq!(
        prompt.action,
        Action::OpenWindow {
            label: Some("Rename a to b in lib.rs".to_string())
        }
    );
    for text in [
        fixture!("claude-code", "stop"),
        fixture!("claude-code", "session-end"),
    ] {
        assert_eq!(parsed(Agent::ClaudeCode, text).action, Action::CloseWindow);
    }
}

#[test]
fn claude_write_fixtures() {
    let pre = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "pre-tool-use-write"),
    );
    assert_eq!(
        pre.action,
        Action::PreWrite {
            paths: vec![p("/home/u/proj/src/new.rs")]
        }
    );
    assert_eq!(pre.tool.as_deref(), Some("Write"));
    assert_eq!(pre.tool_call.as_deref(), Some("toolu_01WRITE"));
    assert_eq!(pre.session_id.as_deref(), Some(CLAUDE_SESSION));

    let post = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "post-tool-use-write"),
    );
    assert_eq!(
        post.action,
        Action::PostWrite {
            paths: vec![p("/home/u/proj/src/new.rs")],
            evidence: vec![
                Evidence::OriginalText {
                    path: p("/home/u/proj/src/new.rs"),
                    text: "pub fn old() {}\n".to_string()
                },
                Evidence::Written {
                    path: p("/home/u/proj/src/new.rs")
                },
            ],
        }
    );
    assert_eq!(post.tool_call.as_deref(), Some("toolu_01WRITE"));
}

#[test]
fn claude_edit_fixtures() {
    let pre = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "pre-tool-use-edit"),
    );
    assert_eq!(
        pre.action,
        Action::PreWrite {
            paths: vec![p("/home/u/proj/src/lib.rs")]
        }
    );
    assert_eq!(pre.tool_call.as_deref(), Some("toolu_01ABC123"));

    let post = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "post-tool-use-edit"),
    );
    let Action::PostWrite { paths, evidence } = &post.action else {
        panic!("expected PostWrite, got {:?}", post.action);
    };
    assert_eq!(paths, &vec![p("/home/u/proj/src/lib.rs")]);
    assert_eq!(
        evidence,
        &vec![
            Evidence::OriginalText {
                path: p("/home/u/proj/src/lib.rs"),
                text: "pub fn a() {}\n".to_string()
            },
            Evidence::Edits {
                path: p("/home/u/proj/src/lib.rs"),
                edits: vec![edit("fn a()", "fn b()", false)]
            },
        ]
    );
    // The evidence is consistent: reversing the edit on the after text gives the original.
    assert_eq!(
        reverse_edits("pub fn b() {}\n", &[edit("fn a()", "fn b()", false)]).as_deref(),
        Some("pub fn a() {}\n")
    );
}

#[test]
fn tool_response_is_read_for_original_file_only_and_may_have_any_shape() {
    let post_edit = |response: &str| {
        let payload = format!(
            r#"{{"hook_event_name":"PostToolUse","tool_name":"Edit","tool_input":{{"file_path":"/w/a.rs","old_string":"a","new_string":"b"}},"tool_response":{response}}}"#
        );
        parse(Agent::ClaudeCode, payload.as_bytes())
    };
    let original = |event: &HookEvent| match &event.action {
        Action::PostWrite { evidence, .. } => evidence.iter().find_map(|e| match e {
            Evidence::OriginalText { text, .. } => Some(text.clone()),
            _ => None,
        }),
        other => panic!("expected PostWrite, got {other:?}"),
    };
    // `originalFile` is kept, escapes and all, whatever surrounds it.
    let event = post_edit(
        r#"{"filePath":"/w/a.rs","structuredPatch":[{"lines":["-a","+b"]}],"originalFile":"a\n\"q\"\u00e9\n","userModified":false}"#,
    )
    .expect("parses");
    assert_eq!(original(&event).as_deref(), Some("a\n\"q\"é\n"));
    // Any other shape is skipped: the event parses, without the evidence.
    for shape in [
        r#""done""#,
        r#"[1,{"originalFile":"x"}]"#,
        "42",
        "-1.5e3",
        "true",
        "null",
        "{}",
        r#"{"originalFile":5}"#,
        r#"{"file":{"content":"x\ty","originalFile":"nested"}}"#,
    ] {
        let event = post_edit(shape).unwrap_or_else(|e| panic!("{shape}: {e}"));
        assert_eq!(original(&event), None, "{shape}");
    }
    // A repeated key counts as its last value, as when the payload was one JSON value.
    let twice = post_edit(r#"{"originalFile":"first"}, "tool_response": {"originalFile":"last"}"#)
        .expect("parses");
    assert_eq!(original(&twice).as_deref(), Some("last"));
    // What is skipped is still checked for JSON syntax.
    for broken in [r#"{"content":"a\qb"}"#, "[1,]", r#"{"a" 1}"#, "\"cut"] {
        assert!(
            matches!(post_edit(broken), Err(HookError::InvalidJson(_))),
            "{broken}"
        );
    }
}

#[test]
fn claude_multiedit_notebook_read_bash_fixtures() {
    let pre = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "pre-tool-use-multiedit"),
    );
    assert_eq!(
        pre.action,
        Action::PreWrite {
            paths: vec![p("/home/u/proj/src/lib.rs")]
        }
    );
    let post = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "post-tool-use-multiedit"),
    );
    assert_eq!(
        post.action,
        Action::PostWrite {
            paths: vec![p("/home/u/proj/src/lib.rs")],
            evidence: vec![Evidence::Edits {
                path: p("/home/u/proj/src/lib.rs"),
                edits: vec![edit("fn a()", "fn b()", false), edit("a()", "b()", true)],
            }],
        }
    );

    let nb = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "pre-tool-use-notebookedit"),
    );
    assert_eq!(
        nb.action,
        Action::PreWrite {
            paths: vec![p("/home/u/proj/analysis.ipynb")]
        }
    );

    let read = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "pre-tool-use-read"),
    );
    assert_eq!(
        read.action,
        Action::PreRead {
            paths: vec![p("/home/u/proj/src/lib.rs")]
        }
    );
    assert_eq!(read.tool_call.as_deref(), Some("toolu_01READ"));
    let read_after = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "post-tool-use-read"),
    );
    assert_eq!(
        read_after.action,
        Action::PostRead {
            paths: vec![p("/home/u/proj/src/lib.rs")]
        }
    );

    let bash = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "pre-tool-use-bash"),
    );
    assert_eq!(
        bash.action,
        Action::PreShell {
            command: "cargo fmt".to_string()
        }
    );
    let bash_after = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "post-tool-use-bash"),
    );
    assert_eq!(
        bash_after.action,
        Action::PostShell {
            command: "cargo fmt".to_string()
        }
    );

    let mcp = parsed(
        Agent::ClaudeCode,
        fixture!("claude-code", "pre-tool-use-mcp"),
    );
    assert!(is_ignore(&mcp.action));
    assert_eq!(mcp.tool.as_deref(), Some("mcp__github__create_issue"));
}

// ---------------------------------------------------------------- Codex

/// The payloads Codex 0.169.0 sent in the end-to-end run (`tests/agents/`, `CAPTURE=1`).
macro_rules! codex_real {
    ($name:literal) => {
        fixture!("codex/real-0.169.0", $name)
    };
}

#[test]
fn codex_fixtures() {
    let sid = Some("01a20e52-df05-7c11-a9db-d67fc3da3245");
    let turn = Some("01a20e52-df41-7163-89fb-c6d0ebd48fd7");
    let start = parsed(Agent::Codex, codex_real!("session-start"));
    // A session start opens no (empty) window; it closes what a previous run left open.
    assert_eq!(start.action, Action::CloseWindow);
    assert_eq!(start.turn_id, None);
    assert_eq!(start.session_id.as_deref(), sid);

    let prompt = parsed(Agent::Codex, codex_real!("user-prompt-submit"));
    assert_eq!(
        prompt.action,
        Action::OpenWindow {
            label: Some(
                "create notes.txt, edit it, read it, uppercase with sed, patch through the shell"
                    .to_string()
            )
        }
    );
    assert_eq!(prompt.turn_id.as_deref(), turn);

    let pre = parsed(Agent::Codex, codex_real!("pre-tool-use-apply_patch"));
    assert_eq!(
        pre.action,
        Action::PreWrite {
            paths: vec![p("notes.txt")]
        }
    );
    assert_eq!(pre.session_id.as_deref(), sid);
    assert_eq!(pre.turn_id.as_deref(), turn);
    assert_eq!(pre.tool_call.as_deref(), Some("call_e2e_00"));
    assert_eq!(pre.tool.as_deref(), Some("apply_patch"));
    assert_eq!(pre.cwd, Some(p("/home/u/proj")));

    let post = parsed(Agent::Codex, codex_real!("post-tool-use-apply_patch"));
    assert_eq!(
        post.action,
        Action::PostWrite {
            paths: vec![p("notes.txt")],
            evidence: vec![Evidence::Written {
                path: p("notes.txt")
            }],
        }
    );
    let edit = parsed(Agent::Codex, codex_real!("post-tool-use-apply_patch-2"));
    assert_eq!(
        edit.action,
        Action::PostWrite {
            paths: vec![p("README.md")],
            evidence: Vec::new(),
        }
    );
    assert_eq!(edit.tool_call.as_deref(), Some("call_e2e_01"));

    let bash = parsed(Agent::Codex, codex_real!("pre-tool-use-bash"));
    assert_eq!(
        bash.action,
        Action::PreShell {
            command: "cat notes.txt".to_string()
        }
    );
    assert_eq!(bash.tool_call.as_deref(), Some("call_e2e_03"));
    // Codex 0.169 sends a shell tool's `tool_response` as a string (the output).
    let bash_after = parsed(Agent::Codex, codex_real!("post-tool-use-bash"));
    assert_eq!(
        bash_after.action,
        Action::PostShell {
            command: "cat notes.txt".to_string()
        }
    );
    let sed = parsed(Agent::Codex, codex_real!("post-tool-use-bash-2"));
    assert_eq!(
        sed.action,
        Action::PostShell {
            command: "sed -i 's/one/ONE/' notes.txt".to_string()
        }
    );
    // The patch Codex ran through the shell: a PreToolUse `Bash` whose paths are read from
    // the heredoc (Codex sent no PostToolUse for it).
    let heredoc = parsed(Agent::Codex, codex_real!("pre-tool-use-bash-3"));
    let Action::PreShellPatch { paths, command } = &heredoc.action else {
        panic!("not a patch heredoc: {:?}", heredoc.action);
    };
    assert!(command.starts_with("apply_patch <<'EOF'\n"));
    assert_eq!(
        paths,
        &[
            p("README.md"),
            p("extra.txt"),
            p("old.txt"),
            p("move-me.txt"),
            p("moved.txt")
        ]
    );
    assert_eq!(heredoc.tool.as_deref(), Some("Bash"));
    assert_eq!(heredoc.tool_call.as_deref(), Some("call_e2e_05"));
    assert_eq!(
        parsed(Agent::Codex, codex_real!("stop")).action,
        Action::CloseWindow
    );
}

/// The hand-made apply_patch payloads cover what the recorded run does not: one patch that
/// adds, moves and deletes.
#[test]
fn codex_apply_patch_with_every_header() {
    let pre = parsed(Agent::Codex, fixture!("codex", "pre-tool-use-apply_patch"));
    assert_eq!(
        pre.action,
        Action::PreWrite {
            paths: vec![
                p("docs/notes.md"),
                p("src/lib.rs"),
                p("src/core.rs"),
                p("src/old.rs")
            ]
        }
    );
    assert_eq!(pre.tool_call.as_deref(), Some("call_Pq1"));
    let post = parsed(Agent::Codex, fixture!("codex", "post-tool-use-apply_patch"));
    assert_eq!(
        post.action,
        Action::PostWrite {
            paths: vec![
                p("docs/notes.md"),
                p("src/lib.rs"),
                p("src/core.rs"),
                p("src/old.rs")
            ],
            evidence: vec![Evidence::Written {
                path: p("docs/notes.md")
            }],
        }
    );
}

// ---------------------------------------------------------------- Gemini

/// `/clear` and a compaction leave the model without the context files it was given: the
/// session start after them gives them again (`fresh`); a resumed session keeps them.
#[test]
fn a_session_start_after_clear_or_compaction_is_fresh() {
    let real = fixture!("claude-code", "real-2.1.197/session-start");
    assert_eq!(
        parsed(Agent::ClaudeCode, real).action,
        Action::SessionStart { fresh: false }
    );
    for (agent, source, fresh) in [
        (Agent::ClaudeCode, "compact", true),
        (Agent::ClaudeCode, "clear", true),
        (Agent::ClaudeCode, "resume", false),
        (Agent::Gemini, "clear", true),
        (Agent::Gemini, "resume", false),
    ] {
        let text = real.replace("\"startup\"", &format!("\"{source}\""));
        assert_eq!(
            parsed(agent, &text).action,
            Action::SessionStart { fresh },
            "{agent} {source}"
        );
    }
    // Codex reads AGENTS.md itself: its session start only closes what was left open.
    let codex = parsed(
        Agent::Codex,
        fixture!("codex", "real-0.169.0/session-start"),
    );
    assert_eq!(codex.action, Action::CloseWindow);
}

/// Context (the read check's hint, the AGENTS.md files) goes where each agent passes it to
/// the model: Claude Code's SessionStart and PreToolUse `additionalContext`, Gemini CLI's
/// SessionStart and AfterTool `additionalContext`, Cline's `contextModification`.
#[test]
fn context_answers_on_session_start_and_reads() {
    let context = Decision::Context {
        text: "==> context file AGENTS.md <==".to_string(),
    };
    let claude = |name: &str| {
        let mut event = parsed(
            Agent::ClaudeCode,
            fixture!("claude-code", "real-2.1.197/session-start"),
        );
        event.event_name = name.to_string();
        stdout_json(&answer(&event, &context))
    };
    for name in ["SessionStart", "PreToolUse", "PostToolUse"] {
        let out = claude(name);
        assert_eq!(out["hookSpecificOutput"]["hookEventName"], name);
        assert_eq!(
            out["hookSpecificOutput"]["additionalContext"],
            "==> context file AGENTS.md <=="
        );
    }
    for text in [
        fixture!("gemini", "real-0.61.0/session-start"),
        fixture!("gemini", "real-0.61.0/after-tool-read_file"),
    ] {
        let event = parsed(Agent::Gemini, text);
        let out = stdout_json(&answer(&event, &context));
        assert_eq!(
            out["hookSpecificOutput"]["additionalContext"], "==> context file AGENTS.md <==",
            "{}",
            event.event_name
        );
    }
}

/// gemini-cli puts a SessionStart hook's context before the first prompt, in
/// `<hook_context>`: the window's label is the user's prompt, not rewind's AGENTS.md.
#[test]
fn a_gemini_prompt_label_leaves_out_the_hook_context_before_it() {
    let text = fixture!("gemini", "real-0.61.0/before-agent");
    let mut payload: Value = serde_json::from_str(text).expect("fixture");
    let prompt = payload["prompt"].as_str().expect("prompt").to_string();
    payload["prompt"] = format!(
        "<hook_context>rewind: instructions\n\n==&gt; context file AGENTS.md &lt;==\nrules\n</hook_context>\n\n{prompt}"
    )
    .into();
    let event = parsed(Agent::Gemini, &payload.to_string());
    let plain = parsed(Agent::Gemini, text);
    assert_eq!(event.action, plain.action);
    assert!(matches!(
        event.action,
        Action::OpenWindow { label: Some(_) }
    ));
}

#[test]
fn gemini_fixtures() {
    let sid = Some("3f1d9c2a-7e44-4b1a-a0c2-5d6e7f809a1b");
    let start = parsed(Agent::Gemini, fixture!("gemini", "session-start"));
    // A session start opens no (empty) window; it closes what a previous run left open,
    // and delivers the root's context files.
    assert_eq!(start.action, Action::SessionStart { fresh: false });
    assert_eq!(start.session_id.as_deref(), sid);

    let agent = parsed(Agent::Gemini, fixture!("gemini", "before-agent"));
    assert_eq!(
        agent.action,
        Action::OpenWindow {
            label: Some("Fix the failing test in parser.py".to_string())
        }
    );

    let file = p("/home/u/proj/parser.py");
    let write = parsed(Agent::Gemini, fixture!("gemini", "before-tool-write_file"));
    assert_eq!(
        write.action,
        Action::PreWrite {
            paths: vec![file.clone()]
        }
    );
    assert_eq!(write.tool.as_deref(), Some("write_file"));
    // No id in the payload: one derived from the call, the same before and after it, and
    // another for another call (issue 25, item 8).
    let id = write.tool_call.expect("a derived tool-call id");
    assert!(id.starts_with("gemini-") && id.len() == 23, "{id}");
    let after = parsed(Agent::Gemini, fixture!("gemini", "after-tool-write_file"));
    assert_eq!(after.tool_call.as_deref(), Some(id.as_str()));
    let replace_before = parsed(Agent::Gemini, fixture!("gemini", "before-tool-replace"));
    let replace_after = parsed(Agent::Gemini, fixture!("gemini", "after-tool-replace"));
    assert_eq!(replace_before.tool_call, replace_after.tool_call);
    assert_ne!(replace_before.tool_call.as_deref(), Some(id.as_str()));
    assert_eq!(
        parsed(Agent::Gemini, fixture!("gemini", "after-tool-write_file")).action,
        Action::PostWrite {
            paths: vec![file.clone()],
            evidence: vec![Evidence::Written { path: file.clone() }]
        }
    );
    assert_eq!(
        parsed(Agent::Gemini, fixture!("gemini", "before-tool-replace")).action,
        Action::PreWrite {
            paths: vec![file.clone()]
        }
    );
    assert_eq!(
        parsed(Agent::Gemini, fixture!("gemini", "after-tool-replace")).action,
        Action::PostWrite {
            paths: vec![file.clone()],
            evidence: vec![Evidence::Edits {
                path: file.clone(),
                edits: vec![edit("return 1", "return 2", false)]
            }]
        }
    );
    assert_eq!(
        parsed(Agent::Gemini, fixture!("gemini", "before-tool-read_file")).action,
        Action::PreRead {
            paths: vec![file.clone()]
        }
    );
    assert_eq!(
        parsed(Agent::Gemini, fixture!("gemini", "after-tool-read_file")).action,
        Action::PostRead { paths: vec![file] }
    );
    assert_eq!(
        parsed(
            Agent::Gemini,
            fixture!("gemini", "before-tool-run_shell_command")
        )
        .action,
        Action::PreShell {
            command: "pytest -q".to_string()
        }
    );
    assert_eq!(
        parsed(
            Agent::Gemini,
            fixture!("gemini", "after-tool-run_shell_command")
        )
        .action,
        Action::PostShell {
            command: "pytest -q".to_string()
        }
    );
    assert!(is_ignore(
        &parsed(Agent::Gemini, fixture!("gemini", "before-tool-mcp")).action
    ));
    for text in [
        fixture!("gemini", "after-agent"),
        fixture!("gemini", "session-end"),
    ] {
        assert_eq!(parsed(Agent::Gemini, text).action, Action::CloseWindow);
    }
}

/// The payloads Gemini CLI 0.61.0 really sent during the scripted e2e run
/// (`tests/agents/fake_gemini.py`), each parsed to what that step did.
#[test]
fn gemini_recorded_payloads_parse_to_the_scripted_turn() {
    let sid = Some("7ed5a5b9-01f8-4dd4-bead-eb735819c821");
    let gem = |text: &str| parsed(Agent::Gemini, text);
    let notes = p("/home/u/proj/notes.txt");
    let readme = p("/home/u/proj/README.md");
    let sed = "sed -i 's/one/ONE/' notes.txt".to_string();

    let start = gem(fixture!("gemini", "real-0.61.0/session-start"));
    assert_eq!(start.action, Action::SessionStart { fresh: false });
    assert_eq!(start.session_id.as_deref(), sid);
    assert_eq!(start.cwd, Some(p("/home/u/proj")));
    assert_eq!(
        gem(fixture!("gemini", "real-0.61.0/before-agent")).action,
        Action::OpenWindow {
            label: Some("create notes.txt, edit it, read it, uppercase with sed".to_string())
        }
    );
    let steps = [
        (
            fixture!("gemini", "real-0.61.0/before-tool-write_file"),
            fixture!("gemini", "real-0.61.0/after-tool-write_file"),
            "write_file",
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Written {
                    path: notes.clone(),
                }],
            },
        ),
        (
            fixture!("gemini", "real-0.61.0/before-tool-replace"),
            fixture!("gemini", "real-0.61.0/after-tool-replace"),
            "replace",
            Action::PreWrite {
                paths: vec![readme.clone()],
            },
            Action::PostWrite {
                paths: vec![readme.clone()],
                evidence: vec![Evidence::Edits {
                    path: readme,
                    edits: vec![edit("# e2e", "# e2e edited", false)],
                }],
            },
        ),
        (
            fixture!("gemini", "real-0.61.0/before-tool-replace-2"),
            fixture!("gemini", "real-0.61.0/after-tool-replace-2"),
            "replace",
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Edits {
                    path: notes.clone(),
                    edits: vec![edit("two", "TWO", false)],
                }],
            },
        ),
        (
            fixture!("gemini", "real-0.61.0/before-tool-read_file"),
            fixture!("gemini", "real-0.61.0/after-tool-read_file"),
            "read_file",
            Action::PreRead {
                paths: vec![notes.clone()],
            },
            Action::PostRead { paths: vec![notes] },
        ),
        (
            fixture!("gemini", "real-0.61.0/before-tool-run_shell_command"),
            fixture!("gemini", "real-0.61.0/after-tool-run_shell_command"),
            "run_shell_command",
            Action::PreShell {
                command: sed.clone(),
            },
            Action::PostShell { command: sed },
        ),
    ];
    let mut ids = Vec::new();
    for (before, after, tool, pre_action, post_action) in steps {
        let (before, after) = (gem(before), gem(after));
        assert_eq!(before.action, pre_action, "{tool}");
        assert_eq!(after.action, post_action, "{tool}");
        assert_eq!(before.tool.as_deref(), Some(tool));
        assert_eq!(before.session_id.as_deref(), sid);
        // No id in Gemini's payloads: the derived one pairs BeforeTool with AfterTool.
        assert_eq!(before.tool_call, after.tool_call, "{tool}");
        ids.push(before.tool_call);
    }
    ids.dedup();
    assert_eq!(ids.len(), 5, "one id per call: {ids:?}");
    for text in [
        fixture!("gemini", "real-0.61.0/after-agent"),
        fixture!("gemini", "real-0.61.0/session-end"),
    ] {
        assert_eq!(gem(text).action, Action::CloseWindow);
    }
}

// ---------------------------------------------------------------- OpenCode

#[test]
fn opencode_fixtures() {
    let sid = Some("ses_6a1f3c2b9ffeKq2XyZ");
    let app = p("/home/u/proj/src/app.ts");

    let write = parsed(
        Agent::OpenCode,
        fixture!("opencode", "tool.execute.before-write"),
    );
    assert_eq!(
        write.action,
        Action::PreWrite {
            paths: vec![app.clone()]
        }
    );
    assert_eq!(write.session_id.as_deref(), sid);
    assert_eq!(write.tool_call.as_deref(), Some("call_W1"));
    assert_eq!(write.tool.as_deref(), Some("write"));
    assert_eq!(write.cwd, Some(p("/home/u/proj")));
    assert_eq!(
        parsed(
            Agent::OpenCode,
            fixture!("opencode", "tool.execute.after-write")
        )
        .action,
        Action::PostWrite {
            paths: vec![app.clone()],
            evidence: vec![Evidence::Written { path: app.clone() }]
        }
    );

    assert_eq!(
        parsed(
            Agent::OpenCode,
            fixture!("opencode", "tool.execute.before-edit")
        )
        .action,
        Action::PreWrite {
            paths: vec![app.clone()]
        }
    );
    let after_edit = parsed(
        Agent::OpenCode,
        fixture!("opencode", "tool.execute.after-edit"),
    );
    assert_eq!(after_edit.tool_call.as_deref(), Some("call_E1"));
    assert_eq!(
        after_edit.action,
        Action::PostWrite {
            paths: vec![app.clone()],
            evidence: vec![Evidence::Edits {
                path: app.clone(),
                edits: vec![edit("x = 1", "x = 2", false)]
            }]
        }
    );
    assert_eq!(
        parsed(
            Agent::OpenCode,
            fixture!("opencode", "tool.execute.after-multiedit")
        )
        .action,
        Action::PostWrite {
            paths: vec![app.clone()],
            evidence: vec![Evidence::Edits {
                path: app.clone(),
                edits: vec![edit("x = 2", "x = 3", false), edit("const", "let", true)]
            }]
        }
    );

    assert_eq!(
        parsed(
            Agent::OpenCode,
            fixture!("opencode", "tool.execute.before-apply_patch")
        )
        .action,
        Action::PreWrite {
            paths: vec![p("src/app.ts"), p("src/util.ts")]
        }
    );
    assert_eq!(
        parsed(
            Agent::OpenCode,
            fixture!("opencode", "tool.execute.after-apply_patch")
        )
        .action,
        Action::PostWrite {
            paths: vec![p("src/app.ts"), p("src/util.ts")],
            evidence: vec![Evidence::Written {
                path: p("src/util.ts")
            }]
        }
    );

    assert_eq!(
        parsed(
            Agent::OpenCode,
            fixture!("opencode", "tool.execute.before-read")
        )
        .action,
        Action::PreRead {
            paths: vec![app.clone()]
        }
    );
    assert_eq!(
        parsed(
            Agent::OpenCode,
            fixture!("opencode", "tool.execute.after-read")
        )
        .action,
        Action::PostRead { paths: vec![app] }
    );
    assert_eq!(
        parsed(
            Agent::OpenCode,
            fixture!("opencode", "tool.execute.before-bash")
        )
        .action,
        Action::PreShell {
            command: "bun test".to_string()
        }
    );
    assert_eq!(
        parsed(
            Agent::OpenCode,
            fixture!("opencode", "tool.execute.after-bash")
        )
        .action,
        Action::PostShell {
            command: "bun test".to_string()
        }
    );
    assert!(is_ignore(
        &parsed(
            Agent::OpenCode,
            fixture!("opencode", "tool.execute.before-webfetch")
        )
        .action
    ));

    let chat = parsed(Agent::OpenCode, fixture!("opencode", "chat.message"));
    assert_eq!(
        chat.action,
        Action::OpenWindow {
            label: Some("Bump x to 4 everywhere".to_string())
        }
    );
    assert_eq!(
        parsed(Agent::OpenCode, fixture!("opencode", "session.idle")).action,
        Action::CloseWindow
    );
}

/// The envelopes rewind's plugin piped from OpenCode 1.18.33 during the scripted e2e run
/// (`tests/agents/fake_openai_chat.py`), each parsed to what that step did.
#[test]
fn opencode_recorded_payloads_parse_to_the_scripted_turn() {
    let sid = Some("ses_df19f1f22ffeS0UkHv3YRtblVB");
    let oc = |text: &str| parsed(Agent::OpenCode, text);
    let notes = p("/home/u/proj/notes.txt");
    let readme = p("/home/u/proj/README.md");
    let sed = "sed -i 's/one/ONE/' notes.txt".to_string();

    // `input` without `agent`/`messageID`; the prompt in literal quotes, dropped from the label.
    let chat = oc(fixture!("opencode", "real-1.18.33/chat.message"));
    assert_eq!(
        chat.action,
        Action::OpenWindow {
            label: Some("create notes.txt, edit it, read it, uppercase with sed".to_string())
        }
    );
    assert_eq!(chat.session_id.as_deref(), sid);
    let steps = [
        (
            fixture!("opencode", "real-1.18.33/tool.execute.before-write"),
            fixture!("opencode", "real-1.18.33/tool.execute.after-write"),
            "call_e2e_00",
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Written {
                    path: notes.clone(),
                }],
            },
        ),
        (
            fixture!("opencode", "real-1.18.33/tool.execute.before-read"),
            fixture!("opencode", "real-1.18.33/tool.execute.after-read"),
            "call_e2e_01",
            Action::PreRead {
                paths: vec![readme.clone()],
            },
            Action::PostRead {
                paths: vec![readme.clone()],
            },
        ),
        (
            fixture!("opencode", "real-1.18.33/tool.execute.before-edit"),
            fixture!("opencode", "real-1.18.33/tool.execute.after-edit"),
            "call_e2e_02",
            Action::PreWrite {
                paths: vec![readme.clone()],
            },
            Action::PostWrite {
                paths: vec![readme.clone()],
                evidence: vec![Evidence::Edits {
                    path: readme,
                    edits: vec![edit("# e2e", "# e2e edited", false)],
                }],
            },
        ),
        (
            fixture!("opencode", "real-1.18.33/tool.execute.before-edit-2"),
            fixture!("opencode", "real-1.18.33/tool.execute.after-edit-2"),
            "call_e2e_03",
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Edits {
                    path: notes.clone(),
                    edits: vec![edit("two", "TWO", false)],
                }],
            },
        ),
        (
            fixture!("opencode", "real-1.18.33/tool.execute.before-read-2"),
            fixture!("opencode", "real-1.18.33/tool.execute.after-read-2"),
            "call_e2e_04",
            Action::PreRead {
                paths: vec![notes.clone()],
            },
            Action::PostRead { paths: vec![notes] },
        ),
        (
            fixture!("opencode", "real-1.18.33/tool.execute.before-bash"),
            fixture!("opencode", "real-1.18.33/tool.execute.after-bash"),
            "call_e2e_05",
            Action::PreShell {
                command: sed.clone(),
            },
            Action::PostShell { command: sed },
        ),
    ];
    for (before, after, call, pre_action, post_action) in steps {
        let (before, after) = (oc(before), oc(after));
        assert_eq!(before.action, pre_action, "{call}");
        assert_eq!(after.action, post_action, "{call}");
        assert_eq!(before.tool_call.as_deref(), Some(call));
        assert_eq!(after.tool_call.as_deref(), Some(call));
        assert_eq!(after.session_id.as_deref(), sid);
        assert_eq!(after.cwd, Some(p("/home/u/proj")));
    }
    assert_eq!(
        oc(fixture!("opencode", "real-1.18.33/session.idle")).action,
        Action::CloseWindow
    );

    // The second turn, with a `gpt-` model id: `chat.message` then carries `input.model`, and
    // OpenCode offers apply_patch (workspace-relative paths in the patch).
    assert_eq!(
        oc(fixture!("opencode", "real-1.18.33/chat.message-2")).action,
        Action::OpenWindow {
            label: Some("patch notes.txt".to_string())
        }
    );
    let before = oc(fixture!(
        "opencode",
        "real-1.18.33/tool.execute.before-apply_patch"
    ));
    let after = oc(fixture!(
        "opencode",
        "real-1.18.33/tool.execute.after-apply_patch"
    ));
    assert_eq!(
        before.action,
        Action::PreWrite {
            paths: vec![p("notes.txt")]
        }
    );
    assert_eq!(
        after.action,
        Action::PostWrite {
            paths: vec![p("notes.txt")],
            evidence: vec![]
        }
    );
    assert_eq!(before.tool_call.as_deref(), Some("call_e2e_patch"));
    assert_eq!(after.tool_call.as_deref(), Some("call_e2e_patch"));
}

// ---------------------------------------------------------------- Cursor

#[test]
fn cursor_fixtures() {
    let main_ts = p("/home/u/proj/src/main.ts");
    let prompt = parsed(Agent::Cursor, fixture!("cursor", "beforeSubmitPrompt"));
    assert_eq!(
        prompt.action,
        Action::OpenWindow {
            label: Some("Fix the bug in main.ts".to_string())
        }
    );
    assert_eq!(
        prompt.session_id.as_deref(),
        Some("c1f0a2b3-4d5e-6f70-8192-a3b4c5d6e7f8")
    );
    assert_eq!(
        prompt.turn_id.as_deref(),
        Some("g-9a8b7c6d-5e4f-3a2b-1c0d-e9f8a7b6c5d4")
    );
    assert_eq!(prompt.cwd, Some(p("/home/u/proj")));

    assert_eq!(
        parsed(Agent::Cursor, fixture!("cursor", "stop")).action,
        Action::CloseWindow
    );
    assert_eq!(
        parsed(Agent::Cursor, fixture!("cursor", "beforeShellExecution")).action,
        Action::PreShell {
            command: "npm install express".to_string()
        }
    );
    assert_eq!(
        parsed(Agent::Cursor, fixture!("cursor", "afterShellExecution")).action,
        Action::PostShell {
            command: "npm install express".to_string()
        }
    );
    assert_eq!(
        parsed(Agent::Cursor, fixture!("cursor", "beforeReadFile")).action,
        Action::PreRead {
            paths: vec![main_ts.clone()]
        }
    );
    assert_eq!(
        parsed(Agent::Cursor, fixture!("cursor", "afterFileEdit")).action,
        Action::PostWrite {
            paths: vec![main_ts.clone()],
            evidence: vec![Evidence::Edits {
                path: main_ts,
                edits: vec![edit("const foo = 1", "const foo = 2", false)]
            }]
        }
    );
    assert!(is_ignore(
        &parsed(Agent::Cursor, fixture!("cursor", "beforeMCPExecution")).action
    ));
    let pre = parsed(Agent::Cursor, fixture!("cursor", "preToolUse-Write"));
    assert_eq!(
        pre.action,
        Action::PreWrite {
            paths: vec![p("/home/u/proj/src/new.ts")]
        }
    );
    assert_eq!(pre.tool_call.as_deref(), Some("tool_7f3e"));
}

// ---------------------------------------------------------------- Cline

#[test]
fn cline_fixtures() {
    let start = parsed(Agent::Cline, fixture!("cline", "TaskStart"));
    assert_eq!(
        start.action,
        Action::OpenWindow {
            label: Some("Add a health check endpoint".to_string())
        }
    );
    assert_eq!(start.session_id.as_deref(), Some("1763380800123"));
    assert_eq!(start.cwd, Some(p("/home/u/proj")));
    assert_eq!(
        parsed(Agent::Cline, fixture!("cline", "UserPromptSubmit")).action,
        Action::OpenWindow {
            label: Some("Also log the uptime".to_string())
        }
    );

    let health = p("src/health.ts");
    let write = parsed(Agent::Cline, fixture!("cline", "PreToolUse-write_to_file"));
    assert_eq!(
        write.action,
        Action::PreWrite {
            paths: vec![health.clone()]
        }
    );
    assert_eq!(write.tool.as_deref(), Some("write_to_file"));
    assert_eq!(write.tool_call, None);
    assert_eq!(
        parsed(Agent::Cline, fixture!("cline", "PostToolUse-write_to_file")).action,
        Action::PostWrite {
            paths: vec![health.clone()],
            evidence: vec![Evidence::Written {
                path: health.clone()
            }]
        }
    );
    assert_eq!(
        parsed(
            Agent::Cline,
            fixture!("cline", "PreToolUse-replace_in_file")
        )
        .action,
        Action::PreWrite {
            paths: vec![health.clone()]
        }
    );
    assert_eq!(
        parsed(
            Agent::Cline,
            fixture!("cline", "PostToolUse-replace_in_file")
        )
        .action,
        Action::PostWrite {
            paths: vec![health.clone()],
            evidence: vec![Evidence::Edits {
                path: health.clone(),
                edits: vec![edit(
                    "export const ok = true\n",
                    "export const ok = false\n",
                    false
                )]
            }]
        }
    );
    assert_eq!(
        parsed(Agent::Cline, fixture!("cline", "PreToolUse-read_file")).action,
        Action::PreRead {
            paths: vec![health]
        }
    );
    assert_eq!(
        parsed(
            Agent::Cline,
            fixture!("cline", "PreToolUse-execute_command")
        )
        .action,
        Action::PreShell {
            command: "npm test".to_string()
        }
    );
    assert_eq!(
        parsed(
            Agent::Cline,
            fixture!("cline", "PostToolUse-execute_command")
        )
        .action,
        Action::PostShell {
            command: "npm test".to_string()
        }
    );
    assert!(is_ignore(
        &parsed(Agent::Cline, fixture!("cline", "PreToolUse-browser_action")).action
    ));
    assert_eq!(
        parsed(Agent::Cline, fixture!("cline", "TaskComplete")).action,
        Action::CloseWindow
    );
}

#[test]
fn cline_search_replace_variants() {
    let legacy = "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n\n<<<<<<< SEARCH\nc\n=======\n>>>>>>> REPLACE";
    assert_eq!(
        cline::search_replace_edits(legacy),
        Some(vec![edit("a\n", "b\n", false), edit("c\n", "", false)])
    );
    // Empty search (whole-file replacement) and unterminated blocks give no evidence.
    assert_eq!(
        cline::search_replace_edits("------- SEARCH\n=======\nx\n+++++++ REPLACE"),
        None
    );
    assert_eq!(
        cline::search_replace_edits("------- SEARCH\na\n=======\nb\n"),
        None
    );
    assert_eq!(cline::search_replace_edits("just text"), None);
}

// ---------------------------------------------------------------- errors and ignores

#[test]
fn agent_names_round_trip() {
    for agent in Agent::ALL {
        assert_eq!(agent.as_str().parse::<Agent>().expect("known name"), agent);
    }
    let err = "vscode".parse::<Agent>().expect_err("unknown agent");
    assert!(err.to_string().starts_with("unknown agent `vscode`"));
}

#[test]
fn malformed_payloads_are_errors() {
    for agent in Agent::ALL {
        assert!(matches!(parse(agent, b""), Err(HookError::EmptyPayload)));
        assert!(matches!(
            parse(agent, b"  \n"),
            Err(HookError::EmptyPayload)
        ));
        assert!(matches!(
            parse(agent, b"{\"hook_event_name\":"),
            Err(HookError::InvalidJson(_))
        ));
        assert!(matches!(
            parse(agent, b"[1,2]"),
            Err(HookError::NotAnObject)
        ));
        for scalar in ["\"x\"", "null", "true", "-3", "18446744073709551615", "1.5"] {
            assert!(
                matches!(parse(agent, scalar.as_bytes()), Err(HookError::NotAnObject)),
                "{scalar}"
            );
        }
        assert!(matches!(
            parse(agent, b"{} {}"),
            Err(HookError::InvalidJson(_))
        ));
        assert!(matches!(
            parse(agent, b"{}"),
            Err(HookError::MissingField { .. })
        ));
        assert!(parse(agent, &[0xff, 0xfe, 0x00]).is_err());
    }
}

#[test]
fn wrong_typed_fields_are_errors() {
    let cases: [(Agent, &str, &str); 12] = [
        (
            Agent::ClaudeCode,
            r#"{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":5}"#,
            "tool_input",
        ),
        (
            Agent::ClaudeCode,
            r#"{"hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":7}}"#,
            "tool_input.file_path",
        ),
        (
            Agent::ClaudeCode,
            r#"{"hook_event_name":"PostToolUse","tool_name":"MultiEdit","tool_input":{"file_path":"/a","edits":[{"old_string":"a","new_string":1}]}}"#,
            "tool_input.edits[0].new_string",
        ),
        (
            Agent::ClaudeCode,
            r#"{"hook_event_name":"Stop","session_id":["x"]}"#,
            "session_id",
        ),
        (
            Agent::Codex,
            r#"{"hook_event_name":"PreToolUse","tool_name":"apply_patch","tool_input":{"command":false}}"#,
            "tool_input.command",
        ),
        (
            Agent::Gemini,
            r#"{"hook_event_name":"BeforeTool","tool_name":"write_file","tool_input":"x"}"#,
            "tool_input",
        ),
        (
            Agent::Gemini,
            r#"{"hook_event_name":"BeforeTool","cwd":3,"tool_name":"read_file","tool_input":{}}"#,
            "cwd",
        ),
        (
            Agent::OpenCode,
            r#"{"hook":"tool.execute.before","input":{"tool":"edit"},"output":{"args":[1]}}"#,
            "output.args",
        ),
        (
            Agent::OpenCode,
            r#"{"hook":"tool.execute.after","input":{"tool":"write","args":{"filePath":null}}}"#,
            "input.args.filePath",
        ),
        (
            Agent::Cursor,
            r#"{"hook_event_name":"afterFileEdit","file_path":"/a","edits":{"old_string":"a"}}"#,
            "edits",
        ),
        (
            Agent::Cursor,
            r#"{"hook_event_name":"stop","workspace_roots":[5]}"#,
            "workspace_roots",
        ),
        (
            Agent::Cline,
            r#"{"hookName":"PreToolUse","preToolUse":{"toolName":"write_to_file","parameters":"path"}}"#,
            "preToolUse.parameters",
        ),
    ];
    for (agent, payload, field) in cases {
        let err = parse(agent, payload.as_bytes()).expect_err(payload);
        let text = err.to_string();
        assert!(
            text.contains(&format!("`{field}`")),
            "{agent}: {payload} gave `{text}`, expected field `{field}`"
        );
    }
}

#[test]
fn missing_tool_arguments_are_errors() {
    let err = parse(
        Agent::ClaudeCode,
        br#"{"hook_event_name":"PreToolUse","tool_name":"Write"}"#,
    )
    .expect_err("no tool_input");
    assert_eq!(
        err.to_string(),
        "hook payload is missing field `tool_input`"
    );
    let err = parse(
        Agent::Codex,
        br#"{"hook_event_name":"PreToolUse","tool_name":"apply_patch","tool_input":{"command":"no headers here"}}"#,
    )
    .expect_err("no patch headers");
    assert!(matches!(err, HookError::PatchWithoutFiles));
}

#[test]
fn unknown_events_and_tools_are_ignored() {
    let cases: [(Agent, &str); 8] = [
        (
            Agent::ClaudeCode,
            r#"{"hook_event_name":"Notification","message":"hi"}"#,
        ),
        (
            Agent::ClaudeCode,
            r#"{"hook_event_name":"PreToolUse","tool_name":"WebFetch","tool_input":{"url":"x"}}"#,
        ),
        (
            Agent::Codex,
            r#"{"hook_event_name":"PreToolUse","tool_name":"mcp__x__y","tool_input":{"a":1}}"#,
        ),
        (
            Agent::Gemini,
            r#"{"hook_event_name":"BeforeModel","llm_request":{}}"#,
        ),
        (Agent::OpenCode, r#"{"hook":"permission.ask","input":{}}"#),
        (
            Agent::Cursor,
            r#"{"hook_event_name":"afterAgentThought","text":"…"}"#,
        ),
        (
            Agent::Cursor,
            r#"{"hook_event_name":"preToolUse","tool_name":"Write","tool_input":"{\"file_path\":\"/a\"}"}"#,
        ),
        (Agent::Cline, r#"{"hookName":"PreCompact"}"#),
    ];
    for (agent, payload) in cases {
        let event = parse(agent, payload.as_bytes()).expect(payload);
        assert!(is_ignore(&event.action), "{payload} → {:?}", event.action);
    }
}

// ---------------------------------------------------------------- reverse_edits

#[test]
fn reverse_edits_round_trips_in_order() {
    let before = "fn a(x: u8) -> u8 {\n    x + x\n}\n";
    let edits = [edit("fn a(", "fn b(", false), edit("x", "value", true)];
    let after = "fn b(value: u8) -> u8 {\n    value + value\n}\n";
    assert_eq!(reverse_edits(after, &edits).as_deref(), Some(before));
    // A later edit that rewrites an earlier edit's output is undone first.
    let chained = [edit("a", "b", false), edit("b", "c", false)];
    assert_eq!(reverse_edits("xc", &chained).as_deref(), Some("xa"));
    assert_eq!(reverse_edits(after, &[]).as_deref(), Some(after));
    // A no-op edit is skipped, even with an empty text.
    assert_eq!(
        reverse_edits("x", &[edit("", "", false)]).as_deref(),
        Some("x")
    );
}

#[test]
fn reverse_edits_refuses_ambiguity() {
    // New text twice: which one was the edit?
    assert_eq!(reverse_edits("b b", &[edit("a", "b", false)]), None);
    // New text absent.
    assert_eq!(reverse_edits("c", &[edit("a", "b", false)]), None);
    assert_eq!(reverse_edits("c", &[edit("a", "b", true)]), None);
    // A deletion cannot be located.
    assert_eq!(reverse_edits("xy", &[edit("a", "", false)]), None);
    assert_eq!(reverse_edits("xy", &[edit("a", "", true)]), None);
}

proptest! {
    #[test]
    fn reverse_edits_undoes_a_unique_edit(
        base in "[ab\n]{0,40}",
        start in 0usize..40,
        len in 1usize..8,
        new in "[xyz]{1,6}",
    ) {
        let start = start.min(base.len());
        let end = (start + len).min(base.len());
        prop_assume!(start < end);
        let old = &base[start..end];
        // Forward: replace the first occurrence of `old`, like an agent's edit tool.
        let at = base.find(old).expect("old is a substring of base");
        let mut after = base.clone();
        after.replace_range(at..at + old.len(), &new);
        let edits = [edit(old, &new, false)];
        prop_assert_eq!(reverse_edits(&after, &edits), Some(base.clone()));
    }

    #[test]
    fn reverse_edits_never_panics(
        after in ".{0,60}",
        edits in proptest::collection::vec((".{0,6}", ".{0,6}", any::<bool>()), 0..4),
    ) {
        let edits: Vec<TextEdit> = edits
            .into_iter()
            .map(|(old, new, replace_all)| TextEdit { old, new, replace_all })
            .collect();
        let _ = reverse_edits(&after, &edits);
    }

    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        for agent in Agent::ALL {
            let _ = parse(agent, &bytes);
        }
    }

    #[test]
    fn parse_never_panics_on_json_shaped_input(
        event in "(PreToolUse|PostToolUse|BeforeTool|AfterTool|afterFileEdit|tool.execute.before|tool.execute.after|x)",
        tool in "(Write|Edit|MultiEdit|apply_patch|write_file|replace|edit|multiedit|write_to_file|replace_in_file|Bash|z)",
        value in prop_oneof![
            Just("5".to_string()),
            Just("null".to_string()),
            Just("\"s\"".to_string()),
            Just("[]".to_string()),
            Just("{}".to_string()),
            Just("{\"file_path\":\"/a\",\"filePath\":\"/a\",\"path\":\"a\",\"command\":\"*** Add File: a\",\"patchText\":\"*** Delete File: b\"}".to_string()),
        ],
    ) {
        let payloads = [
            format!(r#"{{"hook_event_name":"{event}","tool_name":"{tool}","tool_input":{value},"file_path":{value},"edits":{value}}}"#),
            format!(r#"{{"hook":"{event}","input":{{"tool":"{tool}","args":{value}}},"output":{{"args":{value}}}}}"#),
            format!(r#"{{"hookName":"{event}","preToolUse":{{"toolName":"{tool}","parameters":{value}}},"postToolUse":{{"toolName":"{tool}","parameters":{value}}}}}"#),
        ];
        for payload in &payloads {
            for agent in Agent::ALL {
                let _ = parse(agent, payload.as_bytes());
            }
        }
    }
}

// ---------------------------------------------------------------- patch reader

#[test]
fn patch_headers_are_read() {
    let files = patch_paths(
        "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** Update File: b.rs\n*** Move to: c.rs\n@@ fn x\n- old\n+ new\n*** Delete File: d.md\n*** End Patch",
    )
    .expect("valid patch");
    assert_eq!(
        files,
        vec![
            PatchFile {
                path: p("a.txt"),
                kind: PatchKind::Add,
                move_to: None
            },
            PatchFile {
                path: p("b.rs"),
                kind: PatchKind::Update,
                move_to: Some(p("c.rs"))
            },
            PatchFile {
                path: p("d.md"),
                kind: PatchKind::Delete,
                move_to: None
            },
        ]
    );
}

#[test]
fn patch_tolerates_missing_envelope_and_indentation() {
    let files = patch_paths("  *** Update File: src/x.rs  \n@@\n-a\n+b\n").expect("no envelope");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, p("src/x.rs"));
    // Hunk lines that look like headers are content.
    let files = patch_paths("*** Add File: n.md\n+*** Delete File: nope\n-*** Update File: no\n")
        .expect("one file");
    assert_eq!(files.len(), 1);
}

#[test]
fn patch_refusals() {
    assert!(matches!(
        patch_paths("*** Begin Patch\n*** End Patch"),
        Err(HookError::PatchWithoutFiles)
    ));
    assert!(matches!(patch_paths(""), Err(HookError::PatchWithoutFiles)));
    assert!(matches!(
        patch_paths("*** Add File:   \n+x"),
        Err(HookError::PatchEmptyPath { line: 1 })
    ));
    assert!(matches!(
        patch_paths("*** Add File: a\n*** Move to: b"),
        Err(HookError::PatchStrayMove { line: 2 })
    ));
    assert!(matches!(
        patch_paths("*** Update File: a\n@@\n*** Move to: b"),
        Err(HookError::PatchStrayMove { line: 3 })
    ));
}

proptest! {
    #[test]
    fn patch_paths_never_panics(text in ".{0,300}") {
        let _ = patch_paths(&text);
    }

    #[test]
    fn patch_paths_never_panics_on_header_soup(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("*** Begin Patch".to_string()),
                Just("*** End Patch".to_string()),
                "\\*\\*\\* (Add|Update|Delete) File: ?[a-z/ ]{0,5}",
                "\\*\\*\\* Move to: ?[a-z ]{0,4}",
                "[+\\- @]{0,2}[a-z*]{0,5}",
            ],
            0..12,
        )
    ) {
        let _ = patch_paths(&lines.join("\n"));
    }
}

// ---------------------------------------------------------------- answers

fn event_of(agent: Agent, name: &str, action: Action) -> HookEvent {
    HookEvent {
        agent,
        event_name: name.to_string(),
        session_id: Some("s".to_string()),
        turn_id: None,
        cwd: None,
        subagent: None,
        tool_call: None,
        tool: None,
        action,
    }
}

fn pre_write(agent: Agent, name: &str) -> HookEvent {
    event_of(
        agent,
        name,
        Action::PreWrite {
            paths: vec![p("/a")],
        },
    )
}

fn deny(reason: &str) -> Decision {
    Decision::Deny {
        reason: reason.to_string(),
    }
}

fn context(text: &str) -> Decision {
    Decision::Context {
        text: text.to_string(),
    }
}

#[test]
fn claude_answers() {
    let pre = pre_write(Agent::ClaudeCode, "PreToolUse");
    assert_eq!(answer(&pre, &Decision::Allow), Answer::silent());

    let denied = answer(&pre, &deny("file changed since read"));
    assert_eq!(denied.exit_code, 0);
    let out = stdout_json(&denied);
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecisionReason"],
        "file changed since read"
    );

    let ctx = stdout_json(&answer(&pre, &context("changed")));
    assert_eq!(ctx["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert_eq!(ctx["hookSpecificOutput"]["additionalContext"], "changed");

    let post = pre_write(Agent::ClaudeCode, "PostToolUse");
    let ctx = stdout_json(&answer(&post, &context("changed")));
    assert_eq!(ctx["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    assert_eq!(ctx["hookSpecificOutput"]["additionalContext"], "changed");
    // A deny after the fact can only be told to the model.
    let late = stdout_json(&answer(&post, &deny("too late")));
    assert_eq!(late["hookSpecificOutput"]["additionalContext"], "too late");

    let stop = event_of(Agent::ClaudeCode, "Stop", Action::CloseWindow);
    assert_eq!(answer(&stop, &context("x")), Answer::silent());
    assert_eq!(answer(&stop, &deny("x")), Answer::silent());
}

#[test]
fn codex_answers() {
    let pre = pre_write(Agent::Codex, "PreToolUse");
    assert_eq!(answer(&pre, &Decision::Allow), Answer::silent());
    let denied = answer(&pre, &deny("stale read"));
    assert_eq!(denied.exit_code, 0);
    let out = stdout_json(&denied);
    // Codex rejects unknown keys: exactly the documented ones.
    assert_eq!(
        out,
        serde_json::json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "stale read",
        }})
    );
    // additionalContext on PreToolUse: Codex 0.169 shows it to the model (tests/agents/).
    assert_eq!(
        stdout_json(&answer(&pre, &context("x"))),
        serde_json::json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "x"}})
    );
    let post = pre_write(Agent::Codex, "PostToolUse");
    assert_eq!(
        stdout_json(&answer(&post, &context("x"))),
        serde_json::json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "x"}})
    );
}

#[test]
fn gemini_answers() {
    let pre = pre_write(Agent::Gemini, "BeforeTool");
    assert_eq!(answer(&pre, &Decision::Allow), Answer::silent());
    let out = stdout_json(&answer(&pre, &deny("stale")));
    assert_eq!(out["decision"], "deny");
    assert_eq!(out["reason"], "stale");
    // BeforeTool cannot carry context.
    assert_eq!(answer(&pre, &context("x")), Answer::silent());
    let read = event_of(
        Agent::Gemini,
        "AfterTool",
        Action::PostRead {
            paths: vec![p("/a")],
        },
    );
    let out = stdout_json(&answer(&read, &context("file changed")));
    assert_eq!(
        out["hookSpecificOutput"]["additionalContext"],
        "file changed"
    );
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "AfterTool");
    assert!(out.get("decision").is_none());
}

#[test]
fn opencode_answers() {
    let pre = pre_write(Agent::OpenCode, "tool.execute.before");
    assert_eq!(answer(&pre, &Decision::Allow), Answer::silent());
    let out = stdout_json(&answer(&pre, &deny("stale")));
    assert_eq!(out["block"], true);
    assert_eq!(out["reason"], "stale");
    assert_eq!(answer(&pre, &context("x")), Answer::silent());
    let read = event_of(
        Agent::OpenCode,
        "tool.execute.after",
        Action::PostRead {
            paths: vec![p("/a")],
        },
    );
    let out = stdout_json(&answer(&read, &context("file changed")));
    assert_eq!(out["append"], "file changed");
}

#[test]
fn cursor_answers() {
    let shell = event_of(
        Agent::Cursor,
        "beforeShellExecution",
        Action::PreShell {
            command: "ls".to_string(),
        },
    );
    assert_eq!(
        stdout_json(&answer(&shell, &Decision::Allow))["permission"],
        "allow"
    );
    let out = stdout_json(&answer(&shell, &deny("no")));
    assert_eq!(out["permission"], "deny");
    assert_eq!(out["user_message"], "no");
    assert_eq!(out["agent_message"], "no");

    let pre = pre_write(Agent::Cursor, "preToolUse");
    assert_eq!(
        stdout_json(&answer(&pre, &deny("stale")))["permission"],
        "deny"
    );
    assert_eq!(
        stdout_json(&answer(&pre, &context("x")))["permission"],
        "allow"
    );

    let read = event_of(
        Agent::Cursor,
        "beforeReadFile",
        Action::PreRead {
            paths: vec![p("/a")],
        },
    );
    assert_eq!(
        stdout_json(&answer(&read, &context("changed"))),
        serde_json::json!({"permission": "allow"})
    );
    let prompt = event_of(
        Agent::Cursor,
        "beforeSubmitPrompt",
        Action::OpenWindow { label: None },
    );
    assert_eq!(
        stdout_json(&answer(&prompt, &Decision::Allow))["continue"],
        true
    );
    let edit_event = event_of(
        Agent::Cursor,
        "afterFileEdit",
        Action::PostWrite {
            paths: vec![p("/a")],
            evidence: Vec::new(),
        },
    );
    assert_eq!(answer(&edit_event, &Decision::Allow), Answer::silent());
}

#[test]
fn cline_answers() {
    let pre = pre_write(Agent::Cline, "PreToolUse");
    let allow = answer(&pre, &Decision::Allow);
    assert_eq!(allow.exit_code, 0);
    assert_eq!(stdout_json(&allow), serde_json::json!({"cancel": false}));
    let out = stdout_json(&answer(&pre, &deny("stale")));
    assert_eq!(out["cancel"], true);
    assert_eq!(out["errorMessage"], "stale");
    let out = stdout_json(&answer(&pre, &context("changed")));
    assert_eq!(out["cancel"], false);
    assert_eq!(out["contextModification"], "changed");
    // Only PreToolUse is cancelled.
    let post = pre_write(Agent::Cline, "PostToolUse");
    let out = stdout_json(&answer(&post, &deny("late")));
    assert_eq!(out["cancel"], false);
    assert_eq!(out["contextModification"], "late");
}

#[test]
fn long_messages_are_truncated_below_the_cap() {
    let long = "\"quoted\" ".repeat(5_000);
    for agent in Agent::ALL {
        let (before, after) = match agent {
            Agent::ClaudeCode | Agent::Codex | Agent::Qwen => ("PreToolUse", "PostToolUse"),
            Agent::Gemini => ("BeforeTool", "AfterTool"),
            Agent::OpenCode => ("tool.execute.before", "tool.execute.after"),
            Agent::Cursor => ("preToolUse", "afterFileEdit"),
            Agent::Cline => ("PreToolUse", "PostToolUse"),
            Agent::Pi => ("tool_call", "tool_result"),
            Agent::Copilot => ("preToolUse", "preToolUse"),
        };
        for (name, decision) in [(before, deny(&long)), (after, context(&long))] {
            let reply = answer(&pre_write(agent, name), &decision);
            if let Some(out) = &reply.stdout {
                assert!(out.chars().count() <= MAX_OUTPUT_CHARS, "{agent} {name}");
                let value: Value = serde_json::from_str(out).expect("still valid json");
                if out.contains("quoted") {
                    assert!(out.contains("truncated by rewind"), "{agent} {name}");
                }
                drop(value);
            }
        }
    }
}

#[test]
fn prompt_labels() {
    assert_eq!(
        prompt_label("\n\n  hello  \nworld"),
        Some("hello".to_string())
    );
    assert_eq!(prompt_label("   \n"), None);
    let long = "é".repeat(200);
    assert_eq!(
        prompt_label(&long).map(|l| l.chars().count()),
        Some(MAX_LABEL_CHARS)
    );
}

// ---------------------------------------------------------------- init's hook command

#[test]
fn hook_command_quotes_the_binary_and_home_for_the_shell() {
    use super::config::{is_hook_command, Invocation};
    let rewind = Invocation::new(
        std::path::Path::new("/opt/it's here/rewind"),
        Some(std::path::Path::new("/data/rw $HOME")),
    );
    let cmd = rewind.hook_command(Agent::Gemini);
    assert!(
        cmd.starts_with(r#"r='/opt/it'\''s here/rewind'; "#),
        "{cmd}"
    );
    assert!(
        cmd.contains("export REWIND_HOME='/data/rw $HOME'; "),
        "{cmd}"
    );
    assert!(cmd.ends_with(r#"exec "$r" hook gemini"#), "{cmd}");
    assert!(is_hook_command(&cmd, Agent::Gemini));
    assert!(!is_hook_command(&cmd, Agent::ClaudeCode));
    assert!(is_hook_command("rewind hook gemini", Agent::Gemini));
    assert!(!is_hook_command("my-linter hook gemini", Agent::Gemini));
    // Without a home nothing about it is written; Cline's and Cursor's missing-rewind
    // answer is their allow.
    let bare = Invocation::new(std::path::Path::new("/usr/bin/rewind"), None);
    assert!(!bare.hook_command(Agent::Cline).contains("REWIND_HOME"));
    assert!(bare
        .hook_command(Agent::Cline)
        .contains(r#"printf '%s\n' '{"cancel":false}'"#));
}

#[test]
fn an_installed_invocation_is_recovered_from_what_init_wrote() {
    use super::config::Invocation;
    let rewind = Invocation::new(
        std::path::Path::new("/opt/it's here/rewind"),
        Some(std::path::Path::new("/data/rw")),
    );
    let script = rewind.hook_lines(Agent::Cline).join("\n");
    assert_eq!(Invocation::recover(&script), Some(rewind.clone()));
    let json = serde_json::json!({"command": rewind.hook_command(Agent::Gemini)}).to_string();
    assert_eq!(Invocation::recover(&json), Some(rewind));
    let bare = Invocation::new(std::path::Path::new("/usr/bin/rewind"), None);
    assert_eq!(
        Invocation::recover(&bare.hook_command(Agent::Codex)),
        Some(bare)
    );
    assert_eq!(Invocation::recover("rewind hook gemini"), None);
    assert_eq!(
        Invocation::recover("const REWIND = \"/a/rewind\";\nconst REWIND_HOME = null;\n"),
        Some(Invocation::new(std::path::Path::new("/a/rewind"), None))
    );
}

// ---------------------------------------------------------------- pi

/// The envelopes rewind's extension piped from pi 0.73.1 during the scripted e2e run
/// (`tests/agents/fake_openai_chat.py`, FAKE_SCENARIO=pi), each parsed to what that step did.
#[test]
fn pi_recorded_payloads_parse_to_the_scripted_turn() {
    let sid = Some("01a2267d-6e32-730e-8ee3-fcffcd5b1107");
    let pi = |text: &str| parsed(Agent::Pi, text);
    let readme = p("/home/u/proj/README.md");
    // The model named notes.txt relative to pi's working directory.
    let notes = p("notes.txt");

    let start = pi(fixture!("pi", "real-0.73.1/before_agent_start"));
    assert_eq!(
        start.action,
        Action::OpenWindow {
            label: Some("create notes.txt, edit it, read it, uppercase with sed".to_string())
        }
    );
    assert_eq!(start.session_id.as_deref(), sid);
    assert_eq!(start.cwd, Some(p("/home/u/proj")));
    let steps = [
        (
            fixture!("pi", "real-0.73.1/tool_call-write"),
            fixture!("pi", "real-0.73.1/tool_result-write"),
            "call_e2e_00",
            Action::PreWrite {
                paths: vec![p("/home/u/proj/notes.txt")],
            },
            Action::PostWrite {
                paths: vec![p("/home/u/proj/notes.txt")],
                evidence: vec![Evidence::Written {
                    path: p("/home/u/proj/notes.txt"),
                }],
            },
        ),
        (
            fixture!("pi", "real-0.73.1/tool_call-read"),
            fixture!("pi", "real-0.73.1/tool_result-read"),
            "call_e2e_01",
            Action::PreRead {
                paths: vec![readme.clone()],
            },
            Action::PostRead {
                paths: vec![readme.clone()],
            },
        ),
        (
            fixture!("pi", "real-0.73.1/tool_call-edit"),
            fixture!("pi", "real-0.73.1/tool_result-edit"),
            "call_e2e_02",
            Action::PreWrite {
                paths: vec![readme.clone()],
            },
            Action::PostWrite {
                paths: vec![readme.clone()],
                evidence: vec![Evidence::Edits {
                    path: readme,
                    edits: vec![edit("# e2e", "# e2e edited", false)],
                }],
            },
        ),
        (
            fixture!("pi", "real-0.73.1/tool_call-edit-2"),
            fixture!("pi", "real-0.73.1/tool_result-edit-2"),
            "call_e2e_03",
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Edits {
                    path: notes.clone(),
                    edits: vec![edit("two", "TWO", false)],
                }],
            },
        ),
        (
            fixture!("pi", "real-0.73.1/tool_call-read-2"),
            fixture!("pi", "real-0.73.1/tool_result-read-2"),
            "call_e2e_04",
            Action::PreRead {
                paths: vec![notes.clone()],
            },
            Action::PostRead { paths: vec![notes] },
        ),
        (
            fixture!("pi", "real-0.73.1/tool_call-bash"),
            fixture!("pi", "real-0.73.1/tool_result-bash"),
            "call_e2e_05",
            Action::PreShell {
                command: "sed -i 's/one/ONE/' notes.txt".to_string(),
            },
            Action::PostShell {
                command: "sed -i 's/one/ONE/' notes.txt".to_string(),
            },
        ),
    ];
    for (before, after, call, pre, post) in steps {
        let (before, after) = (pi(before), pi(after));
        assert_eq!(before.action, pre, "{call}");
        assert_eq!(after.action, post, "{call}");
        assert_eq!(before.tool_call.as_deref(), Some(call));
        assert_eq!(after.tool_call.as_deref(), Some(call));
        assert_eq!(after.session_id.as_deref(), sid);
    }
    assert_eq!(
        pi(fixture!("pi", "real-0.73.1/agent_end")).action,
        Action::CloseWindow
    );
}

#[test]
fn pi_paths_commands_and_legacy_edits() {
    let pi = |v: serde_json::Value| parse(Agent::Pi, v.to_string().as_bytes());
    // pi drops a leading `@`; a `~` path is the user's home, not rewind's to name.
    let at = pi(serde_json::json!({"hook": "tool_call", "toolName": "write",
        "input": {"path": "@src/a.rs", "content": "x"}}))
    .expect("parses");
    assert_eq!(
        at.action,
        Action::PreWrite {
            paths: vec![p("src/a.rs")]
        }
    );
    let home = pi(serde_json::json!({"hook": "tool_call", "toolName": "write",
        "input": {"path": "~/notes.md", "content": "x"}}))
    .expect("parses");
    assert!(is_ignore(&home.action), "{:?}", home.action);
    // The single oldText/newText pair older models send, after any `edits`.
    let legacy = pi(
        serde_json::json!({"hook": "tool_result", "toolName": "edit",
        "input": {"path": "a", "edits": [{"oldText": "1", "newText": "2"}],
                  "oldText": "3", "newText": "4"}}),
    )
    .expect("parses");
    assert_eq!(
        legacy.action,
        Action::PostWrite {
            paths: vec![p("a")],
            evidence: vec![Evidence::Edits {
                path: p("a"),
                edits: vec![edit("1", "2", false), edit("3", "4", false)],
            }],
        }
    );
    let undo = pi(serde_json::json!({"hook": "command", "command": "rw-undo",
        "args": " --force ", "sessionId": "s1"}))
    .expect("parses");
    assert_eq!(
        undo.action,
        Action::UndoCommand {
            args: vec!["--force".to_string()]
        }
    );
    for ignored in [
        serde_json::json!({"hook": "tool_call", "toolName": "grep", "input": {"pattern": "x"}}),
        serde_json::json!({"hook": "command", "command": "other"}),
        serde_json::json!({"hook": "turn_end"}),
    ] {
        assert!(is_ignore(&pi(ignored).expect("parses").action));
    }
    let err = pi(serde_json::json!({"hook": "tool_call", "toolName": "write",
        "input": {"path": "", "content": "x"}}))
    .expect_err("empty path");
    assert_eq!(
        err.to_string(),
        "hook payload field `input.path` is not a non-empty path"
    );
    let err =
        pi(serde_json::json!({"hook": "tool_call", "toolName": "edit"})).expect_err("no input");
    assert_eq!(err.to_string(), "hook payload is missing field `input`");
}

#[test]
fn pi_answers() {
    let pre = pre_write(Agent::Pi, "tool_call");
    assert_eq!(answer(&pre, &Decision::Allow), Answer::silent());
    let out = stdout_json(&answer(&pre, &deny("stale")));
    assert_eq!(out["block"], true);
    assert_eq!(out["reason"], "stale");
    // tool_call cannot add to what the model sees: the hint goes after the read.
    assert_eq!(answer(&pre, &context("x")), Answer::silent());
    let read = event_of(
        Agent::Pi,
        "tool_result",
        Action::PostRead {
            paths: vec![p("/a")],
        },
    );
    assert_eq!(
        stdout_json(&answer(&read, &context("file changed")))["append"],
        "file changed"
    );
    let undo = event_of(Agent::Pi, "command", Action::UndoCommand { args: vec![] });
    assert_eq!(
        stdout_json(&answer(
            &undo,
            &Decision::Reply {
                text: "rewind undid turn 1".to_string()
            }
        ))["reply"],
        "rewind undid turn 1"
    );
    assert_eq!(allow_anyway(Agent::Pi, None), Answer::silent());
}

// ---------------------------------------------------------------- Cline CLI 3.x, recorded

/// The payloads the real Cline CLI 3.0.65 sent to `.clinerules/hooks/*` during the scripted
/// e2e run (`tests/agents/fake_openai_chat.py`), each parsed to what that step did. Before
/// 3.x's `hookName`s and tools were read, every one of them was ignored.
#[test]
fn cline_3_recorded_payloads_parse_to_the_scripted_turn() {
    let sid = Some("1795943599025_zibgi");
    let cl = |text: &str| parsed(Agent::Cline, text);
    let notes = p("/home/u/proj/notes.txt");
    let readme = p("/home/u/proj/README.md");
    let sed = "sed -i 's/one/ONE/' notes.txt".to_string();

    let start = cl(fixture!("cline", "real-3.0.65/agent_start"));
    assert_eq!(start.action, Action::OpenWindow { label: None });
    assert_eq!(start.session_id.as_deref(), sid);
    assert_eq!(start.cwd, Some(p("/home/u/proj")));
    assert_eq!(start.subagent, None);
    let steps = [
        (
            fixture!("cline", "real-3.0.65/tool_call-editor"),
            fixture!("cline", "real-3.0.65/tool_result-editor"),
            "call_e2e_00",
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Written {
                    path: notes.clone(),
                }],
            },
        ),
        (
            fixture!("cline", "real-3.0.65/tool_call-read_files"),
            fixture!("cline", "real-3.0.65/tool_result-read_files"),
            "call_e2e_01",
            Action::PreRead {
                paths: vec![readme.clone()],
            },
            Action::PostRead {
                paths: vec![readme.clone()],
            },
        ),
        (
            fixture!("cline", "real-3.0.65/tool_call-editor-2"),
            fixture!("cline", "real-3.0.65/tool_result-editor-2"),
            "call_e2e_02",
            Action::PreWrite {
                paths: vec![readme.clone()],
            },
            Action::PostWrite {
                paths: vec![readme.clone()],
                evidence: vec![Evidence::Edits {
                    path: readme,
                    edits: vec![edit("# e2e", "# e2e edited", false)],
                }],
            },
        ),
        (
            fixture!("cline", "real-3.0.65/tool_call-editor-3"),
            fixture!("cline", "real-3.0.65/tool_result-editor-3"),
            "call_e2e_03",
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Edits {
                    path: notes.clone(),
                    edits: vec![edit("two", "TWO", false)],
                }],
            },
        ),
        (
            fixture!("cline", "real-3.0.65/tool_call-read_files-2"),
            fixture!("cline", "real-3.0.65/tool_result-read_files-2"),
            "call_e2e_04",
            Action::PreRead {
                paths: vec![notes.clone()],
            },
            Action::PostRead { paths: vec![notes] },
        ),
        (
            fixture!("cline", "real-3.0.65/tool_call-run_commands"),
            fixture!("cline", "real-3.0.65/tool_result-run_commands"),
            "call_e2e_05",
            Action::PreShell {
                command: sed.clone(),
            },
            Action::PostShell { command: sed },
        ),
    ];
    for (before, after, call, pre, post) in steps {
        let (before, after) = (cl(before), cl(after));
        assert_eq!(before.action, pre, "{call}");
        assert_eq!(after.action, post, "{call}");
        assert_eq!(before.tool_call.as_deref(), Some(call));
        assert_eq!(after.tool_call.as_deref(), Some(call));
        assert_eq!(after.session_id.as_deref(), sid);
    }
    assert_eq!(
        cl(fixture!("cline", "real-3.0.65/agent_end")).action,
        Action::CloseWindow
    );
}

#[test]
fn cline_3_reads_many_files_runs_many_commands_and_names_subagents() {
    let cl = |v: serde_json::Value| parse(Agent::Cline, v.to_string().as_bytes());
    let call = |name: &str, input: serde_json::Value| {
        serde_json::json!({"hookName": "tool_call", "taskId": "conv_1",
            "sessionContext": {"rootSessionId": "root_1"}, "workspaceRoots": ["/w"],
            "agent_id": "agent_2", "parent_agent_id": "agent_1",
            "tool_call": {"id": "c1", "name": name, "input": input}})
    };
    let read = cl(call(
        "read_files",
        serde_json::json!({"files": [{"path": "/w/a"}, {"path": "/w/b", "start_line": 2}]}),
    ))
    .expect("parses");
    assert_eq!(
        read.action,
        Action::PreRead {
            paths: vec![p("/w/a"), p("/w/b")]
        }
    );
    assert_eq!(read.session_id.as_deref(), Some("root_1"));
    assert_eq!(read.subagent.as_deref(), Some("agent_2"));
    let run = cl(call(
        "run_commands",
        serde_json::json!({"commands": ["ls", "cat a"]}),
    ))
    .expect("parses");
    assert_eq!(
        run.action,
        Action::PreShell {
            command: "ls\ncat a".to_string()
        }
    );
    let err = cl(call("run_commands", serde_json::json!({"commands": [1]}))).expect_err("number");
    assert_eq!(
        err.to_string(),
        "hook payload field `tool_call.commands` is not an array of strings"
    );
    // An insert at a line proves nothing of the before (the pre-hook snapped it).
    let mut insert = call(
        "editor",
        serde_json::json!({"path": "/w/a", "new_text": "x", "insert_line": 1}),
    );
    insert["hookName"] = "tool_result".into();
    insert["tool_result"] = insert["tool_call"].take();
    assert_eq!(
        cl(insert).expect("parses").action,
        Action::PostWrite {
            paths: vec![p("/w/a")],
            evidence: vec![]
        }
    );
    let ignored = cl(call(
        "search_codebase",
        serde_json::json!({"queries": ["x"]}),
    ));
    assert!(is_ignore(&ignored.expect("parses").action));
    // A deny on Cline 3's tool_call cancels it.
    let pre = pre_write(Agent::Cline, "tool_call");
    assert_eq!(stdout_json(&answer(&pre, &deny("stale")))["cancel"], true);
}

// ---------------------------------------------------------------- Copilot CLI, recorded

/// The camelCase payloads the real Copilot CLI 1.0.102 sent to `.github/hooks/rewind.json`
/// during the scripted e2e run, each parsed to what that step did; the event is told from the
/// payload's fields (it names none).
#[test]
fn copilot_recorded_payloads_parse_to_the_scripted_turn() {
    let sid = Some("52a6a7b3-2626-433d-8140-8406625b0df9");
    let cp = |text: &str| parsed(Agent::Copilot, text);
    let notes = p("/home/u/proj/notes.txt");
    let readme = p("/home/u/proj/README.md");
    let sed = "sed -i 's/one/ONE/' notes.txt".to_string();

    // sessionStart is no window boundary: Copilot CLI does not wait for its hook.
    let start = cp(fixture!("copilot", "real-1.0.102/sessionStart"));
    assert!(is_ignore(&start.action), "{:?}", start.action);
    assert_eq!(start.session_id.as_deref(), sid);
    assert_eq!(start.cwd, Some(p("/home/u/proj")));
    assert_eq!(
        cp(fixture!("copilot", "real-1.0.102/userPromptSubmitted")).action,
        Action::OpenWindow {
            label: Some("create notes.txt, edit it, read it, uppercase with sed".to_string())
        }
    );
    let steps = [
        (
            fixture!("copilot", "real-1.0.102/preToolUse-create"),
            fixture!("copilot", "real-1.0.102/postToolUse-create"),
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Written {
                    path: notes.clone(),
                }],
            },
        ),
        (
            fixture!("copilot", "real-1.0.102/preToolUse-view"),
            fixture!("copilot", "real-1.0.102/postToolUse-view"),
            Action::PreRead {
                paths: vec![readme.clone()],
            },
            Action::PostRead {
                paths: vec![readme.clone()],
            },
        ),
        (
            fixture!("copilot", "real-1.0.102/preToolUse-edit"),
            fixture!("copilot", "real-1.0.102/postToolUse-edit"),
            Action::PreWrite {
                paths: vec![readme.clone()],
            },
            Action::PostWrite {
                paths: vec![readme.clone()],
                evidence: vec![Evidence::Edits {
                    path: readme,
                    edits: vec![edit("# e2e", "# e2e edited", false)],
                }],
            },
        ),
        (
            fixture!("copilot", "real-1.0.102/preToolUse-edit-2"),
            fixture!("copilot", "real-1.0.102/postToolUse-edit-2"),
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Edits {
                    path: notes.clone(),
                    edits: vec![edit("two", "TWO", false)],
                }],
            },
        ),
        (
            fixture!("copilot", "real-1.0.102/preToolUse-view-2"),
            fixture!("copilot", "real-1.0.102/postToolUse-view-2"),
            Action::PreRead {
                paths: vec![notes.clone()],
            },
            Action::PostRead { paths: vec![notes] },
        ),
        (
            fixture!("copilot", "real-1.0.102/preToolUse-bash"),
            fixture!("copilot", "real-1.0.102/postToolUse-bash"),
            Action::PreShell {
                command: sed.clone(),
            },
            Action::PostShell { command: sed },
        ),
    ];
    for (before, after, pre, post) in steps {
        let (before, after) = (cp(before), cp(after));
        assert_eq!(before.action, pre);
        assert_eq!(after.action, post);
        assert_eq!(before.event_name, "preToolUse");
        assert_eq!(after.event_name, "postToolUse");
        assert_eq!(after.session_id.as_deref(), sid);
    }
    for name in [
        fixture!("copilot", "real-1.0.102/agentStop"),
        fixture!("copilot", "real-1.0.102/sessionEnd"),
    ] {
        assert_eq!(cp(name).action, Action::CloseWindow);
    }
}

#[test]
fn copilot_answers_only_on_pre_tool_use() {
    let pre = event_of(
        Agent::Copilot,
        "preToolUse",
        Action::PreRead {
            paths: vec![p("/a")],
        },
    );
    assert_eq!(answer(&pre, &Decision::Allow), Answer::silent());
    let out = stdout_json(&answer(&pre, &deny("stale")));
    assert_eq!(out["permissionDecision"], "deny");
    assert_eq!(out["permissionDecisionReason"], "stale");
    assert_eq!(
        stdout_json(&answer(&pre, &context("file changed")))["additionalContext"],
        "file changed"
    );
    // Copilot reads no other event's output.
    let post = event_of(
        Agent::Copilot,
        "postToolUse",
        Action::PostRead { paths: vec![] },
    );
    assert_eq!(answer(&post, &context("x")), Answer::silent());
    let tool = |name: &str| {
        parse(
            Agent::Copilot,
            serde_json::json!({"sessionId": "s", "cwd": "/w", "toolName": name,
                "toolArgs": {"pattern": "x"}})
            .to_string()
            .as_bytes(),
        )
        .expect("parses")
    };
    assert!(is_ignore(&tool("grep").action));
    let pre_edit = parse(
        Agent::Copilot,
        br#"{"sessionId": "s", "toolName": "edit", "toolArgs": {"path": "/w/a"}}"#,
    )
    .expect("a pre-edit needs only the path");
    assert_eq!(
        pre_edit.action,
        Action::PreWrite {
            paths: vec![p("/w/a")]
        }
    );
    let err = parse(
        Agent::Copilot,
        br#"{"sessionId": "s", "toolName": "edit", "toolArgs": {"path": "/w/a"}, "toolResult": {}}"#,
    )
    .expect_err("an edit's result without old_str");
    assert_eq!(
        err.to_string(),
        "hook payload is missing field `toolArgs.old_str`"
    );
}

// ---------------------------------------------------------------- Qwen Code, recorded

/// The payloads the real Qwen Code 0.24.4 sent to `rewind hook qwen` during the scripted e2e
/// run, each parsed to what that step did: Claude-shaped events, Gemini CLI's tool ids, the
/// model's call id (`tool_call_id`) as the call's id, and no window on the empty
/// `UserPromptSubmit` it sends after every tool result.
#[test]
fn qwen_recorded_payloads_parse_to_the_scripted_turn() {
    let q = |text: &str| parsed(Agent::Qwen, text);
    let notes = p("/home/u/proj/notes.txt");
    let readme = p("/home/u/proj/README.md");
    let sed = "sed -i 's/one/ONE/' notes.txt".to_string();

    let start = q(fixture!("qwen", "real-0.24.4/session-start"));
    assert_eq!(start.action, Action::SessionStart { fresh: false });
    assert_eq!(start.cwd, Some(p("/home/u/proj")));
    let sid = start.session_id;
    assert!(sid.is_some());
    assert_eq!(
        q(fixture!("qwen", "real-0.24.4/user-prompt-submit")).action,
        Action::OpenWindow {
            label: Some("create notes.txt, edit it, read it, uppercase with sed".to_string())
        }
    );
    let more = q(fixture!("qwen", "real-0.24.4/user-prompt-submit-2"));
    assert!(is_ignore(&more.action), "{:?}", more.action);
    let steps = [
        (
            fixture!("qwen", "real-0.24.4/pre-tool-use-write_file"),
            fixture!("qwen", "real-0.24.4/post-tool-use-write_file"),
            "call_e2e_00",
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Written {
                    path: notes.clone(),
                }],
            },
        ),
        (
            fixture!("qwen", "real-0.24.4/pre-tool-use-read_file"),
            fixture!("qwen", "real-0.24.4/post-tool-use-read_file"),
            "call_e2e_01",
            Action::PreRead {
                paths: vec![readme.clone()],
            },
            Action::PostRead {
                paths: vec![readme.clone()],
            },
        ),
        (
            fixture!("qwen", "real-0.24.4/pre-tool-use-edit"),
            fixture!("qwen", "real-0.24.4/post-tool-use-edit"),
            "call_e2e_02",
            Action::PreWrite {
                paths: vec![readme.clone()],
            },
            Action::PostWrite {
                paths: vec![readme.clone()],
                evidence: vec![Evidence::Edits {
                    path: readme,
                    edits: vec![edit("# e2e", "# e2e edited", false)],
                }],
            },
        ),
        (
            fixture!("qwen", "real-0.24.4/pre-tool-use-edit-2"),
            fixture!("qwen", "real-0.24.4/post-tool-use-edit-2"),
            "call_e2e_03",
            Action::PreWrite {
                paths: vec![notes.clone()],
            },
            Action::PostWrite {
                paths: vec![notes.clone()],
                evidence: vec![Evidence::Edits {
                    path: notes.clone(),
                    edits: vec![edit("two", "TWO", false)],
                }],
            },
        ),
        (
            fixture!("qwen", "real-0.24.4/pre-tool-use-read_file-2"),
            fixture!("qwen", "real-0.24.4/post-tool-use-read_file-2"),
            "call_e2e_04",
            Action::PreRead {
                paths: vec![notes.clone()],
            },
            Action::PostRead { paths: vec![notes] },
        ),
        (
            fixture!("qwen", "real-0.24.4/pre-tool-use-run_shell_command"),
            fixture!("qwen", "real-0.24.4/post-tool-use-run_shell_command"),
            "call_e2e_05",
            Action::PreShell {
                command: sed.clone(),
            },
            Action::PostShell { command: sed },
        ),
    ];
    for (before, after, call, pre, post) in steps {
        let (before, after) = (q(before), q(after));
        assert_eq!(before.action, pre);
        assert_eq!(after.action, post);
        assert_eq!(before.tool_call.as_deref(), Some(call));
        assert_eq!(after.tool_call.as_deref(), Some(call));
        assert_eq!(after.session_id, sid);
    }
    assert_eq!(
        q(fixture!("qwen", "real-0.24.4/stop")).action,
        Action::CloseWindow
    );
}

/// Qwen Code's matcher is a regular expression: `edit` also matches `notebook_edit` and MCP
/// tools, which are not rewind's; answers are Claude Code's.
/// `/rw-undo --force` typed in the real Qwen Code 0.24.4 (`qwen --resume <id> -p`): its
/// `UserPromptSubmit` carries the command file's text in `prompt` and the typed line in
/// `submitted_prompt`. The hook undoes and answers `block` with what it did (no model call).
/// A prompt that only mentions the command, typed or expanded, opens a window as any prompt.
#[test]
fn qwen_rw_undo_is_read_from_the_typed_prompt_and_answered_with_a_block() {
    let typed = parsed(
        Agent::Qwen,
        fixture!("qwen", "real-0.24.4/user-prompt-submit-rw-undo"),
    );
    assert_eq!(
        typed.action,
        Action::UndoCommand {
            args: vec!["--force".to_string()]
        }
    );
    assert_eq!(
        typed.session_id.as_deref(),
        Some("6a95d69f-e423-4671-be46-1ad9d638d4b0")
    );
    let out = stdout_json(&answer(
        &typed,
        &Decision::Reply {
            text: "rewind undid turn 1".to_string(),
        },
    ));
    assert_eq!(out["decision"], "block");
    assert_eq!(out["reason"], "rewind undid turn 1");
    let mention = parsed(
        Agent::Qwen,
        r#"{"hook_event_name":"UserPromptSubmit","session_id":"s","cwd":"/w","prompt":"/rw-undo --force","submitted_prompt":"what does /rw-undo do?"}"#,
    );
    assert_eq!(
        mention.action,
        Action::OpenWindow {
            label: Some("/rw-undo --force".to_string())
        }
    );
}

#[test]
fn qwen_ignores_other_tools_and_answers_as_claude_code() {
    let other = parsed(
        Agent::Qwen,
        r#"{"hook_event_name":"PreToolUse","session_id":"s","cwd":"/w","tool_name":"notebook_edit","tool_input":{"file_path":"/w/a.ipynb"},"tool_use_id":"t"}"#,
    );
    assert!(is_ignore(&other.action), "{:?}", other.action);
    let many = parsed(
        Agent::Qwen,
        r#"{"hook_event_name":"PostToolUse","session_id":"s","cwd":"/w","tool_name":"edit","tool_input":{"file_path":"/w/a","old_string":"a","new_string":"b","replace_all":true},"tool_use_id":"t"}"#,
    );
    assert_eq!(many.tool_call.as_deref(), Some("t"));
    assert_eq!(
        many.action,
        Action::PostWrite {
            paths: vec![p("/w/a")],
            evidence: vec![Evidence::Edits {
                path: p("/w/a"),
                edits: vec![edit("a", "b", true)],
            }],
        }
    );
    let pre = event_of(
        Agent::Qwen,
        "PreToolUse",
        Action::PreRead {
            paths: vec![p("/a")],
        },
    );
    assert_eq!(answer(&pre, &Decision::Allow), Answer::silent());
    let out = stdout_json(&answer(&pre, &deny("stale")));
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(
        stdout_json(&answer(&pre, &context("changed")))["hookSpecificOutput"]["additionalContext"],
        "changed"
    );
}
