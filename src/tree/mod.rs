//! The shape of a data set (TreeSpec), where it goes on disk (Plan), its bytes, and the
//! shape of a real tree measured by walking it (inventory).

pub mod content;
pub mod drawn;
pub mod inventory;
pub mod layout;
pub mod rng;
pub mod space;
pub mod spec;

pub use layout::{Plan, Unit};
pub use spec::{Content, Layout, SizeDist, TreeSpec};

/// A spec with everything derived from it that phases need, made once per tree
/// (outside any timed region).
pub struct Prepared {
    pub spec: TreeSpec,
    pub plan: Plan,
    pub content: content::ContentSource,
    /// Sum of all file sizes.
    pub total_bytes: u64,
}

impl Prepared {
    /// `direct`: file starts aligned for O_DIRECT (see [`content::ContentSource::new`]).
    pub fn new(spec: &TreeSpec, direct: bool) -> Prepared {
        Prepared {
            spec: spec.clone(),
            plan: Plan::new(spec),
            content: content::ContentSource::new(&spec.content, spec.seed, direct),
            total_bytes: spec.total_bytes(),
        }
    }
}
