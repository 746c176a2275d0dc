//! Exit codes, the contract scripts and agents rely on.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    Error = 1,
    Usage = 2,
    /// A conflict refused the operation; nothing was written.
    Conflict = 3,
    Nothing = 4,
}

impl Exit {
    pub fn code(self) -> i32 {
        self as i32
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(
            [
                Exit::Ok,
                Exit::Error,
                Exit::Usage,
                Exit::Conflict,
                Exit::Nothing
            ]
            .map(Exit::code),
            [0, 1, 2, 3, 4]
        );
    }
}
