//! The Codex / OpenCode `apply_patch` header reader: any text gives paths or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rewind::hooks::patch_paths;

fuzz_target!(|data: &[u8]| {
    if let Ok(files) = patch_paths(&String::from_utf8_lossy(data)) {
        assert!(!files.is_empty(), "Ok with no files");
    }
});
