//! The architecture, checked on the source: the library's top-level modules depend on each
//! other one way only (no cycles), and so do the files of `src/scan/` and `src/engine/`
//! among their siblings; no function outside tests is longer than [`MAX_LINES`] unless its
//! doc comment says why ("Long because …"), and none of `src/scan/` takes more than
//! [`MAX_PARAMETERS`] parameters; outside `engine` and `index` nothing names the raw index,
//! and none of the engine's capability types has more than [`MAX_METHODS`] methods.
//!
//! `cargo test --test it architecture -- --nocapture` prints the dependency listings.

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

/// Where each function outside `#[cfg(test)]` modules starts in `code` (at its `fn`), and
/// its name.
fn functions(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let (skip, _) = test_modules(code);
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        let word_start =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        if !word_start || skip.iter().any(|&(s, e)| at > s && at < e) {
            continue;
        }
        let name = ident_at(&code[at + 3..]);
        if !name.is_empty() {
            out.push((at, name)); // not `fn(` types
        }
    }
    out
}

fn ident_at(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Functions of `path` over [`MAX_LINES`] whose doc does not say why.
fn long_functions(path: &Path, text: &str) -> Vec<LongFn> {
    let code = code_only(text);
    let bytes = code.as_bytes();
    let source_lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (at, name) in functions(&code) {
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

/// The `.rs` files under `dir` that are not test modules of their own (`#[cfg(test)] mod
/// tests;`), sorted.
fn non_test_files(dir: &Path) -> Vec<PathBuf> {
    let files = rust_files(dir);
    let mut test_files = BTreeSet::new();
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
    files
        .into_iter()
        .filter(|p| !test_files.contains(p))
        .collect()
}

#[test]
fn no_function_outside_tests_is_over_80_lines_unless_its_doc_says_why() {
    let mut long = Vec::new();
    for path in non_test_files(&src()) {
        let text = std::fs::read_to_string(&path).unwrap();
        long.extend(long_functions(&path, &text));
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
    named_paths(code, &[])
        .into_iter()
        .filter_map(|p| p.into_iter().next())
        .collect()
}

/// Every path that `code`, the code of module `at` (its path from the crate root), names
/// through `crate::`, `super::` or `self::`, from the crate root, groups expanded:
/// `use super::{fs, walk::{self, DirWatch}}` in `scan::look` names `scan::fs`, `scan::walk`
/// and `scan::walk::DirWatch`. Paths to items of `at` itself or of its parent are among
/// them; the caller decides what counts.
fn named_paths(code: &str, at: &[String]) -> BTreeSet<Vec<String>> {
    let bytes = code.as_bytes();
    let mut out = BTreeSet::new();
    for word in ["crate::", "super::", "self::"] {
        for (start, _) in code.match_indices(word) {
            let before = start.checked_sub(1).map(|k| bytes[k]);
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':') {
                continue; // `x::super::`, the second `super::` of `super::super::`, `my_crate::`
            }
            let mut rest = &code[start + word.len()..];
            let mut base: Vec<String> = match word {
                "crate::" => Vec::new(),
                "self::" => at.to_vec(),
                _ => at[..at.len().saturating_sub(1)].to_vec(),
            };
            if word == "super::" {
                while let Some(r) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = r;
                }
            }
            for tail in path_tails(rest) {
                out.insert([base.clone(), tail].concat());
            }
        }
    }
    out
}

/// The segments of the path that `rest` starts with (after a `::`), one list for each member
/// of a group; `self` in a group is the group's own path, `*` and `as …` end a path.
fn path_tails(rest: &str) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut s = rest.trim_start();
    loop {
        if s.starts_with('{') {
            let end = closing(s.as_bytes(), 0);
            let mut out = Vec::new();
            for member in top_level_items(&s[1..end.min(s.len())]) {
                for tail in path_tails(member) {
                    out.push([segments.clone(), tail].concat());
                }
            }
            return out;
        }
        let ident = ident_at(s);
        if ident.is_empty() {
            break;
        }
        s = &s[ident.len()..];
        if ident != "self" {
            segments.push(ident);
        }
        match s.trim_start().strip_prefix("::") {
            Some(r) => s = r.trim_start(),
            None => break,
        }
    }
    vec![segments]
}

/// The comma-separated items of `list`, commas inside braces, brackets, parentheses or angle
/// brackets (not the `>` of `->`) left inside their item.
fn top_level_items(list: &str) -> Vec<&str> {
    let bytes = list.as_bytes();
    let (mut depth, mut from, mut out) = (0i32, 0, Vec::new());
    for (k, &c) in bytes.iter().enumerate() {
        match c {
            b'{' | b'[' | b'(' | b'<' => depth += 1,
            b'>' if k > 0 && bytes[k - 1] == b'-' => {}
            b'}' | b']' | b')' | b'>' => depth -= 1,
            b',' if depth == 0 => {
                out.push(&list[from..k]);
                from = k + 1;
            }
            _ => {}
        }
    }
    out.push(&list[from..]);
    out.retain(|item| !item.trim().is_empty());
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

/// A file's module, from the crate root: `src/scan/walk/ordered.rs` is `scan::walk::ordered`,
/// `src/scan/mod.rs` is `scan`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let mut module: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = module.pop().unwrap();
    if !matches!(last.as_str(), "mod.rs" | "lib.rs" | "main.rs") {
        module.push(last.trim_end_matches(".rs").to_string());
    }
    module
}

/// `code` with its `#[cfg(test)]` modules blanked: a test may reach into any module.
fn without_tests(code: &str) -> String {
    let (ranges, _) = test_modules(code);
    let mut out = code.as_bytes().to_vec();
    for (start, end) in ranges {
        for c in &mut out[start..=end.min(code.len() - 1)] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    }
    String::from_utf8(out).unwrap()
}

/// The code of each file under `src/DIR` (test modules blanked), by module.
fn files_under(dir: &str) -> BTreeMap<Vec<String>, String> {
    non_test_files(&src().join(dir))
        .into_iter()
        .map(|path| {
            let code = code_only(&std::fs::read_to_string(&path).unwrap());
            (module_of(&path), without_tests(&code))
        })
        .collect()
}

/// Siblings' dependencies, for each module of `files` that has children among them: child A
/// uses child B when a file of A (A's own, or one of the files below it) names a path into B
/// (B's file or one below it). A parent declaring, re-exporting and using its children, and
/// children using their parent's items, is the usual shape of a module tree and is no
/// dependency here; a cycle among siblings is what the checks look for.
fn sibling_dependencies(
    files: &BTreeMap<Vec<String>, String>,
) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut levels: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for module in files.keys() {
        if let Some((name, parent)) = module.split_last() {
            if files.contains_key(parent) {
                let level = levels.entry(parent.join("::")).or_default();
                level.entry(name.clone()).or_default();
            }
        }
    }
    for (from, code) in files {
        for path in named_paths(code, from) {
            // The module the path leads into: its longest start that is a file's module.
            let Some(to) = (1..=path.len())
                .rev()
                .map(|n| &path[..n])
                .find(|p| files.contains_key(*p))
            else {
                continue;
            };
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            let parent = &from[..common];
            if common == from.len() || common == to.len() || !files.contains_key(parent) {
                continue; // one holds the other, or they meet above the files checked
            }
            levels
                .get_mut(&parent.join("::"))
                .and_then(|level| level.get_mut(&from[common]))
                .expect("every file's module is listed under its parent")
                .insert(to[common].clone());
        }
    }
    levels
}

/// Prints each level's dependencies, and returns the cycles among siblings under `src/DIR`
/// as `parent: a b c`.
fn sibling_cycles(dir: &str) -> Vec<String> {
    let levels = sibling_dependencies(&files_under(dir));
    let mut found = Vec::new();
    for (parent, deps) in &levels {
        println!("{parent}:");
        for (module, uses) in deps {
            let uses: Vec<&str> = uses.iter().map(String::as_str).collect();
            println!("  {module:<14} -> {}", uses.join(" "));
        }
        found.extend(
            cycles(deps)
                .into_iter()
                .map(|c| format!("{parent}: {}", c.join(" "))),
        );
    }
    found
}

#[test]
fn files_of_scan_depend_on_each_other_one_way() {
    let levels = sibling_dependencies(&files_under("scan"));
    assert!(
        levels["scan"]["walk"].contains("listing") && levels.contains_key("scan::walk"),
        "the listing misses paths: {levels:?}"
    );
    assert_eq!(sibling_cycles("scan"), Vec::<String>::new(), "file cycles");
}

#[test]
fn files_of_engine_depend_on_each_other_one_way() {
    let levels = sibling_dependencies(&files_under("engine"));
    assert!(levels.contains_key("engine::exec"), "{levels:?}");
    assert_eq!(
        sibling_cycles("engine"),
        Vec::<String>::new(),
        "file cycles"
    );
}

/// The most parameters a function of `src/scan/` takes (`self` not counted): more are
/// grouped in a struct of what belongs together (an `Options`, a `Context`).
const MAX_PARAMETERS: usize = 6;

/// How many parameters, `self` not counted, the function whose `fn` is at `at` takes.
fn parameters(code: &str, at: usize, name: &str) -> usize {
    let bytes = code.as_bytes();
    let mut k = at + "fn ".len() + name.len();
    while bytes[k].is_ascii_whitespace() {
        k += 1;
    }
    if bytes[k] == b'<' {
        // Generics: `<F: Fn(A) -> B>` (not the `>` of `->`).
        let mut depth = 0;
        while k < bytes.len() {
            match bytes[k] {
                b'<' => depth += 1,
                b'>' if bytes[k - 1] != b'-' => depth -= 1,
                _ => {}
            }
            k += 1;
            if depth == 0 {
                break;
            }
        }
    }
    let open = k + code[k..].find('(').unwrap();
    let mut depth = 0;
    let close = (open..bytes.len())
        .find(|&i| {
            match bytes[i] {
                b'(' => depth += 1,
                b')' => depth -= 1,
                _ => {}
            }
            depth == 0
        })
        .unwrap();
    top_level_items(&code[open + 1..close])
        .into_iter()
        .filter(|item| !is_self(item))
        .count()
}

/// Whether a parameter is the receiver: `self`, `mut self`, `&self`, `&'a mut self`, `self: …`.
fn is_self(param: &str) -> bool {
    let p = param.trim().trim_start_matches('&').trim_start();
    let p = match p.strip_prefix('\'') {
        Some(lifetime) => lifetime.split_once(' ').map_or("", |(_, r)| r).trim_start(),
        None => p,
    };
    let p = p.strip_prefix("mut ").unwrap_or(p).trim_start();
    p == "self" || p.starts_with("self:") || p.starts_with("self ")
}

/// Functions outside tests over [`MAX_PARAMETERS`] in `text`, as `NAME (N parameters)`.
fn wide_functions(text: &str) -> Vec<String> {
    let code = code_only(text);
    functions(&code)
        .into_iter()
        .map(|(at, name)| (parameters(&code, at, &name), name))
        .filter(|&(n, _)| n > MAX_PARAMETERS)
        .map(|(n, name)| format!("fn {name} ({n} parameters)"))
        .collect()
}

#[test]
fn no_function_of_scan_outside_tests_takes_over_6_parameters() {
    let mut wide = Vec::new();
    for path in non_test_files(&src().join("scan")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = path.strip_prefix(src()).unwrap().display().to_string();
        wide.extend(
            wide_functions(&text)
                .into_iter()
                .map(|f| format!("{file}: {f}")),
        );
    }
    assert!(
        wide.is_empty(),
        "functions over {MAX_PARAMETERS} parameters (group them in a struct):\n{}",
        wide.join("\n")
    );
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

    // A cycle of sibling files, through `super::`, `crate::` and groups; not one through the
    // parent, nor from a file below a sibling (folded into it).
    let files: BTreeMap<Vec<String>, String> = [
        ("a", "mod b; mod c; mod d; use b::X; pub struct P;"),
        ("a::b", "use super::{c::Y, P};"),
        ("a::c", "use crate::a::{b::{self}, P};"),
        ("a::d", "mod e; use super::P;"),
        ("a::d::e", "fn f() { super::super::b::g(); }"),
    ]
    .into_iter()
    .map(|(m, code)| (m.split("::").map(String::from).collect(), code.into()))
    .collect();
    let levels = sibling_dependencies(&files);
    assert_eq!(cycles(&levels["a"]), vec![vec!["b", "c"]], "{levels:?}");
    assert_eq!(levels["a"]["d"], ["b"].map(String::from).into());
    assert!(levels["a::d"]["e"].is_empty());
    assert_eq!(
        named_paths(
            "use super::super::{x, y::{self, Z}};",
            &["a".into(), "b".into(), "c".into()]
        ),
        [vec!["a", "x"], vec!["a", "y"], vec!["a", "y", "Z"]]
            .map(|p| p.into_iter().map(String::from).collect())
            .into()
    );

    // Parameters: `self` and commas inside types are not counted; tests are not checked.
    let wide = "fn w<F: Fn(u8, u8) -> u8>(&'a mut self, a: (u8, u8), b: F, c: [u8; 2], d: u8, e: u8, f: u8, g: u8) {}";
    assert_eq!(wide_functions(wide), ["fn w (7 parameters)"]);
    assert!(wide_functions(&wide.replace(", g: u8", "")).is_empty());
    assert!(wide_functions(&format!("#[cfg(test)]\nmod tests {{\n{wide}\n}}\n")).is_empty());
}

/// What writes the index or opens it: only `engine` (the recorder, the locked writer,
/// maintenance) and `index` itself may name these. Everything else reads through
/// `History` (read transactions) or asks an engine verb.
const RAW_INDEX: [&str; 4] = ["WriteTx", "index::Index", ".index()", "Index::open"];

#[test]
fn only_engine_and_index_write_or_open_the_raw_index() {
    let mut found = Vec::new();
    for path in non_test_files(&src()) {
        let module = module_of(&path);
        if matches!(module.first().map(String::as_str), Some("engine" | "index")) {
            continue;
        }
        let code = without_tests(&code_only(&std::fs::read_to_string(&path).unwrap()));
        for name in RAW_INDEX {
            let whole = code.match_indices(name).any(|(at, _)| {
                let next = code[at + name.len()..].chars().next();
                !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            if whole {
                found.push(format!("{}: {name}", module.join("::")));
            }
        }
    }
    assert_eq!(
        found,
        Vec::<String>::new(),
        "raw index outside engine/index"
    );
}

/// The most methods one of the engine's capability types may have (issue 42: `Session` had
/// grown to 68 and become the hub again).
const MAX_METHODS: usize = 30;

/// The engine's types that hand out what history may do: the home, a session, the read-only
/// history view and the locked writer.
const CAPABILITY_TYPES: [&str; 4] = ["Home", "Session", "History", "Locked"];

/// The name of the type an inherent `impl` block at `at` (its `impl`) is for, or `None` for
/// a trait impl.
fn inherent_impl_type(code: &str, at: usize) -> Option<String> {
    let header = &code[at..at + code[at..].find('{')?];
    if header.contains(" for ") {
        return None;
    }
    let mut rest = header["impl".len()..].trim_start();
    if rest.starts_with('<') {
        let mut depth = 0;
        let end = rest.char_indices().find_map(|(i, c)| {
            depth += match c {
                '<' => 1,
                '>' => -1,
                _ => 0,
            };
            (depth == 0).then_some(i)
        })?;
        rest = rest[end + 1..].trim_start();
    }
    Some(ident_at(rest))
}

/// The methods each inherent `impl` block of `code` (test modules blanked) declares, summed
/// by type.
fn methods_by_type(code: &str, counts: &mut BTreeMap<String, usize>) {
    let bytes = code.as_bytes();
    for (at, _) in code.match_indices("impl") {
        let line_start = at == 0 || bytes[at - 1] == b'\n';
        let word_end = !bytes
            .get(at + 4)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
        if !line_start || !word_end {
            continue;
        }
        let Some(name) = inherent_impl_type(code, at) else {
            continue;
        };
        let open = at + code[at..].find('{').unwrap();
        let body = &code[open + 1..closing(bytes, open)];
        let mut depth = 0;
        let mut n = 0;
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                'f' if depth == 0 && body[i..].starts_with("fn ") => {
                    let before = body[..i].chars().next_back();
                    n += usize::from(!before.is_some_and(|b| b.is_alphanumeric() || b == '_'));
                }
                _ => {}
            }
        }
        *counts.entry(name).or_default() += n;
    }
}

#[test]
fn no_capability_type_of_the_engine_has_over_30_methods() {
    let mut counts = BTreeMap::new();
    for path in non_test_files(&src().join("engine")) {
        let code = without_tests(&code_only(&std::fs::read_to_string(&path).unwrap()));
        methods_by_type(&code, &mut counts);
    }
    for name in CAPABILITY_TYPES {
        let n = counts.get(name).copied().unwrap_or(0);
        println!("{name}: {n} methods");
        assert!(n > 0, "{name} has no methods: the check no longer sees it");
        assert!(
            n <= MAX_METHODS,
            "{name} has {n} methods (at most {MAX_METHODS})"
        );
    }
}

#[test]
fn the_method_count_sees_inherent_impls_only() {
    let code = "impl<'a> Session<'a> {\n    pub fn a(&self) {\n        fn inner() {}\n    }\n    fn b() {}\n}\nimpl Drop for Session<'_> {\n    fn drop(&mut self) {}\n}\nimpl Home {\n    pub(crate) fn c() {}\n}\n";
    let mut counts = BTreeMap::new();
    methods_by_type(code, &mut counts);
    assert_eq!(counts.get("Session"), Some(&2));
    assert_eq!(counts.get("Home"), Some(&1));
}
