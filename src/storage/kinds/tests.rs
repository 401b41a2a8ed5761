//! Records of builds before kinds (flat optional fields) are read as their kinds and
//! cleaned; records of this build keep the field names those builds read.

use super::super::registry::{self, Record};
use super::*;
use serde_json::json;

/// A record as a build before kinds wrote it: the common fields, every kind field null.
fn flat(fields: serde_json::Value) -> serde_json::Value {
    let mut v = json!({
        "pid": 4_000_000, "start_time": 1, "image": null, "loop_device": null,
        "mount_point": "/run/manyfiles/mnt-k", "tmpfs_source": null, "fs": "ext4@ram",
        "run_dir": null, "pack_mount": false, "fuse_source": null, "device": null, "lock": true
    });
    for (k, x) in fields.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn read(v: serde_json::Value) -> Record {
    serde_json::from_value(v).expect("an old record reads")
}

#[test]
fn old_flat_records_read_as_their_kinds() {
    let r = read(flat(json!({"image": "/dev/shm/manyfiles-img-k.img", "loop_device": "/dev/loop3"})));
    let want =
        image::ImageRecord { image: "/dev/shm/manyfiles-img-k.img".into(), loop_device: Some("/dev/loop3".into()) };
    assert_eq!(r.kind, KindRecord::Image(want));
    assert!(r.lock && r.mount_point.is_some() && r.fs == "ext4@ram");
    let r = read(flat(json!({"tmpfs_source": "manyfiles-k"})));
    assert_eq!(r.kind, KindRecord::Tmpfs(tmpfs::TmpfsRecord { tmpfs_source: "manyfiles-k".into() }));
    let r = read(flat(json!({"device": "/dev/sdb"})));
    assert_eq!(r.kind, KindRecord::Device(device::DeviceRecord { device: "/dev/sdb".into() }));
    // A device class's record named nbdfuse's file as its image.
    let r = read(flat(json!({"nbd_dir": "/run/manyfiles/nbd-k", "image": "/run/manyfiles/nbd-k/fuse/nbd",
        "loop_device": "/dev/loop4"})));
    assert_eq!(r.kind.tag(), "class");
    assert_eq!(r.kind().loop_file(), Some("/run/manyfiles/nbd-k/fuse/nbd".into()));
    let r = read(flat(json!({"share_dir": "/run/manyfiles/share-k", "fuse_source": "manyfiles-share-k"})));
    assert_eq!(r.kind.tag(), "share");
    assert!(r.kind().cleaned_first() && super::super::share_stack::is_client(&r));
    // A share's export: its own kind, and the stack's directory.
    let r = read(flat(json!({"share_dir": "/run/manyfiles/share-k", "tmpfs_source": "manyfiles-k2"})));
    assert_eq!((r.kind.tag(), r.share_dir.is_some()), ("tmpfs", true));
    let r = read(flat(json!({"pack_mount": true, "image": "/x/a.sqfs", "fuse_source": "squashfuse"})));
    assert_eq!(
        r.kind,
        KindRecord::Container(container::ContainerRecord::new("/x/a.sqfs".into(), Some("squashfuse".into())))
    );
    let r = read(flat(json!({"run_dir": "/tmp/manyfiles-run-x", "mount_point": null})));
    assert_eq!(
        r.kind,
        KindRecord::Directory(directory::DirectoryRecord { run_dir: Some("/tmp/manyfiles-run-x".into()) })
    );
    // The oldest records had no `lock`, `persistent` nor `mount_id`.
    let mut oldest = flat(json!({"tmpfs_source": "manyfiles-k"}));
    oldest.as_object_mut().unwrap().remove("lock");
    assert!(!read(oldest).lock);
}

/// What a build before kinds reads of a record (its flat struct, abridged): this build's
/// records keep those names, so an older cleanup still finds what to undo.
#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct OldRecord {
    pid: u32,
    start_time: u64,
    image: Option<std::path::PathBuf>,
    loop_device: Option<String>,
    mount_point: Option<std::path::PathBuf>,
    fs: String,
    #[serde(default)]
    pack_mount: bool,
    nbd_dir: Option<std::path::PathBuf>,
}

#[test]
fn new_records_are_tagged_and_keep_the_old_names() {
    let image =
        image::ImageRecord { image: "/var/tmp/manyfiles-img-k.img".into(), loop_device: Some("/dev/loop7".into()) };
    let rec = Record { kind: KindRecord::Image(image), ..registry::own_record("ext4@disk") };
    let v = serde_json::to_value(&rec).unwrap();
    assert_eq!(v["kind"], "image");
    assert_eq!(serde_json::from_value::<Record>(v.clone()).unwrap(), rec, "round trip");
    let old: OldRecord = serde_json::from_value(v).unwrap();
    assert_eq!(
        (old.image.unwrap().to_str(), old.loop_device.as_deref()),
        (Some("/var/tmp/manyfiles-img-k.img"), Some("/dev/loop7"))
    );
    let pack =
        Record { kind: KindRecord::Container(container::ContainerRecord::new("/r/a.erofs".into(), None)), ..rec };
    let old: OldRecord = serde_json::from_value(serde_json::to_value(&pack).unwrap()).unwrap();
    assert!(old.pack_mount, "older builds clean a container first and keep its file");
}

/// `cleanup` of this build meets a dead run's record in the old flat format: it
/// deletes the image the record names (and the record), as the old build would.
#[test]
fn cleanup_undoes_an_old_flat_record() {
    if !rustix::process::geteuid().is_root() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root");
        eprintln!("skipped: the registry needs root");
        return;
    }
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let key = format!("00000000T000000Z-{}-oldformat", std::process::id());
    let img = dir.path().join(format!("manyfiles-img-{key}.img"));
    std::fs::write(&img, b"an image").unwrap();
    let me = registry::own_record("ext4@ram");
    // No lock file, a start time not this process's: a dead run of an old build.
    let mut v = flat(json!({"image": img, "mount_point": dir.path().join("mnt"), "lock": false}));
    v["pid"] = me.pid.into();
    v["start_time"] = (me.start_time + 1).into();
    let path = registry::ensure_state_dir().unwrap().join(format!("{key}.json"));
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let rep = registry::cleanup().unwrap();
    let left = (img.exists(), path.exists());
    let _ = std::fs::remove_file(&path);
    assert_eq!(left, (false, false), "image and record removed: {rep}");
    assert!(rep.deleted.iter().any(|d| *d == img.display().to_string()), "{rep}");
}
