//! `rewind read/edit/write/search/context/mcp` end to end.
