//! Scenario 11: output paths the tool does not own. A device node, a fifo, a socket or a
//! symlink given as `--json` is written through, never replaced; a directory is refused
//! before anything runs; `-` is standard output.

mod reliability_common;

use reliability_common::*;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn ladder(target: &Path, json: &Path) -> Out {
    let (t, j) = (target.as_os_str(), json.as_os_str());
    run_bounded(
        &[
            "ladder".as_ref(),
            "--target".as_ref(),
            t,
            "--total".as_ref(),
            "64k".as_ref(),
            "--to".as_ref(),
            "16".as_ref(),
            "--runs".as_ref(),
            "2".as_ref(),
            "-q".as_ref(),
            "--json".as_ref(),
            j,
        ],
        LIMIT,
        None,
    )
}

fn is_result(text: &str) {
    let v: serde_json::Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not one JSON document: {e}"));
    assert_eq!(v["schema"], 1);
    assert!(!v["measurements"].as_array().unwrap().is_empty());
}

#[test]
fn reliability_outputs_device_node_stays_a_device() {
    let Some(_g) = root_only("making a device node needs root") else { return };
    let t = tempfile::tempdir().unwrap();
    let node = t.path().join("null");
    // A private /dev/null (char 1:3): the real one is never put at risk by a test.
    let c = std::ffi::CString::new(node.to_str().unwrap()).unwrap();
    // SAFETY: mknod with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) }, 0);
    let out = ladder(t.path(), &node);
    assert_eq!(out.code, Some(0), "{}", out.show());
    let md = std::fs::symlink_metadata(&node).unwrap();
    assert!(md.file_type().is_char_device(), "the device node was replaced: {md:?}");
    assert_eq!(md.len(), 0);
    let left: Vec<_> = std::fs::read_dir(t.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("null")], "no temporary file beside it");
}

#[test]
fn reliability_outputs_fifo_gets_one_document() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("results.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        // The reader keeps the fifo open until the writer closes it: one read to EOF.
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    std::thread::sleep(Duration::from_millis(200)); // the reader is waiting in open()
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), &fifo);
    assert_eq!(out.code, Some(0), "{}", out.show());
    is_result(&reader.join().unwrap());
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn reliability_outputs_fifo_without_reader_is_an_error_not_a_hang() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("nobody.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), &fifo);
    assert_eq!(out.code, Some(1), "{}", out.show());
    assert!(out.stderr.contains("no reader"), "{}", out.show());
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn reliability_outputs_socket_is_written_through() {
    let t = tempfile::tempdir().unwrap();
    let sock = t.path().join("results.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let (mut s, _) = listener.accept().unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    });
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), &sock);
    assert_eq!(out.code, Some(0), "{}", out.show());
    is_result(&reader.join().unwrap());
    assert!(std::fs::symlink_metadata(&sock).unwrap().file_type().is_socket());
}

#[test]
fn reliability_outputs_symlink_is_kept_and_its_target_written() {
    let t = tempfile::tempdir().unwrap();
    let shared = t.path().join("shared/results");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("run42.json"), "old").unwrap();
    let link = t.path().join("results.json");
    std::os::unix::fs::symlink(shared.join("run42.json"), &link).unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), &link);
    assert_eq!(out.code, Some(0), "{}", out.show());
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    assert_eq!(std::fs::read_link(&link).unwrap(), shared.join("run42.json"));
    is_result(&std::fs::read_to_string(shared.join("run42.json")).unwrap());
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 1, "no temporary file left beside the target");
}

#[test]
fn reliability_outputs_directory_is_refused_before_anything_runs() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("out");
    std::fs::create_dir(&dir).unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), &dir);
    assert_eq!(out.code, Some(2), "{}", out.show());
    assert_eq!(out.lines().len(), 1, "one line: {}", out.show());
    assert!(out.stderr.contains("--json") && out.stderr.contains("is a directory"), "{}", out.show());
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0, "nothing created");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // a symlink to a directory too
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    assert_eq!(ladder(work.path(), &link).code, Some(2));
}

#[test]
fn reliability_outputs_dash_is_standard_output_alone() {
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), Path::new("-"));
    assert_eq!(out.code, Some(0), "{}", out.show());
    is_result(&out.stdout);
    assert!(out.stderr.contains("files"), "the table goes to stderr: {}", out.show());
}
