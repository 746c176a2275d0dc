# Setup shared by benches/compare.sh and benches/ab/rows.sh (sourced, not run): the data, the
# tools, the hook payloads and the homes of rows 1-3, so that the A/B prepares each build's
# home exactly as the full run does.
#
# Needs ROOT (the repository). Sets DATA, TREE, FILE, NPM_DIR, HF and HF_INPUT, and checks
# that the data and tools of benches/fetch-data.sh are there.

DATA=${REWIND_BENCH_DATA:-$HOME/.cache/rewind-bench}
TREE=$DATA/linux
FILE=kernel/cred.c # a typical 24 KB source file
NPM_DIR=$DATA/npm/lodash

[ -d "$TREE" ] && [ -f "$NPM_DIR/versions.txt" ] || {
    echo "no benchmark data: run benches/fetch-data.sh first" >&2
    exit 1
}
for tool in hyperfine b3sum git python3 /usr/bin/time; do
    command -v "$tool" >/dev/null || {
        echo "missing $tool: run benches/fetch-data.sh" >&2
        exit 1
    }
done

# hyperfine with `--input` (1.17+), which fetch-data.sh installs next to the data when
# Debian's is older: the hooks read their event on stdin.
HF=hyperfine
if [ -x "$DATA/tools/bin/hyperfine" ]; then
    HF=$DATA/tools/bin/hyperfine
fi
HF_INPUT=0
if "$HF" --help | grep -q -- '--input'; then
    HF_INPUT=1
fi

# Warm the page cache with the tree, so the first measured command does not pay for it.
warm_tree() {
    find "$TREE" -type f -print0 | xargs -0 cat >/dev/null
}

# The hooks' events, from the fixtures, naming the tree (or DIR) and FILE.
write_payload() { # write|read|bash OUT [DIR [SESSION]]: DIR defaults to TREE; SESSION to
    # bench-hook (write, read) or bench-scan (bash); "-" leaves the fixture's session id.
    local kind=$1 out=$2 dir=${3:-$TREE} session=${4:-}
    if [ -z "$session" ]; then
        if [ "$kind" = bash ]; then session=bench-scan; else session=bench-hook; fi
    fi
    python3 - "$ROOT/fixtures/hooks/claude-code" "$kind" "$dir" "$FILE" "$session" >"$out" <<'EOF'
import json, sys
fixtures, kind, cwd, rel, session = sys.argv[1:]
name = {"write": "pre-tool-use-write", "read": "post-tool-use-read", "bash": "pre-tool-use-bash"}[kind]
p = json.load(open(f"{fixtures}/{name}.json"))
p["cwd"] = cwd
if session != "-":
    p["session_id"] = session
path = cwd + "/" + rel
if kind == "write":
    p["tool_input"]["file_path"] = path
elif kind == "read":
    text = open(path, encoding="utf-8", errors="replace").read()
    p["tool_input"]["file_path"] = path
    f = p["tool_response"]["file"]
    f["filePath"], f["content"] = path, text
    f["numLines"] = f["totalLines"] = text.count("\n")
print(json.dumps(p))
EOF
}

# Rows 1 and 2: SNAP_HOME holds a snapshot of FILE made by `rewind snap` (snap and check run
# on it), HOOK_HOME one made by the PreToolUse Write hook (the hooks run on it).
prewrite_homes() { # REWIND SNAP_HOME HOOK_HOME WRITE_PAYLOAD
    "$1" --home "$2" --workspace "$TREE" snap "$TREE/$FILE" >/dev/null
    REWIND_HOME=$3 "$1" hook claude-code <"$4" >/dev/null 2>&1 || true
}

# Row 3 (and 4): the tree's first baseline through the PreToolUse Bash hook, in one call (no
# time budget; by default a hook baselines for 3 s and resumes in later calls).
first_baseline() { # REWIND HOME BASH_PAYLOAD
    REWIND_SCAN_BUDGET_MS=86400000 REWIND_HOME=$2 "$1" hook claude-code <"$3"
}

# "ext4, journal" / "ext4, no journal" / "xfs" ...: the filesystem holding DIR.
fs_label() {
    local src fstype dev
    read -r src fstype < <(findmnt -n -o SOURCE,FSTYPE -T "$1")
    if [ "$fstype" = ext4 ]; then
        dev=$(basename "$(readlink -f "$src")")
        if compgen -G "/proc/fs/jbd2/$dev-*" >/dev/null; then
            echo "ext4, journal"
        else
            echo "ext4, no journal"
        fi
    else
        echo "$fstype"
    fi
}
