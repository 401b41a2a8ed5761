//! The storage commands' runs and what they print: `mount` (the file system it brought
//! up and how to undo it), `umount` and `cleanup` (their reports). Their arguments are
//! in `mounts.rs`.

use super::mounts::{CleanupArgs, MountArgs, UmountArgs};
use super::out;
use manyfiles::error::Result;

/// `mount SPEC DIR`.
pub fn mount(a: &MountArgs) -> Result<()> {
    let (spec, size) = super::mount_config(a)?;
    let m = manyfiles::storage::user_mount::mount(&spec, &a.dir, size)?;
    let d = &m.details;
    let class = d.class.as_ref().map(|c| {
        let exp = match c.expected_read_iops {
            Some([q1, qn]) => format!("expected read IOPS {q1:.0} at qd 1, {qn:.0} at qd ≥ {}", c.threads),
            None => "no read delay".into(),
        };
        format!(
            " · class {} ({} thread(s), read {} ms, write {} ms per request; {exp}) · {} · {}",
            c.class.name, c.threads, c.delay_read_ms, c.delay_write_ms, c.nbdkit_version, c.nbdfuse_version
        )
    });
    out(&format!(
        "mounted {} at {} ({}){}\n{}undo with: manyfiles umount {}\n",
        d.spec,
        m.dir.display(),
        d.device.as_deref().unwrap_or("no device"),
        class.unwrap_or_default(),
        super::mounts::object_lines(d, &m.dir),
        m.dir.display()
    ));
    Ok(())
}

/// `umount DIR`.
pub fn umount(a: &UmountArgs) -> Result<()> {
    out(&format!("{}\n", manyfiles::storage::user_mount::umount(&a.dir)?));
    Ok(())
}

/// `cleanup`.
pub fn cleanup(a: &CleanupArgs) -> Result<()> {
    out(&format!("{}\n", manyfiles::storage::registry::cleanup_with(a.mounts)?));
    Ok(())
}
