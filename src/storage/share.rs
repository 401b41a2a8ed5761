//! File shares as targets (`--fs share:PROTO@rtt=DUR[,bw=RATE][,on=FSSPEC]`): a server
//! exporting a managed file system, a latency proxy in front of it and a FUSE client
//! mounting it through the proxy (see [`super::share_stack`]). This file is the spec:
//!
//! - `PROTO`: `sftp` (OpenSSH's sshd + sftp-server, mounted by sshfs) or `smb` (samba's
//!   smbd, mounted by `rclone mount` with its smb back end);
//! - `rtt=DUR`: the round trip the proxy adds between client and server, in whole
//!   milliseconds (toxiproxy's latency toxic takes whole milliseconds); `rtt=0ms`: the
//!   proxy is there but adds nothing;
//! - `bw=RATE`: optional cap on bytes per second, each direction (toxiproxy's bandwidth
//!   toxic, which counts in units of 1,000 bytes per second);
//! - `on=FSSPEC`: the file system the server exports, any managed spec but a share or a
//!   real device (`on=tmpfs`, RAM, is the default; `on=ext4@disk` puts it on disk;
//!   `on=xfs@disk:/srv`, `on=ext4@class:hdd` …). It must come last: it runs to the end.

use super::fsspec::{Backing, FsSpec};
use serde::{Deserialize, Serialize};

/// The protocols a share speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    Sftp,
    Smb,
}

impl Proto {
    pub fn name(self) -> &'static str {
        match self {
            Proto::Sftp => "sftp",
            Proto::Smb => "smb",
        }
    }

    /// The type /proc/self/mountinfo shows for the client's mount.
    pub fn mountinfo_type(self) -> &'static str {
        match self {
            Proto::Sftp => "fuse.sshfs",
            Proto::Smb => "fuse.rclone",
        }
    }
}

/// A share: protocol, the network between client and server, and what the server exports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareSpec {
    pub proto: Proto,
    /// Round trip added by the proxy, milliseconds.
    pub rtt_ms: u64,
    /// Bytes per second each direction at most; None: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bw: Option<u64>,
    /// The exported file system.
    pub export: FsSpec,
}

const FORM: &str = "share:PROTO@rtt=DUR[,bw=RATE][,on=FSSPEC] with PROTO sftp or smb";

impl ShareSpec {
    /// The text after `share:`.
    pub fn parse(text: &str) -> Result<ShareSpec, String> {
        let whole = format!("share:{text}");
        let (proto_text, rest) =
            text.split_once('@').ok_or_else(|| format!("'{whole}': expected {FORM} (the round trip is required)"))?;
        let proto = match proto_text.trim().to_ascii_lowercase().as_str() {
            "sftp" => Proto::Sftp,
            "smb" => Proto::Smb,
            p => return Err(format!("'{whole}': unknown share protocol '{p}'; known: sftp, smb")),
        };
        // `on=` runs to the end (a spec may hold '@', ',' and '=').
        let (params, on) = match rest.find("on=").filter(|&i| i == 0 || rest[..i].ends_with(',')) {
            Some(i) => (rest[..i].trim_end_matches(','), Some(&rest[i + 3..])),
            None => (rest, None),
        };
        let (mut rtt, mut bw) = (None, None);
        for pair in params.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| format!("'{whole}': '{pair}' is not key=value"))?;
            match k.trim().to_ascii_lowercase().as_str() {
                "rtt" if rtt.is_none() => rtt = Some(parse_rtt_ms(v).map_err(|e| format!("'{whole}': {e}"))?),
                "bw" if bw.is_none() => bw = Some(parse_bw(v).map_err(|e| format!("'{whole}': {e}"))?),
                "rtt" | "bw" => return Err(format!("'{whole}': '{}' given twice", k.trim())),
                other => return Err(format!("'{whole}': unknown share parameter '{other}'; known: rtt, bw, on")),
            }
        }
        let rtt_ms = rtt.ok_or_else(|| format!("'{whole}': rtt= is required (e.g. rtt=1ms; rtt=0ms for none)"))?;
        let export = match on {
            None => FsSpec::parse("tmpfs")?,
            Some(s) => FsSpec::parse(s).map_err(|e| format!("'{whole}': on=: {e}"))?,
        };
        if matches!(export.backing, Backing::Share { .. } | Backing::Dev { .. } | Backing::Object { .. }) {
            return Err(format!("'{whole}': on= names the exported file system: not a share nor a real device"));
        }
        Ok(ShareSpec { proto, rtt_ms, bw, export })
    }

    /// Canonical text after `share:` (round-trips through [`parse`](Self::parse)).
    pub fn text(&self) -> String {
        let mut s = format!("{}@rtt={}ms", self.proto.name(), self.rtt_ms);
        if let Some(b) = self.bw {
            s.push_str(&format!(",bw={}", fmt_bw(b)));
        }
        if self.export.label() != "tmpfs@ram" {
            s.push_str(",on=");
            s.push_str(&self.export.label());
        }
        s
    }

    /// toxiproxy's bandwidth toxic rate (units of 1,000 bytes per second, at least 1).
    pub fn toxic_rate(&self) -> Option<u64> {
        self.bw.map(|b| (b / 1000).max(1))
    }
}

pub(super) fn parse_rtt_ms(v: &str) -> Result<u64, String> {
    let us = super::device_class::parse_duration_us(v)?;
    if us % 1000 != 0 {
        return Err(format!(
            "rtt={}: the proxy (toxiproxy's latency toxic) adds whole milliseconds; give e.g. rtt=1ms",
            v.trim()
        ));
    }
    Ok(us / 1000)
}

pub(super) fn parse_bw(v: &str) -> Result<u64, String> {
    let t = v.trim();
    let b = crate::units::parse_size(t.strip_suffix("/s").unwrap_or(t)).map_err(|e| format!("bw={t}: {e}"))?;
    if b < 1000 {
        return Err(format!("bw={t}: at least 1000 bytes per second"));
    }
    Ok(b)
}

pub(super) fn fmt_bw(b: u64) -> String {
    match b {
        b if b % (1 << 20) == 0 => format!("{}MiB/s", b >> 20),
        b if b % 1024 == 0 => format!("{}KiB/s", b >> 10),
        b => format!("{b}/s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_round_trips() {
        let s = ShareSpec::parse("sftp@rtt=1ms").unwrap();
        assert_eq!((s.proto, s.rtt_ms, s.bw), (Proto::Sftp, 1, None));
        assert_eq!(s.export.label(), "tmpfs@ram");
        assert_eq!(s.text(), "sftp@rtt=1ms");
        let t = ShareSpec::parse("smb@rtt=5ms,bw=10MiB/s,on=ext4:4k@disk:/var/tmp").unwrap();
        assert_eq!((t.proto, t.rtt_ms, t.bw), (Proto::Smb, 5, Some(10 << 20)));
        assert_eq!(t.export.label(), "ext4:4k@disk:/var/tmp");
        assert_eq!(t.text(), "smb@rtt=5ms,bw=10MiB/s,on=ext4:4k@disk:/var/tmp");
        assert_eq!(t.toxic_rate(), Some(10_485));
        for text in [s.text(), t.text(), "sftp@rtt=0ms,on=ext4@class:hdd,qd=2".into()] {
            let a = ShareSpec::parse(&text).unwrap();
            assert_eq!(ShareSpec::parse(&a.text()).unwrap(), a, "{text}");
        }
        assert_eq!(ShareSpec::parse("SFTP@rtt=2000us").unwrap().rtt_ms, 2);
    }

    #[test]
    fn refuses_with_one_line() {
        for (s, want) in [
            ("sftp", "rtt"),
            ("nfs@rtt=1ms", "unknown share protocol 'nfs'"),
            ("sftp@bw=1MiB", "rtt= is required"),
            ("sftp@rtt=500us", "whole milliseconds"),
            ("sftp@rtt=1", "unit"),
            ("sftp@rtt=1ms,rtt=2ms", "given twice"),
            ("sftp@rtt=1ms,speed=3", "unknown share parameter"),
            ("sftp@rtt=1ms,bw=10", "at least 1000"),
            ("sftp@rtt=1ms,on=zfs", "on=:"),
            ("sftp@rtt=1ms,on=ext4@dev:/dev/sdb", "not a share nor a real device"),
        ] {
            let e = ShareSpec::parse(s).unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
            assert!(!e.contains('\n'));
        }
    }
}
