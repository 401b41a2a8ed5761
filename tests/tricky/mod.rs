//! The tricky tree of issue 28 and how two trees are compared, for the copy and sync
//! tests of the local engine (`copy_attrs.rs`) and of the MPI variant (`dist.rs`):
//! hard links inside and across directories, sparse files, xattrs of every namespace,
//! ACLs on files and directories, FIFOs, sockets, device nodes, 255-byte names, depth
//! 200, names that are not UTF-8, owners, setuid, immutable and append-only files.
#![allow(dead_code)]

use super::common::is_root;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

pub fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

/// Root and the tools, or the reason to skip.
pub fn ready(fs_tools: &[&str]) -> Option<String> {
    if !is_root() {
        return Some("needs root".into());
    }
    for t in ["rsync", "getfattr", "setfattr", "getfacl", "setfacl", "chattr"].iter().chain(fs_tools) {
        if !have(t) {
            return Some(format!("{t} not found"));
        }
    }
    None
}

pub fn sh(script: &str) {
    let o = Command::new("sh").arg("-ec").arg(script).output().unwrap();
    assert!(o.status.success(), "{script}\n{}", String::from_utf8_lossy(&o.stderr));
}

pub fn out(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// The tricky tree at `src`. `posix`: the full tree; else names and kinds exFAT can name
/// (no non-UTF-8 names, no '\n'), the rest of the tree as it is.
pub fn tricky_tree(src: &Path, posix: bool) {
    let long = "L".repeat(255);
    let deep = (0..200).map(|i| format!("{}", i % 10)).collect::<Vec<_>>().join("/");
    let s = src.display();
    sh(&format!(
        r#"
mkdir -p '{s}' && cd '{s}'
mkdir -p dir1 dir2 empty/inner "{deep}"
echo deep > "{deep}/leaf"
: > zero; printf 1 > one; head -c 4096 /dev/urandom > k4; head -c 1048577 /dev/urandom > m1
echo linked > dir1/orig; ln dir1/orig dir1/same-dir; ln dir1/orig dir2/other-dir; ln dir1/orig top-link
truncate -s 200M sparse; printf data | dd of=sparse bs=1 seek=104857600 conv=notrunc 2>/dev/null
head -c 8192 /dev/urandom > sparse2; truncate -s 50M sparse2
echo x > "{long}"
echo attrs > attrs
setfattr -n user.one -v 1 attrs; setfattr -n user.two -v "two words" attrs
setfattr -n trusted.t -v trusted attrs; setfattr -n security.s -v sec attrs
setfattr -n user.dir -v d dir1
setfacl -m u:nobody:rw,g:nogroup:r attrs; setfacl -m u:nobody:rx dir2; setfacl -d -m u:nobody:rwx dir2
mkfifo fifo; mknod chr c 1 3; mknod blk b 7 200
python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('sock')"
chown nobody:nogroup one dir1; chown 4242:4343 k4; chown -h nobody:nogroup symlink 2>/dev/null || true
ln -s ../nowhere symlink; ln -s dir1 dirlink; chown -h 4242:4343 symlink
chmod 4755 one; chmod 0700 dir2
echo keep > immutable; chattr +i immutable; echo append > appendonly; chattr +a appendonly
touch -h -d '2001-02-03 04:05:06.123456789' symlink attrs dir2 empty
"#
    ));
    if posix {
        sh(&format!(
            "cd '{s}' && mkdir \"$(printf 'bad\\377name')\" && echo x > \"$(printf 'bad\\377name')/f\" && echo n > \"$(printf 'new\\nline')\""
        ));
    }
}

/// chattr -i/-a everywhere below `root` (the tree can then be removed).
pub fn unflag(root: &Path) {
    for f in ["immutable", "appendonly"] {
        let _ = Command::new("chattr").args(["-i", "-a"]).arg(root.join(f)).output();
    }
}

/// rsync -aHAXn --itemize-changes SRC/ DST/ prints nothing; xattrs and ACLs equal;
/// links, holes and flags kept.
pub fn assert_same(src: &Path, dst: &Path, what: &str) {
    let r = out(Command::new("rsync")
        .args(["-aHAXn", "--itemize-changes"])
        .arg(format!("{}/", src.display()))
        .arg(format!("{}/", dst.display())));
    assert!(r.trim().is_empty(), "{what}: rsync -aHAXn --itemize-changes printed:\n{r}");
    let attrs = |p: &Path| {
        out(Command::new("sh").arg("-c").arg("getfattr -R -h -d -m - --absolute-names . | sort").current_dir(p))
    };
    assert_eq!(attrs(src), attrs(dst), "{what}: getfattr -d -m - differs");
    // One block a file, sorted: getfacl -R lists in readdir order, which on btrfs and XFS
    // is the order entries were made, and copy makes subdirectories as threads take them.
    let acls = |p: &Path| {
        let text = out(Command::new("getfacl").args(["-R", "-P", "."]).current_dir(p));
        let mut blocks: Vec<String> =
            text.split("\n\n").map(|b| b.trim().to_string()).filter(|b| !b.is_empty()).collect();
        blocks.sort();
        blocks
    };
    assert_eq!(acls(src), acls(dst), "{what}: getfacl -R differs");
    let ino = |p: &Path| std::fs::symlink_metadata(p).unwrap().ino();
    let links: Vec<&str> = ["dir1/orig", "dir1/same-dir", "dir2/other-dir", "top-link"]
        .into_iter()
        .filter(|l| src.join(l).exists())
        .collect();
    assert!(links.iter().all(|l| ino(&dst.join(l)) == ino(&dst.join(links[0]))), "{what}: hard links split");
    for f in ["sparse", "sparse2"] {
        let (s, d) = (std::fs::metadata(src.join(f)).unwrap(), std::fs::metadata(dst.join(f)).unwrap());
        assert!(
            d.blocks() <= s.blocks() + 64,
            "{what}: {f} holes filled: {} blocks at source, {} at destination",
            s.blocks(),
            d.blocks()
        );
    }
    let flags =
        |p: &Path| out(Command::new("lsattr").arg("-d").arg(p)).split_whitespace().next().unwrap_or("").to_string();
    for f in ["immutable", "appendonly"] {
        assert_eq!(flags(&src.join(f)), flags(&dst.join(f)), "{what}: {f} flags");
    }
}
