//! Agent edit-safety commands: read, edit, write, search, context (placeholder).

use std::path::PathBuf;

use clap::Args;

use super::args::Global;
use super::exit::Exit;
use super::{Failure, Out};

#[derive(Debug, Args)]
pub struct ReadArgs {
    pub path: PathBuf,
}
#[derive(Debug, Args)]
pub struct EditArgs {
    pub path: PathBuf,
}
#[derive(Debug, Args)]
pub struct WriteArgs {
    pub path: PathBuf,
}
#[derive(Debug, Args)]
pub struct SearchArgs {
    pub pattern: String,
}
#[derive(Debug, Args)]
pub struct ContextArgs {
    pub path: PathBuf,
}

fn todo_cmd(name: &str) -> Result<Exit, Failure> {
    Err(Failure::new(
        Exit::Error,
        format!("rewind {name} is not implemented yet"),
    ))
}

pub fn read(_g: &Global, _out: &Out, _a: ReadArgs) -> Result<Exit, Failure> {
    todo_cmd("read")
}
pub fn edit(_g: &Global, _out: &Out, _a: EditArgs) -> Result<Exit, Failure> {
    todo_cmd("edit")
}
pub fn write(_g: &Global, _out: &Out, _a: WriteArgs) -> Result<Exit, Failure> {
    todo_cmd("write")
}
pub fn search(_g: &Global, _out: &Out, _a: SearchArgs) -> Result<Exit, Failure> {
    todo_cmd("search")
}
pub fn context(_g: &Global, _out: &Out, _a: ContextArgs) -> Result<Exit, Failure> {
    todo_cmd("context")
}
