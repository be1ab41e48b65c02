//! The layer scanner the crates' layer tests share: reads a crate's layer
//! table from its crate doc (`src/lib.rs`, a ```` ```text layers ```` block),
//! resolves every `crate::` and `super::` path in its non-test code to the
//! module it names (through the crate root's re-exports for `crate::Name`),
//! and reports the paths that reach a layer above their module's and the
//! folders whose modules sit on two layers. Only items under a `cfg` that
//! holds in test builds alone are left out.

#![allow(dead_code)] // each crate's test uses what it checks
#![allow(clippy::unwrap_used)] // a scan that cannot read the sources must fail the test

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// `(module path, layer)` rows of the crate doc's layer table.
pub fn layer_table(lib_rs: &str) -> Vec<(String, usize)> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in lib_rs.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if doc == "```text layers" {
            inside = true;
            continue;
        }
        if inside && doc.starts_with("```") {
            break;
        }
        if !inside || doc.is_empty() {
            continue;
        }
        let (layer, modules) = doc
            .split_once(' ')
            .unwrap_or_else(|| panic!("layer row without modules: {doc:?}"));
        let layer: usize = layer
            .trim_end_matches('.')
            .parse()
            .unwrap_or_else(|_| panic!("layer row must start with its number: {doc:?}"));
        for m in modules.split_whitespace() {
            rows.push((m.trim_end_matches(',').to_string(), layer));
        }
    }
    assert!(
        !rows.is_empty(),
        "src/lib.rs has no ```text layers block in its crate doc"
    );
    rows
}

/// The layer of module path `segs` (longest table prefix), if any.
pub fn layer_of(table: &[(String, usize)], segs: &[String]) -> Option<(String, usize)> {
    let mut best: Option<(String, usize)> = None;
    for (m, layer) in table {
        let parts: Vec<&str> = m.split("::").collect();
        if parts.len() <= segs.len()
            && parts.iter().zip(segs).all(|(a, b)| a == b)
            && best
                .as_ref()
                .is_none_or(|(b, _)| b.split("::").count() < parts.len())
        {
            best = Some((m.clone(), *layer));
        }
    }
    best
}

/// Source text with comments, strings and char literals blanked out.
pub fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'r' && b[i..].starts_with(b"r#\"") {
            let end = src[i + 3..].find("\"#").map_or(b.len(), |e| i + 3 + e + 2);
            i = end;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('x', '\n', '\''); a lifetime has no closing quote.
            let close = src[i + 1..].find('\'').map_or(b.len(), |e| i + 1 + e);
            let close = if b[i + 1] == b'\\' && b[i + 2] == b'\'' {
                i + 3
            } else {
                close
            };
            i = close + 1;
            out.push_str("' '");
        } else {
            let ch = src[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Whether the cfg predicate `pred` holds only in test builds: `test`,
/// or `all(...)` with such a term, or `any(...)` of such terms alone.
/// `not(test)` and `any(test, feature = ...)` are production code too.
pub fn requires_test(pred: &str) -> bool {
    let pred = pred.trim();
    if pred == "test" {
        return true;
    }
    let Some((op, args)) = pred.strip_suffix(')').and_then(|p| p.split_once('(')) else {
        return false;
    };
    // The arguments, split at the commas outside parentheses.
    let mut terms = Vec::new();
    let (mut depth, mut from) = (0usize, 0usize);
    for (i, c) in args.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&args[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&args[from..]);
    let terms = terms.into_iter().filter(|t| !t.trim().is_empty());
    match op.trim() {
        "all" => terms.into_iter().any(requires_test),
        "any" => {
            let mut terms = terms.peekable();
            terms.peek().is_some() && terms.all(requires_test)
        }
        _ => false, // not(...), feature = ..., target_os = ...
    }
}

/// `src` with the items under a `#[cfg(...)]` that holds only in test
/// builds removed ([`requires_test`]).
pub fn without_test_items(src: &str) -> String {
    let mut out = String::new();
    let mut rest = src;
    while let Some(at) = rest.find("#[cfg(") {
        let attr_end = rest[at..].find(']').map_or(rest.len(), |e| at + e + 1);
        let attr = &rest[at..attr_end];
        let pred = attr
            .strip_prefix("#[cfg(")
            .and_then(|a| a.strip_suffix(")]"))
            .unwrap_or("");
        if !requires_test(pred) {
            out.push_str(&rest[..attr_end]);
            rest = &rest[attr_end..];
            continue;
        }
        out.push_str(&rest[..at]);
        // Skip the item: up to a `;` before any `{`, or its brace block.
        let item = &rest[attr_end..];
        let semi = item.find(';');
        let open = item.find('{');
        let end = match (semi, open) {
            (Some(s), Some(o)) if s < o => s + 1,
            (Some(s), None) => s + 1,
            (_, Some(o)) => {
                let mut depth = 0usize;
                let mut end = item.len();
                for (k, c) in item[o..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = o + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, None) => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

pub fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Parse a path tail at `s` (after `crate::` or `super::`): every full
/// path it names, brace groups expanded.
pub fn parse_tail(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix.to_vec();
    let mut i = 0;
    let b = s.as_bytes();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < b.len() && b[i] == b'{' {
            i += 1;
            loop {
                while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
                    i += 1;
                }
                if i >= b.len() || b[i] == b'}' {
                    return i + 1;
                }
                i += parse_tail(&s[i..], &segs, out);
            }
        }
        let start = i;
        while i < s.len() && s[i..].starts_with(is_ident) {
            i += s[i..].chars().next().map_or(1, char::len_utf8);
        }
        if i == start {
            out.push(segs);
            return i;
        }
        segs.push(s[start..i].to_string());
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            out.push(segs);
            return i;
        }
    }
}

/// The module path of a source file (`scheduler/worker.rs` ->
/// `["scheduler", "worker"]`, `scheduler/mod.rs` -> `["scheduler"]`).
pub fn module_of(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    segs
}

/// Every path a file names through `crate::` or `super::`, resolved to
/// absolute module segments.
pub fn paths_in(src: &str, module: &[String]) -> Vec<Vec<String>> {
    let text = strip(&without_test_items(&strip(src)));
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let before_ok = i == 0 || !text[..i].ends_with(is_ident);
        let here = &text[i..];
        if before_ok && here.starts_with("crate::") {
            i += "crate::".len();
            i += parse_tail(&text[i..], &[], &mut out);
        } else if before_ok && here.starts_with("super::") {
            // `super` of a file's module; a `mod.rs` is its directory's module.
            let mut base = module.to_vec();
            let mut k = i;
            while text[k..].starts_with("super::") {
                base.pop();
                k += "super::".len();
            }
            i = k + parse_tail(&text[k..], &base, &mut out);
        } else {
            i += here.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// Names the crate root re-exports, mapped to the module they come from.
pub fn root_reexports(lib_rs: &str) -> BTreeMap<String, Vec<String>> {
    let text = strip(lib_rs);
    let mut map = BTreeMap::new();
    for stmt in text.split(';') {
        let Some(at) = stmt.find("pub use ") else {
            continue;
        };
        let mut paths = Vec::new();
        parse_tail(&stmt[at + "pub use ".len()..], &[], &mut paths);
        for p in paths {
            if let Some((name, module)) = p.split_last() {
                map.insert(name.clone(), module.to_vec());
            }
        }
    }
    map
}

pub fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The folders (top-level module directories) whose files sit on more
/// than one layer of `table`, each as a line naming the layers and a
/// module on each: a folder is one layer.
pub fn folders_spanning_layers(table: &[(String, usize)], files: &[PathBuf]) -> BTreeSet<String> {
    let mut by_folder: BTreeMap<String, BTreeMap<usize, String>> = BTreeMap::new();
    for rel in files {
        if rel.components().count() < 2 {
            continue; // a file module is one layer by construction
        }
        let module = module_of(rel);
        let folder = module[0].clone();
        if let Some((_, layer)) = layer_of(table, &module) {
            by_folder
                .entry(folder)
                .or_default()
                .entry(layer)
                .or_insert_with(|| module.join("::"));
        }
    }
    by_folder
        .into_iter()
        .filter(|(_, layers)| layers.len() > 1)
        .map(|(folder, layers)| {
            let spans: Vec<String> = layers
                .iter()
                .map(|(layer, module)| format!("{layer} ({module})"))
                .collect();
            format!("{folder}/ spans layers {}", spans.join(", "))
        })
        .collect()
}

/// Every upward dependency of the crate under `src`, as `module -> module`
/// lines naming the modules of the layer table.
pub fn upward_imports(src: &Path) -> BTreeSet<String> {
    let lib_rs = fs::read_to_string(src.join("lib.rs")).unwrap();
    let table = layer_table(&lib_rs);
    let reexports = root_reexports(&lib_rs);
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut found = BTreeSet::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let name = rel.file_name().unwrap().to_string_lossy();
        // The crate root assembles; models and unit-test files may reach
        // anywhere to build their scenarios.
        if rel == Path::new("lib.rs") || name == "loom_models.rs" || name == "tests.rs" {
            continue;
        }
        let module = module_of(rel);
        let Some((from, from_layer)) = layer_of(&table, &module) else {
            panic!(
                "{}: module {} is in no layer of the table in src/lib.rs",
                rel.display(),
                module.join("::")
            );
        };
        let src_text = fs::read_to_string(&file).unwrap();
        for mut path in paths_in(&src_text, &module) {
            if path.len() == 1
                && let Some(module) = reexports.get(&path[0])
            {
                path = module.clone();
            }
            let Some((to, to_layer)) = layer_of(&table, &path) else {
                continue;
            };
            if to_layer > from_layer {
                found.insert(format!("{from} -> {to}"));
            }
        }
    }
    found
}

/// Check the crate at `manifest_dir` (named `krate` in messages): every
/// folder one layer, and no module reaching a layer above its own.
pub fn check_crate(manifest_dir: &str, krate: &str) {
    let src = Path::new(manifest_dir).join("src");
    let table = layer_table(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    sources(&src, &mut files);
    let rel: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(&src).unwrap().to_path_buf())
        .collect();
    let spanning = folders_spanning_layers(&table, &rel);
    assert!(
        spanning.is_empty(),
        "folders whose modules sit on two layers (split the folder so that \
         each is one row of the layer table in {krate}/src/lib.rs):\n  {}",
        spanning
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n  ")
    );
    let upward = upward_imports(&src);
    assert!(
        upward.is_empty(),
        "imports that reach a layer above their module (see the layer table in \
         {krate}/src/lib.rs; a lower layer that must call up owns a trait or \
         function value the upper layer installs):\n  {}",
        upward
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}
