//! Filter rules with rsync's meaning (`--exclude`, `--include`, `--filter`,
//! `--exclude-from`, `--exclude-vcs`), shared by copy, sync, rm and scan: an ordered rule
//! list, the first rule that matches an entry decides, no rule matching means included.
//!
//! Paths are relative to the transfer root (SRC, DST, an rm PATH, the scanned root),
//! without a leading `/`. rsync's rule (its `exclude.c`, `rule_matches`), done here by
//! hand:
//! - a pattern with no `/` (a trailing one aside) and no `**` matches the final name only;
//! - a leading `/` anchors it to the root: the whole path must match;
//! - otherwise a pattern with `/` inside and no `**` matches the path's last
//!   (slashes + 1) names (`sub/foo` matches `x/sub/foo`, not `foo` at the root);
//! - an unanchored pattern with `**` (not at its start) is tried after every `/`;
//!   a leading `**` is matched from the start with a `/` put before the path (so `**/foo`
//!   matches `foo` at the root);
//! - a trailing `/` matches directories only, and a trailing `***` also matches the
//!   directory itself (`dir/***`: `dir` and everything below it);
//! - a pattern without `*`, `?` or `[` is compared as a string (backslashes literal).
//!
//! The wildcards go to `globset` with `literal_separator(true)` (`*` and `?` stop at `/`)
//! and `backslash_escape(true)`, where its meaning is rsync's. Where it is not, the
//! pattern is rewritten first ([`glob_text`]): rsync's `**` matches any text, `/`
//! included, wherever it stands (globset's only as a whole path component, where `a/**/b`
//! also matches `a/b`; rsync's does not), so a `**` becomes `{*,*/**/*}`, which globset
//! reads as "no `/`, or at least one"; a bracket class never matches `/` in rsync (in
//! globset a negated one does), so `/` is added to a negated class and left out of any
//! other; `[[:alpha:]]`-style classes are spelled out as ASCII ranges; `{`, `}` and `,`
//! are plain characters in rsync and escaped for globset. A `[` left open is refused
//! (rsync's pattern silently never matches). `--files-from` is two rules of exact paths
//! (a hash set: the listed paths, the directories above them) and `- *`, after all others.
//!
//! Sides: an exclude (`-`) rule hides an entry from the sender (not copied, not scanned,
//! not descended into) and protects it on the receiver (`sync --delete` and `rm` leave
//! it); `H`/`S` (or the `s` modifier) are the sender's side only, `P`/`R` (or `r`) the
//! receiver's only. `--delete-excluded` makes every rule without an explicit side the
//! sender's only, so excluded entries in DST are deleted. Merge files (`merge`, `.`,
//! `dir-merge`, `:`) and the per-directory modifiers are not supported: refused, not
//! ignored.

use crate::error::{Error, Result};
use globset::{GlobBuilder, GlobMatcher};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What a matching rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Include,
    Exclude,
}

/// One rule: an action, the sides it applies to, and a pattern.
#[derive(Debug, Clone)]
pub struct Rule {
    action: Action,
    /// Applies when choosing what is transferred, scanned or removed.
    sender: bool,
    /// Applies when choosing what `--delete` may remove from DST.
    receiver: bool,
    /// The side was named (`H`, `S`, `P`, `R`, `s`, `r`): `--delete-excluded` leaves it.
    sided: bool,
    /// The `!` modifier: the rule applies to what the pattern does not match.
    negate: bool,
    pattern: Pattern,
}

/// Where in the path an rsync pattern is matched (rsync's `slash_handling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// From the start of the text only.
    Start,
    /// The last `n` names (fewer: no match).
    LastNames(usize),
    /// From the start or after any `/`.
    AfterAnySlash,
}

#[derive(Debug, Clone)]
enum Matcher {
    Literal(Vec<u8>),
    Glob(Box<GlobMatcher>),
    /// `--files-from`: one of these whole paths.
    Paths(std::collections::HashSet<Vec<u8>>),
}

#[derive(Debug, Clone)]
struct Pattern {
    /// As given (for messages).
    text: String,
    anchored: bool,
    name_only: bool,
    dir_only: bool,
    /// Leading `**`: a `/` goes before the path.
    wild2_prefix: bool,
    /// Trailing `***`: a directory gets a `/` after its path.
    wild3_suffix: bool,
    place: Place,
    matcher: Matcher,
}

impl Pattern {
    fn new(text: &str) -> Result<Pattern> {
        if text.is_empty() {
            return Err(Error::bad("filter", "an empty pattern"));
        }
        let mut p = text.to_string();
        let wild = p.contains(['*', '?', '[']);
        let wild2 = wild && p.contains("**");
        let wild2_prefix = wild2 && p.starts_with("**");
        let wild3_suffix = wild2 && p.ends_with("***");
        let mut dir_only = false;
        if p.len() > 1 && p.ends_with('/') {
            p.pop();
            dir_only = true;
        }
        let slashes = p.bytes().filter(|&b| b == b'/').count();
        let anchored = p.starts_with('/');
        if anchored {
            p.remove(0);
        }
        let name_only = slashes == 0 && !wild2;
        let place = if !anchored && slashes > 0 && !wild2 {
            Place::LastNames(slashes + 1)
        } else if !anchored && !wild2_prefix && wild2 {
            Place::AfterAnySlash
        } else {
            Place::Start
        };
        let matcher = if wild {
            let glob = glob_text(&p).map_err(|why| Error::bad("filter", format!("pattern '{text}': {why}")))?;
            let m = GlobBuilder::new(&glob)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| Error::bad("filter", format!("pattern '{text}': {e}")))?
                .compile_matcher();
            Matcher::Glob(Box::new(m))
        } else {
            Matcher::Literal(p.into_bytes())
        };
        Ok(Pattern {
            text: text.to_string(),
            anchored,
            name_only,
            dir_only,
            wild2_prefix,
            wild3_suffix,
            place,
            matcher,
        })
    }

    /// Does the pattern match `rel` (no leading `/`)? rsync's `rule_matches` without the
    /// `!` modifier.
    fn matches(&self, rel: &[u8], is_dir: bool) -> bool {
        if rel.is_empty() || (self.dir_only && !is_dir) {
            return false;
        }
        let name = match self.name_only {
            true => rel.rsplit(|&b| b == b'/').next().unwrap_or(rel),
            false => rel,
        };
        match &self.matcher {
            Matcher::Paths(set) => set.contains(rel),
            Matcher::Literal(lit) => match self.anchored {
                true => name == lit.as_slice(),
                false => name.ends_with(lit) && (name.len() == lit.len() || name[name.len() - lit.len() - 1] == b'/'),
            },
            Matcher::Glob(g) => {
                let mut text = Vec::with_capacity(name.len() + 2);
                if self.wild2_prefix {
                    text.push(b'/');
                }
                text.extend_from_slice(name);
                if is_dir && self.wild3_suffix {
                    text.push(b'/');
                }
                let is = |t: &[u8]| g.is_match(Path::new(OsStr::from_bytes(t)));
                match self.place {
                    Place::Start => is(&text),
                    Place::LastNames(n) => last_names(&text, n).is_some_and(is),
                    Place::AfterAnySlash => {
                        is(&text) || text.iter().enumerate().any(|(i, &b)| b == b'/' && is(&text[i + 1..]))
                    }
                }
            }
        }
    }
}

/// The last `n` names of `text` (None when it has fewer), as rsync's
/// `trailing_N_elements`.
fn last_names(text: &[u8], n: usize) -> Option<&[u8]> {
    let mut left = n;
    for (i, &b) in text.iter().enumerate().rev() {
        if b == b'/' {
            left -= 1;
            if left == 0 {
                return Some(&text[i + 1..]);
            }
        }
    }
    (left == 1).then_some(text)
}

/// An rsync wildcard pattern rewritten into globset's syntax with rsync's meaning (see
/// the module's comment): `**` (or more stars) → `{*,*/**/*}`, bracket classes spelled
/// out without `/`, `{ } ,` escaped. Err: a class left open (rsync's never matches).
fn glob_text(p: &str) -> std::result::Result<String, String> {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 16);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                match chars.get(i + 1) {
                    Some(&c) => push_literal(&mut out, c),
                    None => push_literal(&mut out, '\\'),
                }
                i += 2;
            }
            '*' => {
                let run = chars[i..].iter().take_while(|&&c| c == '*').count();
                out.push_str(if run == 1 { "*" } else { "{*,*/**/*}" });
                i += run;
            }
            '?' => {
                out.push('?');
                i += 1;
            }
            '[' => {
                let (class, used) = bracket(&chars[i..])?;
                out.push_str(&class);
                i += used;
            }
            c => {
                push_literal(&mut out, c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// A character escaped for globset when it means anything there.
fn push_literal(out: &mut String, c: char) {
    if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | ',' | '\\' | '!' | '^' | '-') {
        out.push('\\');
    }
    out.push(c);
}

/// An rsync bracket class at the start of `c` (its `dowild`'s `[` case) as a globset
/// class, and the characters it took. `/` is never matched.
fn bracket(c: &[char]) -> std::result::Result<(String, usize), String> {
    let mut i = 1;
    let negated = matches!(c.get(i), Some('!') | Some('^'));
    if negated {
        i += 1;
    }
    let mut ranges: Vec<(char, char)> = Vec::new();
    let mut first = true;
    loop {
        let Some(&ch) = c.get(i) else { return Err("a '[' class is not closed".into()) };
        if ch == ']' && !first {
            i += 1;
            break;
        }
        first = false;
        if ch == '\\' {
            let Some(&e) = c.get(i + 1) else { return Err("a '[' class is not closed".into()) };
            ranges.push((e, e));
            i += 2;
        } else if ch == '-' && !ranges.is_empty() && c.get(i + 1).is_some_and(|&n| n != ']') {
            let lo = ranges.pop().expect("not empty").1;
            let mut hi = c[i + 1];
            let mut took = 2;
            if hi == '\\' {
                hi = *c.get(i + 2).ok_or("a '[' class is not closed")?;
                took = 3;
            }
            if lo <= hi {
                ranges.push((lo, hi));
            }
            i += took;
        } else if ch == '[' && c.get(i + 1) == Some(&':') {
            let rest: String = c[i + 2..].iter().collect();
            let Some(end) = rest.find(":]") else { return Err("a '[:' class name is not closed".into()) };
            let name = &rest[..end];
            ranges.extend(posix_class(name).ok_or(format!("unknown character class [:{name}:]"))?);
            i += 2 + rest[..end].chars().count() + 2;
        } else {
            ranges.push((ch, ch));
            i += 1;
        }
    }
    // rsync's class never matches '/': out of a class, into a negated one.
    let mut kept: Vec<(char, char)> = Vec::new();
    for (lo, hi) in ranges {
        if lo <= '/' && '/' <= hi {
            if lo < '/' {
                kept.push((lo, '.'));
            }
            if hi > '/' {
                kept.push(('0', hi));
            }
        } else {
            kept.push((lo, hi));
        }
    }
    if negated {
        kept.push(('/', '/'));
    }
    if kept.is_empty() {
        return Err("a class of '/' alone never matches (a class never matches '/')".into());
    }
    // globset's class: ']' literal only first, '-' literal only first or last; no escapes.
    let mut s = String::from(if negated { "[!" } else { "[" });
    if kept.contains(&(']', ']')) {
        s.push(']');
    }
    for &(lo, hi) in kept.iter().filter(|r| **r != (']', ']') && **r != ('-', '-')) {
        s.push(lo);
        if lo != hi {
            s.push('-');
            s.push(hi);
        }
    }
    if kept.contains(&('-', '-')) {
        s.push('-');
    }
    s.push(']');
    Ok((s, i))
}

/// The ASCII ranges of a POSIX class name (`alpha` for `[:alpha:]`).
fn posix_class(name: &str) -> Option<Vec<(char, char)>> {
    Some(match name {
        "alnum" => vec![('0', '9'), ('A', 'Z'), ('a', 'z')],
        "alpha" => vec![('A', 'Z'), ('a', 'z')],
        "blank" => vec![(' ', ' '), ('\t', '\t')],
        "cntrl" => vec![('\0', '\u{1f}'), ('\u{7f}', '\u{7f}')],
        "digit" => vec![('0', '9')],
        "graph" => vec![('!', '~')],
        "lower" => vec![('a', 'z')],
        "print" => vec![(' ', '~')],
        "punct" => vec![('!', '/'), (':', '@'), ('[', '`'), ('{', '~')],
        "space" => vec![(' ', ' '), ('\t', '\r')],
        "upper" => vec![('A', 'Z')],
        "xdigit" => vec![('0', '9'), ('A', 'F'), ('a', 'f')],
        _ => return None,
    })
}

impl Rule {
    /// Does this rule decide `rel`? (Its pattern matches, or with `!` does not.)
    fn hits(&self, rel: &[u8], is_dir: bool) -> bool {
        !rel.is_empty() && self.pattern.matches(rel, is_dir) != self.negate
    }
}

/// An ordered rule list: the first rule that matches an entry decides.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    rules: Vec<Rule>,
}

/// The version-control directories `--exclude-vcs` leaves out.
pub const VCS_DIRS: [&str; 3] = [".git/", ".hg/", ".svn/"];

impl Filter {
    /// The rules of `lines`, in order: each an rsync filter rule (`--filter`'s syntax).
    pub fn from_rules<S: AsRef<str>>(lines: &[S]) -> Result<Filter> {
        let mut f = Filter::default();
        for l in lines {
            f.add_rule(l.as_ref())?;
        }
        Ok(f)
    }

    /// No rule: nothing is excluded.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Add one `--filter` rule: `- PAT`, `+ PAT`, `exclude PAT`, `include PAT`, `hide`/`H`,
    /// `show`/`S`, `protect`/`P`, `risk`/`R`, with modifiers `!` (not matching), `s`
    /// (sender only), `r` (receiver only) after the rule (`-! PAT`, `exclude,s PAT`);
    /// `!` or `clear` alone empties the list.
    pub fn add_rule(&mut self, line: &str) -> Result<()> {
        let line = line.trim_end_matches(['\n', '\r']);
        if line == "!" || line == "clear" {
            self.rules.clear();
            return Ok(());
        }
        let bad = |why: &str| Err(Error::bad("--filter", format!("'{line}': {why}")));
        let (head, pat) = match line.split_once([' ', '_']) {
            Some((h, p)) => (h, p),
            None => return bad("expected RULE PATTERN, as '- *.tmp' or '+ dir/'"),
        };
        // A long name (`exclude`, or `exclude,MODS`), or one character and its modifiers.
        const LONG: [&str; 12] =
            ["exclude", "include", "hide", "show", "protect", "risk", "merge", "dir-merge", "clear", "-", "+", "!"];
        let (word, mods) = match head.split_once(',') {
            Some((w, m)) => (w, m),
            None if LONG.contains(&head) => (head, ""),
            None => head.split_at(head.char_indices().nth(1).map_or(head.len(), |(i, _)| i)),
        };
        let (action, side) = match word {
            "-" | "exclude" => (Action::Exclude, None),
            "+" | "include" => (Action::Include, None),
            "H" | "hide" => (Action::Exclude, Some((true, false))),
            "S" | "show" => (Action::Include, Some((true, false))),
            "P" | "protect" => (Action::Exclude, Some((false, true))),
            "R" | "risk" => (Action::Include, Some((false, true))),
            "." | ":" | "merge" | "dir-merge" => return bad("merge files are not supported"),
            _ => return bad("unknown rule (expected -, +, H, S, P, R, exclude, include, hide, show, protect, risk)"),
        };
        let mut rule = Rule {
            action,
            sender: side.is_none_or(|s| s.0),
            receiver: side.is_none_or(|s| s.1),
            sided: side.is_some(),
            negate: false,
            pattern: Pattern::new(pat)?,
        };
        for m in mods.chars() {
            match m {
                '!' => rule.negate = true,
                's' => (rule.sender, rule.receiver, rule.sided) = (true, false, true),
                'r' => (rule.sender, rule.receiver, rule.sided) = (false, true, true),
                _ => return bad(&format!("modifier '{m}' is not supported (only !, s, r)")),
            }
        }
        self.rules.push(rule);
        Ok(())
    }

    /// Add `--exclude PAT` (`+ `/`- ` in front choose the action, as rsync reads them).
    pub fn exclude(&mut self, pat: &str) -> Result<()> {
        self.old_style(pat, "- ")
    }

    /// Add `--include PAT` (`+ `/`- ` in front choose the action, as rsync reads them).
    pub fn include(&mut self, pat: &str) -> Result<()> {
        self.old_style(pat, "+ ")
    }

    fn old_style(&mut self, pat: &str, default: &str) -> Result<()> {
        if pat == "!" {
            self.rules.clear();
            return Ok(());
        }
        match pat.starts_with("- ") || pat.starts_with("+ ") {
            true => self.add_rule(pat),
            false => self.add_rule(&format!("{default}{pat}")),
        }
    }

    /// Add the lines of an `--exclude-from` file: one pattern a line; blank lines and
    /// lines starting with `;` or `#` are skipped.
    pub fn exclude_lines(&mut self, text: &str) -> Result<()> {
        for line in text.lines() {
            let line = line.trim_end_matches('\r');
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            self.exclude(line)?;
        }
        Ok(())
    }

    /// `--exclude-vcs`: `.git/`, `.hg/`, `.svn/` excluded (after the rules already given).
    pub fn exclude_vcs(&mut self) {
        for d in VCS_DIRS {
            self.exclude(d).expect("a valid pattern");
        }
    }

    /// `--files-from`: the paths listed in `text` (one a line, relative to the root; a
    /// leading `/` and `.` components dropped; blank lines and lines starting with `#` or
    /// `;` skipped) and the directories above them, nothing else — as `rsync -a
    /// --files-from` (no recursion into a listed directory). Added after every other rule,
    /// so an exclude still leaves a listed path out; a listed path excluded as a file and
    /// as a directory makes no directory above it (rsync's implied directories).
    pub fn files_from(&mut self, text: &str) -> Result<()> {
        let mut listed = std::collections::HashSet::new();
        let mut above = std::collections::HashSet::new();
        for line in text.lines() {
            let line = line.trim_end_matches('\r');
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            let parts: Vec<&str> = line.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
            if parts.contains(&"..") {
                return Err(Error::bad("--files-from", format!("'{line}': '..' is not allowed in a listed path")));
            }
            if parts.is_empty() {
                continue;
            }
            let path = parts.join("/");
            let out = self.excluded(path.as_bytes(), false) && self.excluded(path.as_bytes(), true);
            for i in 1..parts.len() {
                if !out {
                    above.insert(parts[..i].join("/").into_bytes());
                }
            }
            listed.insert(path.into_bytes());
        }
        let rule = |set, dir_only, text: &str| Rule {
            action: Action::Include,
            sender: true,
            receiver: true,
            sided: false,
            negate: false,
            pattern: Pattern {
                text: text.into(),
                anchored: true,
                name_only: false,
                dir_only,
                wild2_prefix: false,
                wild3_suffix: false,
                place: Place::Start,
                matcher: Matcher::Paths(set),
            },
        };
        let n = listed.len();
        self.rules.push(rule(listed, false, &format!("({n} paths of --files-from)")));
        self.rules.push(rule(above, true, "(the directories above them)"));
        self.add_rule("- *")
    }

    /// `--delete-excluded`: every rule without a side of its own applies to the sender
    /// only, so what it excludes in DST is deleted.
    pub fn delete_excluded(&mut self) {
        for r in self.rules.iter_mut().filter(|r| !r.sided) {
            r.receiver = false;
        }
    }

    /// Is `rel` (relative to the root, no leading `/`) left out of what is copied,
    /// scanned or removed? A directory left out is not descended into.
    pub fn excluded(&self, rel: &[u8], is_dir: bool) -> bool {
        self.first(rel, is_dir, |r| r.sender)
    }

    /// Is DST's `rel` kept from deletion (`sync --delete`)?
    pub fn protected(&self, rel: &[u8], is_dir: bool) -> bool {
        self.first(rel, is_dir, |r| r.receiver)
    }

    /// Does `rm` keep `rel`? What either side's rules exclude stays: a rule that hides an
    /// entry or one that protects it (rm deletes, so both apply).
    pub fn spares(&self, rel: &[u8], is_dir: bool) -> bool {
        self.excluded(rel, is_dir) || self.protected(rel, is_dir)
    }

    /// Does any rule protect anything on the receiving side?
    pub fn protects(&self) -> bool {
        self.rules.iter().any(|r| r.receiver && r.action == Action::Exclude)
    }

    fn first(&self, rel: &[u8], is_dir: bool, side: impl Fn(&Rule) -> bool) -> bool {
        self.rules.iter().filter(|r| side(r)).find(|r| r.hits(rel, is_dir)).is_some_and(|r| r.action == Action::Exclude)
    }

    /// The rules, one line each as `--filter` reads them (for messages and tests).
    pub fn describe(&self) -> Vec<String> {
        self.rules
            .iter()
            .map(|r| {
                let word = match (r.action, r.sided, r.sender, r.receiver) {
                    (Action::Exclude, false, ..) => "-",
                    (Action::Include, false, ..) => "+",
                    (Action::Exclude, true, true, _) => "H",
                    (Action::Include, true, true, _) => "S",
                    (Action::Exclude, true, false, _) => "P",
                    (Action::Include, true, false, _) => "R",
                };
                format!("{word}{} {}", if r.negate { "!" } else { "" }, r.pattern.text)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(rules: &[&str]) -> Filter {
        Filter::from_rules(rules).unwrap()
    }
    fn ex(rules: &[&str], rel: &str, dir: bool) -> bool {
        f(rules).excluded(rel.as_bytes(), dir)
    }

    #[test]
    fn a_name_pattern_matches_the_final_name_anywhere() {
        assert!(ex(&["- *.tmp"], "a.tmp", false));
        assert!(ex(&["- *.tmp"], "d/e/a.tmp", false));
        assert!(!ex(&["- *.tmp"], "a.tmp.x", false));
        assert!(ex(&["- foo"], "x/foo", true));
        assert!(!ex(&["- foo"], "x/foobar", false));
        // '*' stays within a name.
        assert!(!ex(&["- a*b"], "a/b", false));
    }

    #[test]
    fn a_leading_slash_anchors_to_the_root() {
        assert!(ex(&["- /foo"], "foo", false));
        assert!(!ex(&["- /foo"], "x/foo", false));
        assert!(ex(&["- /x/*.c"], "x/a.c", false));
        assert!(!ex(&["- /x/*.c"], "y/x/a.c", false));
    }

    #[test]
    fn an_inner_slash_matches_the_last_names() {
        assert!(ex(&["- sub/foo"], "sub/foo", false));
        assert!(ex(&["- sub/foo"], "a/b/sub/foo", false));
        assert!(!ex(&["- sub/foo"], "foo", false));
        assert!(!ex(&["- sub/foo"], "xsub/foo", false));
        assert!(ex(&["- s*/f?o"], "q/sub/foo", false));
        assert!(!ex(&["- s*/f?o"], "foo", false));
    }

    #[test]
    fn a_trailing_slash_matches_directories_only() {
        assert!(ex(&["- cache/"], "a/cache", true));
        assert!(!ex(&["- cache/"], "a/cache", false));
        // With '!': every non-directory is hit.
        assert!(ex(&["-! keep/"], "a/file", false));
        assert!(!ex(&["-! keep/"], "keep", true));
    }

    #[test]
    fn double_star_crosses_slashes_single_does_not() {
        assert!(ex(&["- /a/**/z"], "a/b/c/z", false));
        assert!(ex(&["- /a/**/z"], "a/b/z", false));
        assert!(!ex(&["- /a/**/z"], "a/z", false), "rsync's a/**/z needs a directory between");
        assert!(ex(&["- **.o"], "x/y/m.o", false));
        assert!(ex(&["- a**z"], "q/a/b/z", false));
        assert!(ex(&["- **/foo"], "foo", false));
        assert!(ex(&["- **/foo"], "a/b/foo", false));
        assert!(!ex(&["- /a/*/z"], "a/b/c/z", false));
        assert!(ex(&["- /a/*"], "a/b", false));
        assert!(!ex(&["- /a/*"], "a/b/c", false));
        assert!(ex(&["- /a/**"], "a/b/c", false));
    }

    #[test]
    fn triple_star_takes_the_directory_and_all_below() {
        assert!(ex(&["- /d/***"], "d", true));
        assert!(ex(&["- /d/***"], "d/x/y", false));
        assert!(!ex(&["- /d/***"], "d", false));
    }

    #[test]
    fn classes_and_question_marks_never_match_a_slash() {
        assert!(ex(&["- f[0-9]"], "f7", false));
        assert!(!ex(&["- f[0-9]"], "fa", false));
        assert!(ex(&["- f[!0-9]"], "fa", false));
        assert!(!ex(&["- /a[!x]b"], "a/b", false));
        assert!(!ex(&["- /a?b"], "a/b", false));
        assert!(ex(&["- f[]x]"], "f]", false));
        assert!(ex(&["- f[a-]"], "f-", false));
        assert!(ex(&["- f[[:digit:]]"], "f3", false));
        assert!(!ex(&["- f[[:digit:]]"], "fz", false));
        assert!(Filter::from_rules(&["- f[ab"]).is_err());
    }

    #[test]
    fn rsync_plain_characters_stay_plain() {
        assert!(ex(&["- {a,b}*"], "{a,b}x", false));
        assert!(!ex(&["- {a,b}*"], "ax", false));
        assert!(ex(&["- \\*x*"], "*xy", false));
        assert!(!ex(&["- \\*x*"], "axy", false));
        // No wildcard: compared as a string, a backslash too.
        assert!(ex(&["- a\\b"], "a\\b", false));
    }

    #[test]
    fn the_first_matching_rule_wins() {
        let rules = ["+ keep.tmp", "- *.tmp"];
        assert!(!ex(&rules, "keep.tmp", false));
        assert!(ex(&rules, "other.tmp", false));
        let other_order = ["- *.tmp", "+ keep.tmp"];
        assert!(ex(&other_order, "keep.tmp", false));
        // Include a directory's path, exclude the rest.
        let only = ["+ /a/", "+ /a/b/", "+ /a/b/**", "- *"];
        assert!(!ex(&only, "a", true));
        assert!(!ex(&only, "a/b/c/d", false));
        assert!(ex(&only, "a/x", false));
        assert!(!ex(&only, "", true), "the root is never excluded");
    }

    #[test]
    fn sides_and_delete_excluded() {
        let mut fl = f(&["- *.tmp", "H *.log", "P *.keep", "R *.risk", "- *.risk"]);
        assert!(fl.excluded(b"a.tmp", false) && fl.protected(b"a.tmp", false));
        assert!(fl.excluded(b"a.log", false) && !fl.protected(b"a.log", false));
        assert!(!fl.excluded(b"a.keep", false) && fl.protected(b"a.keep", false));
        assert!(fl.excluded(b"a.risk", false) && !fl.protected(b"a.risk", false));
        fl.delete_excluded();
        assert!(fl.excluded(b"a.tmp", false) && !fl.protected(b"a.tmp", false));
        assert!(fl.protected(b"a.keep", false), "a P rule still protects");
        assert!(f(&["-s x"]).excluded(b"x", false) && !f(&["-s x"]).protected(b"x", false));
        assert!(!f(&["-r x"]).excluded(b"x", false) && f(&["-r x"]).protected(b"x", false));
    }

    #[test]
    fn rule_syntax() {
        assert_eq!(
            f(&["exclude foo", "include,! bar", "-! baz", "+ q"]).describe(),
            ["- foo", "+! bar", "-! baz", "+ q"]
        );
        assert!(f(&["- a", "!", "- b"]).describe() == ["- b"]);
        for bad in ["merge .rules", ". x", ": .f", "-", "x foo", "-p foo", "- "] {
            assert!(Filter::from_rules(&[bad]).is_err(), "{bad}");
        }
        let mut fl = Filter::default();
        fl.exclude("+ keep").unwrap();
        fl.exclude("keep*").unwrap();
        fl.include("- x").unwrap();
        assert_eq!(fl.describe(), ["+ keep", "- keep*", "- x"]);
    }

    #[test]
    fn exclude_from_lines_skip_comments_and_blanks() {
        let mut fl = Filter::default();
        fl.exclude_lines("# a comment\n; another\n\n*.o\r\n+ keep.log\n*.log\n").unwrap();
        assert_eq!(fl.describe(), ["- *.o", "+ keep.log", "- *.log"]);
        fl.exclude_vcs();
        assert!(fl.excluded(b"src/.git", true) && !fl.excluded(b"src/.git", false));
    }

    #[test]
    fn files_from_takes_the_listed_paths_and_the_directories_above() {
        let mut fl = f(&["- *.o"]);
        fl.files_from("# comment\n\n./d/e/g\n/x\nz/m.o\n;no\n").unwrap();
        for (rel, dir) in [("d", true), ("d/e", true), ("d/e/g", false), ("x", true), ("x", false)] {
            assert!(!fl.excluded(rel.as_bytes(), dir), "{rel}");
        }
        for (rel, dir) in [("d/f", false), ("x/y", false), ("z", true), ("z/m.o", false), ("no", false), ("d", false)] {
            assert!(fl.excluded(rel.as_bytes(), dir), "{rel}");
        }
        assert!(Filter::default().files_from("a/../b\n").is_err());
    }

    #[test]
    fn names_need_not_be_utf8() {
        assert!(f(&["- *.tmp"]).excluded(b"d\xff/x\xfe.tmp", false));
        assert!(f(&["- /d?/*"]).excluded(b"d\xff/x", false));
    }
}
