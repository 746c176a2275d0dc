//! The index's decoding of stored values: a stored path must come back confined (relative,
//! no `..`, no `.git`, no NUL) or be refused; ids parse or are refused, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rewind::ids::{BlobId, WindowId};
use rewind::workspace::RelPath;

fuzz_target!(|data: &[u8]| {
    if let Ok(rel) = RelPath::from_stored(data.to_vec()) {
        assert!(!rel.as_bytes().starts_with(b"/"));
        for c in rel.components() {
            assert!(!c.is_empty() && c != b".." && c != b"." && c != b".git" && !c.contains(&0));
        }
        let _ = rel.to_path_buf();
        let _ = rel.parent();
    }
    let text = String::from_utf8_lossy(data);
    if let Ok(id) = text.parse::<BlobId>() {
        assert_eq!(id.to_hex().parse::<BlobId>().ok(), Some(id));
    }
    let _ = text.parse::<WindowId>();
});
