//! `rewind mcp`: the MCP stdio server (placeholder).

use clap::Args;

use super::args::Global;
use super::exit::Exit;
use super::Failure;

#[derive(Debug, Args)]
pub struct McpArgs {}

pub fn run(_g: &Global, _a: McpArgs) -> Result<Exit, Failure> {
    Err(Failure::new(
        Exit::Error,
        "rewind mcp is not implemented yet",
    ))
}
