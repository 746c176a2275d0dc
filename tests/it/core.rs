//! The core engine's acceptance tests (issue 2).
