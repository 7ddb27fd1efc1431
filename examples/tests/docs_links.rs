//! Relative links in docs/, the top-level README and CHANGELOG, and the crate READMEs resolve to
//! existing files, and `#anchor`s to headings of the linked Markdown file (GitHub's slug rules).
//! Crate READMEs are also the crates' rustdoc (docs.rs), where a relative link is a 404: they
//! may only link absolutely or intra-doc, and every link into this repository
//! (`https://github.com/provkit/provkit/blob|tree/main/...`) must name an existing file.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Markdown text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// GitHub-style heading anchors.
fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| l.trim_start_matches('#').trim().to_lowercase())
        .map(|h| {
            h.chars()
                .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

/// `(target)` parts of `[text](target)` links.
fn links(text: &str) -> Vec<String> {
    let text = prose(text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            let target = &rest[..end];
            if !target.contains(char::is_whitespace) {
                out.push(target.to_owned());
            }
            rest = &rest[end..];
        }
    }
    out
}

fn markdown_files() -> Vec<PathBuf> {
    let root = repo();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.push(root.join("README.md"));
    files.push(root.join("CHANGELOG.md"));
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        let readme = krate.unwrap().path().join("README.md");
        if readme.exists() {
            files.push(readme);
        }
    }
    files
}

#[test]
fn relative_links_resolve() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            // Rustdoc intra-doc links in crate READMEs (`[`Foo`](crate::Foo)`) are checked by rustdoc.
            if link.contains("::") {
                continue;
            }
            checked += 1;
            let (path, fragment) = link.split_once('#').unwrap_or((link.as_str(), ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", file.display()));
            } else if !fragment.is_empty() && target.extension().is_some_and(|e| e == "md") {
                let headings = anchors(&std::fs::read_to_string(&target).unwrap());
                if !headings.contains(fragment) {
                    broken.push(format!("{}: {link} (no such heading)", file.display()));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} links found: is the parser broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchor_slugs_follow_github() {
    let a = anchors(
        "# Before the switch: the cut-over check\n## Decisions on upstream behaviour (bugs)\n```\n# not a heading\n```\n",
    );
    assert!(a.contains("before-the-switch-the-cut-over-check"));
    assert!(a.contains("decisions-on-upstream-behaviour-bugs"));
    assert_eq!(a.len(), 2);
    assert_eq!(
        links("[a](x.md) `code` [b](y.md#z) [c](https://e.org)"),
        ["x.md", "y.md#z", "https://e.org"]
    );
}

const REPO_URL: &str = "https://github.com/provkit/provkit/";

fn crate_readmes() -> Vec<PathBuf> {
    markdown_files()
        .into_iter()
        .filter(|p| p.parent().unwrap().parent().unwrap().ends_with("crates"))
        .collect()
}

#[test]
fn crate_readmes_link_absolutely_or_intra_doc() {
    let readmes = crate_readmes();
    assert!(readmes.len() >= 7, "crate READMEs not found: {readmes:?}");
    let mut relative = Vec::new();
    for file in readmes {
        for link in links(&std::fs::read_to_string(&file).unwrap()) {
            let absolute = link.contains("://") || link.starts_with("mailto:");
            let intra_doc = link.contains("::");
            if !absolute && !intra_doc && !link.starts_with('#') {
                relative.push(format!("{}: {link}", file.display()));
            }
        }
    }
    assert!(
        relative.is_empty(),
        "relative links in crate READMEs (404 on docs.rs; use {REPO_URL}blob/main/...):\n{}",
        relative.join("\n")
    );
}

/// `https://github.com/provkit/provkit/{blob,tree}/main/<path>[#fragment]` URLs in `text`.
fn repository_urls(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(REPO_URL) {
        rest = &rest[i + REPO_URL.len()..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '>' | '"' | '`' | ']'))
            .unwrap_or(rest.len());
        let url = &rest[..end];
        rest = &rest[end..];
        let Some(path) = url
            .strip_prefix("blob/main/")
            .or_else(|| url.strip_prefix("tree/main/"))
        else {
            continue; // the repository itself, issues, ...
        };
        let (path, fragment) = path.split_once('#').unwrap_or((path, ""));
        out.push((path.to_owned(), fragment.to_owned()));
    }
    out
}

#[test]
fn repository_urls_name_existing_files() {
    let root = repo();
    let mut sources = markdown_files();
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        sources.push(krate.unwrap().path().join("src/lib.rs"));
    }
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in sources {
        let text = std::fs::read_to_string(&file).unwrap();
        for (path, fragment) in repository_urls(&text) {
            checked += 1;
            let target = root.join(&path);
            if !target.exists() {
                broken.push(format!("{}: {path} (no such file)", file.display()));
            } else if !fragment.is_empty() && target.extension().is_some_and(|e| e == "md") {
                let headings = anchors(&std::fs::read_to_string(&target).unwrap());
                if !headings.contains(&fragment) {
                    broken.push(format!(
                        "{}: {path}#{fragment} (no such heading)",
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} repository URLs found: is the scanner broken?"
    );
    assert!(
        broken.is_empty(),
        "broken repository URLs:\n{}",
        broken.join("\n")
    );
}

#[test]
fn repository_url_scanner() {
    let urls = repository_urls(
        "[a](https://github.com/provkit/provkit/blob/main/docs/aap.md#tls) \
         <https://github.com/provkit/provkit/tree/main/docs> \
         [repo](https://github.com/provkit/provkit)",
    );
    assert_eq!(
        urls,
        [
            ("docs/aap.md".to_owned(), "tls".to_owned()),
            ("docs".to_owned(), String::new())
        ]
    );
}
