//! The architecture, checked on the source: the library's top-level modules depend on each
//! other one way only (no cycles), and no function outside tests is longer than
//! [`MAX_LINES`] unless its doc comment says why ("Long because …").
//!
//! `cargo test --test it architecture -- --nocapture` prints the module dependency listing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a function may be without a doc line saying why.
const MAX_LINES: usize = 80;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.unwrap();
        if entry.path().extension().is_some_and(|e| e == "rs") {
            out.push(entry.into_path());
        }
    }
    out
}

/// The source with comments, string and char literals blanked out (newlines kept), so that
/// braces and paths are only code's.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&b, i) {
            // A raw string: r"…", r#"…"#, …
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let closes = |k: usize| {
                b.get(k) == Some(&'"') && (1..=hashes).all(|h| b.get(k + h) == Some(&'#'))
            };
            while j < b.len() && !closes(j) {
                j += 1;
            }
            let end = (j + 1 + hashes).min(b.len());
            out.extend(b[i..end].iter().map(|&c| blank(c)));
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                let step = if b[i] == '\\' { 2 } else { 1 };
                out.extend(b[i..(i + step).min(b.len())].iter().map(|&c| blank(c)));
                i += step;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}'), or a lifetime ('a), left as it is.
            let end = if next == Some('\\') {
                (i + 2..b.len()).find(|&k| b[k] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    out.extend(std::iter::repeat_n(' ', e + 1 - i));
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// The index of the brace closing the one at `open`.
fn closing(code: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (k, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    code.len()
}

fn line_of(code: &[u8], at: usize) -> usize {
    code[..at].iter().filter(|&&c| c == b'\n').count()
}

/// Byte ranges of `#[cfg(test)]` (or `cfg(all(test, …))`) inline modules, and the names of
/// such modules declared as files (`mod tests;`).
fn test_modules(code: &str) -> (Vec<(usize, usize)>, Vec<String>) {
    let bytes = code.as_bytes();
    let (mut ranges, mut files) = (Vec::new(), Vec::new());
    for (at, _) in code.match_indices("#[cfg(") {
        let attr_end = code[at..].find(']').map_or(code.len(), |e| at + e);
        if !code[at..attr_end].contains("test") {
            continue;
        }
        let rest = code[attr_end + 1..].trim_start();
        let Some(after_mod) = rest.strip_prefix("mod ") else {
            continue;
        };
        let name: String = after_mod
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let start = code.len() - rest.len();
        match after_mod[name.len()..].trim_start().chars().next() {
            Some(';') => files.push(name),
            Some('{') => {
                let open = start + rest.find('{').unwrap_or(0);
                ranges.push((at, closing(bytes, open)));
            }
            _ => {}
        }
    }
    (ranges, files)
}

struct LongFn {
    file: String,
    line: usize,
    name: String,
    lines: usize,
}

/// Functions of `path` over [`MAX_LINES`] whose doc does not say why.
fn long_functions(path: &Path, text: &str) -> Vec<LongFn> {
    let code = code_only(text);
    let bytes = code.as_bytes();
    let (skip, _) = test_modules(&code);
    let source_lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        let word_start =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        if !word_start || skip.iter().any(|&(s, e)| at > s && at < e) {
            continue;
        }
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue; // `fn(` types
        }
        let Some(body) = code[at..].find(['{', ';']).map(|k| at + k) else {
            continue;
        };
        if bytes[body] == b';' {
            continue;
        }
        let (first, last) = (line_of(bytes, at), line_of(bytes, closing(bytes, body)));
        let lines = last - first + 1;
        if lines > MAX_LINES && !says_why(&source_lines, first) {
            out.push(LongFn {
                file: path.display().to_string(),
                line: first + 1,
                name,
                lines,
            });
        }
    }
    out
}

/// Whether the doc comment right above line `fn_line` (attributes skipped) says why the
/// function is long.
fn says_why(lines: &[&str], fn_line: usize) -> bool {
    lines[..fn_line]
        .iter()
        .rev()
        .map(|l| l.trim())
        .skip_while(|l| l.starts_with("#["))
        .take_while(|l| l.starts_with("///") || l.starts_with("#["))
        .any(|l| l.to_lowercase().contains("long because"))
}

#[test]
fn no_function_outside_tests_is_over_80_lines_unless_its_doc_says_why() {
    let mut long = Vec::new();
    let mut test_files = BTreeSet::new();
    let files = rust_files(&src());
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let (_, tests) = test_modules(&code_only(&text));
        let dir = path.parent().unwrap();
        let own = path.with_extension("");
        for name in tests {
            for base in [dir.to_path_buf(), own.clone()] {
                test_files.insert(base.join(format!("{name}.rs")));
                test_files.insert(base.join(&name).join("mod.rs"));
            }
        }
    }
    for path in files.iter().filter(|p| !test_files.contains(*p)) {
        let text = std::fs::read_to_string(path).unwrap();
        long.extend(long_functions(path, &text));
    }
    let listing: Vec<String> = long
        .iter()
        .map(|f| format!("{}:{} fn {} ({} lines)", f.file, f.line, f.name, f.lines))
        .collect();
    assert!(
        listing.is_empty(),
        "functions over {MAX_LINES} lines without a \"Long because\" doc line:\n{}",
        listing.join("\n")
    );
}

/// The library's top-level modules (`src/NAME.rs` or `src/NAME/`), without the binary's.
fn top_level_modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    code_only(&lib)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';').trim().to_string())
        .collect()
}

/// Which top-level modules each top-level module names through `crate::` paths.
fn module_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let modules = top_level_modules();
    let mut deps: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for path in rust_files(&src()) {
        let rel = path.strip_prefix(src()).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if !modules.contains(&module) {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&path).unwrap());
        for used in crate_paths(&code) {
            if used != module && modules.contains(&used) {
                deps.get_mut(&module).unwrap().insert(used);
            }
        }
    }
    deps
}

/// The first segment of every `crate::…` path, groups (`crate::{a, b::c}`) included.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = closing(rest.as_bytes(), 0);
            let mut depth = 0;
            let mut item = String::new();
            for c in group[..end.saturating_sub(1)].chars().chain([',']) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let first = item.trim().split("::").next().unwrap_or("").to_string();
                        out.insert(first);
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
        } else {
            out.insert(
                rest.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect(),
            );
        }
    }
    out
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(deps: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        deps: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in &self.deps[v] {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let lw = self.low[w.as_str()];
                    self.low.insert(v, self.low[v].min(lw));
                } else if self.stack.contains(&w.as_str()) {
                    let iw = self.index[w.as_str()];
                    self.low.insert(v, self.low[v].min(iw));
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        deps,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in deps.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn top_level_modules_depend_on_each_other_one_way() {
    let deps = module_dependencies();
    for (module, uses) in &deps {
        let uses: Vec<&str> = uses.iter().map(String::as_str).collect();
        println!("{module:<12} -> {}", uses.join(" "));
    }
    assert!(
        deps.contains_key("engine") && deps.contains_key("undo"),
        "{deps:?}"
    );
    assert!(
        deps["undo"].contains("engine"),
        "the listing misses `crate::` paths"
    );
    assert_eq!(cycles(&deps), Vec::<Vec<String>>::new(), "module cycles");
}

#[test]
fn the_checks_see_what_they_check() {
    // A cycle is found, and so is a long function, through strings and comments with braces.
    let deps: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(m, u)| (m.to_string(), u.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(cycles(&deps), vec![vec!["a", "b", "c"]]);
    assert_eq!(
        crate_paths("use crate::{engine::{Home, Session}, ids::BlobId};\nx = crate::undo::run;"),
        ["engine", "ids", "undo"].map(String::from).into()
    );
    let body = "    let s = \"}}{\"; // }\n    let c = '}';\n".repeat(41);
    let long = format!("fn long<'a>() {{\n{body}}}\n");
    assert_eq!(long_functions(Path::new("x.rs"), &long).len(), 1);
    let excused = format!("/// Long because it must be.\n{long}");
    assert!(long_functions(Path::new("x.rs"), &excused).is_empty());
    let in_tests = format!("#[cfg(test)]\nmod tests {{\n{long}}}\n");
    assert!(long_functions(Path::new("x.rs"), &in_tests).is_empty());
}
