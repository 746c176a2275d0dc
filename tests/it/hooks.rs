//! `rewind hook` / `rewind init` end to end.
