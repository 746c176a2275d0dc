#!/usr/bin/env bash
# Fetch the real data the comparison benchmarks run on, into a cache outside the repo.
#
#   benches/fetch-data.sh            # idempotent; re-running only fills what is missing
#   BIG=1 benches/fetch-data.sh      # also the 470k-file tree (≈9 GB more disk, minutes)
#   HUGE=1 benches/fetch-data.sh     # also the 1M-file tree (hard links, ≈2 GB, minutes)
#   DISTINCT=1 benches/fetch-data.sh # also the ≈415k-file tree of distinct sources (≈14 GB)
#
# Cache: ${REWIND_BENCH_DATA:-$HOME/.cache/rewind-bench}
#   linux/          Debian's linux-source-6.1, unpacked (≈78k files), the big tree
#   npm/lodash/     every published version of lodash, one directory per version, in
#                   publication order (versions.txt lists them)
#   ripgrep.git/    ripgrep's history (bare clone), its first-parent commits replayed by section 6
#   linux.version   the .deb the tree came from
#   linux-git/      linux/ committed into its own git repository (a real project's checkout):
#                   the first baseline of a clean committed tree stores references to git's
#                   objects, not copies (compare.sh row 5, issue 46; ≈2 GB more disk)
#   linux-x6/       (BIG=1 only) six copies of linux/ (1/ .. 6/) in one git repository, every
#                   file committed: 469,728 non-ignored files, 7.9 GB (benches/big.sh).
#                   Real copies, not hard links: the benchmarks modify files, and a file with
#                   a second name is one rewind's watches treat apart.
#   linux-x13/      (HUGE=1 only) thirteen hard-linked copies of linux/ (1/ .. 13/) in one git
#                   repository, 1.02M files (≈2 GB more disk: directories and git's index),
#                   for benches/memory.sh, which only reads it
#   distinct/       (DISTINCT=1 only) linux/ and seven more Debian source packages, archives
#                   expanded, committed in one git repository: ≈415k mostly distinct files
#   VERSIONS        the exact data versions, for benches/RESULTS.md
# The medium tree is not copied: it is cargo's own source cache (~/.cargo/registry/src/*/).
#
# Tools: hyperfine (Debian) and b3sum (crates.io) are installed when missing.
set -euo pipefail

DATA=${REWIND_BENCH_DATA:-$HOME/.cache/rewind-bench}
NPM_PACKAGE=${REWIND_BENCH_NPM_PACKAGE:-lodash}
mkdir -p "$DATA"
cd "$DATA"

log() { printf 'fetch-data: %s\n' "$*" >&2; }
copies_repo() { # NAME COUNT CP_FLAG: COUNT copies of linux/ (cp CP_FLAG) as 1/ .. COUNT/, every
    # file committed in one new git repository NAME, marked complete
    rm -rf "$1" "$1.tmp"
    mkdir -p "$1.tmp"
    for i in $(seq 1 "$2"); do
        cp "$3" linux "$1.tmp/$i"
    done
    (
        cd "$1.tmp"
        git init -q
        git -c core.fsync=none add -A
        git -c user.name=bench -c user.email=bench@localhost commit -q -m "$2 copies of linux-source-6.1"
        git gc -q --auto
    )
    mv "$1.tmp" "$1"
    touch "$1.complete"
}
need_gib() { # GIB WHAT: stop unless this disk has GIB GiB free for WHAT
    local avail
    avail=$(df -Pk . | awk 'NR == 2 { print $4 }')
    if [ "$avail" -lt $(($1 * 1024 * 1024)) ]; then
        log "not enough disk for $2: $((avail / 1024 / 1024)) GiB free, $1 needed"
        exit 1
    fi
}

apt_updated=0
apt_update_once() {
    if [ "$apt_updated" = 0 ]; then
        apt-get update -qq
        apt_updated=1
    fi
}

# --- tools -------------------------------------------------------------------------------
if ! command -v hyperfine >/dev/null; then
    log "installing hyperfine"
    apt_update_once
    apt-get install -y -qq hyperfine
fi
if ! command -v b3sum >/dev/null; then
    log "installing b3sum"
    cargo install b3sum --locked --quiet
fi
# The hooks read their event on stdin; hyperfine feeds it without a shell (`--input`) from
# 1.17 on. Debian's is older: a newer one from crates.io next to the data (1.20.0 is the
# newest that builds with this toolchain).
if ! hyperfine --help | grep -q -- '--input' && [ ! -x "$DATA/tools/bin/hyperfine" ]; then
    log "installing hyperfine 1.20.0 into $DATA/tools (for --input)"
    cargo install hyperfine@1.20.0 --locked --quiet --root "$DATA/tools"
fi
for tool in git npm hyperfine b3sum; do
    command -v "$tool" >/dev/null || { log "missing tool: $tool"; exit 1; }
done
if [ ! -x /usr/bin/time ]; then
    apt_update_once
    apt-get install -y -qq time
fi

# --- the large tree: Debian linux-source-6.1 ---------------------------------------------
if [ ! -f linux.complete ]; then
    log "fetching linux-source-6.1"
    rm -rf linux linux-deb
    mkdir -p linux-deb
    apt_update_once
    (cd linux-deb && apt-get download -qq linux-source-6.1)
    deb=$(ls linux-deb/linux-source-6.1_*.deb)
    (cd linux-deb && dpkg-deb -x "$(basename "$deb")" x)
    tarball=$(ls linux-deb/x/usr/src/linux-source-6.1.tar.*)
    mkdir -p linux.tmp
    tar -xf "$tarball" -C linux.tmp --strip-components=1
    # Debian appends "/*" and "!/debian/" to the top-level .gitignore, which ignores
    # everything; drop them so the upstream ignore rules apply.
    ignore=linux.tmp/.gitignore
    if [ "$(tail -n 2 "$ignore" | tr '\n' '|')" = '/*|!/debian/|' ]; then
        head -n -2 "$ignore" >"$ignore.new" && mv "$ignore.new" "$ignore"
    else
        log "note: .gitignore did not end with the two Debian lines; left as is"
    fi
    basename "$deb" .deb >linux.version
    rm -rf linux-deb
    mv linux.tmp linux
    touch linux.complete
fi

# --- the large tree committed into its own repository (compare.sh row 5, issue 46) ------
# A clean checkout of a real project: every file committed, so a first baseline records
# references to git's objects. One copy of linux/ as 1/, like the copies trees.
if [ ! -f linux-git.complete ]; then
    need_gib 3 linux-git # the copy (≈1.5 GB) and git's objects
    log "building linux-git (linux/ committed into its own git repository)"
    copies_repo linux-git 1 -a
fi

# --- the 470k-file tree: six copies of the large one, one git repository (BIG=1) ---------
if [ "${BIG:-0}" = 1 ] && [ ! -f linux-x6.complete ]; then
    need_gib 10 linux-x6 # the copies (≈9 GB) and git's objects
    log "building linux-x6 (six copies of linux/, one git repository)"
    copies_repo linux-x6 6 -a
fi

# --- the 1M-file tree: thirteen hard-linked copies of the large one, one repository (HUGE=1) --
# Hard links: no more data on disk, and git stores each content once; what the memory rows
# (benches/memory.sh) measure grows with the files, the paths and the directories.
if [ "${HUGE:-0}" = 1 ] && [ ! -f linux-x13.complete ]; then
    need_gib 2 linux-x13 # directories, links and git's index
    log "building linux-x13 (thirteen hard-linked copies of linux/, one git repository)"
    copies_repo linux-x13 13 -al
fi

# --- the 415k-file tree of distinct sources, one git repository (DISTINCT=1) --------------
# What a real large repository looks like: few identical files. The distribution's source
# packages, unpacked with their tarballs (and zips) expanded in place, next to linux/:
# committed into one git repository as a project would be. VERSIONS reports its file count
# and the share of files whose content another file has too (the "twins" the six-copies
# tree is made of).
DISTINCT_PACKAGES=${REWIND_BENCH_DISTINCT_PACKAGES:-gcc-12-source gcc-11-source glibc-source gdb-source binutils-source rust-src openjdk-17-source}
expand_archives() { # DIR: every tarball and zip the package ships expanded where it lies, then
    # removed (listed first: archives inside them, a test suite's data, stay as they are)
    local a list
    list=$(mktemp)
    find "$1" -type f \( -name '*.tar.*' -o -name '*.tgz' -o -name '*.tar' -o -name '*.zip' \) -print0 >"$list"
    while IFS= read -r -d '' a; do
        mkdir -p "$a.d"
        case "$a" in
            *.zip) unzip -q -o "$a" -d "$a.d" ;;
            *) tar -xf "$a" -C "$a.d" ;;
        esac
        rm -f "$a"
    done <"$list"
    rm -f "$list"
}
if [ "${DISTINCT:-0}" = 1 ] && [ ! -f distinct.complete ]; then
    need_gib 14 distinct # sources (≈7 GB) and git's objects
    command -v unzip >/dev/null || { apt_update_once; apt-get install -y -qq unzip; }
    log "building distinct (linux/ and $DISTINCT_PACKAGES, one git repository)"
    rm -rf distinct.tmp distinct-deb
    mkdir -p distinct.tmp distinct-deb
    apt_update_once
    for pkg in $DISTINCT_PACKAGES; do
        (cd distinct-deb && apt-get download -qq "$pkg")
        deb=$(ls distinct-deb/"${pkg}"_*.deb)
        basename "$deb" .deb >>distinct.tmp.versions
        dpkg-deb -x "$deb" "distinct.tmp/$pkg"
        expand_archives "distinct.tmp/$pkg"
        rm -f "$deb"
    done
    cp -a linux distinct.tmp/linux
    cat linux.version >>distinct.tmp.versions
    (
        cd distinct.tmp
        git init -q
        # Keep every file the packages hold: their own .gitignore files stay in force,
        # as in a real project, but nothing above them ignores a package wholesale.
        git -c core.fsync=none add -A
        git -c user.name=bench -c user.email=bench@localhost commit -q -m "distinct sources"
        git gc -q --auto
    )
    rm -rf distinct-deb
    mv distinct.tmp.versions distinct.versions
    mv distinct.tmp distinct
    touch distinct.complete
fi

# --- a real version history: every published version of one npm package -------------------
mkdir -p "npm/$NPM_PACKAGE"
if [ ! -f "npm/$NPM_PACKAGE/.complete" ]; then
    log "fetching every version of $NPM_PACKAGE"
    (
        cd "npm/$NPM_PACKAGE"
        # Semver order, as the registry lists them (the registry's publication times here
        # are not the original ones, so they cannot order the history).
        npm view "$NPM_PACKAGE" versions --json 2>/dev/null |
            python3 -c 'import json,sys; [print(v) for v in json.load(sys.stdin)]' >versions.txt
        mkdir -p tgz
        while read -r v; do
            [ -d "v/$v" ] && continue
            tgz=$(cd tgz && npm pack --silent "$NPM_PACKAGE@$v" 2>/dev/null | tail -n 1)
            mkdir -p "v/$v.tmp"
            tar -xzf "tgz/$tgz" -C "v/$v.tmp" --strip-components=1
            mv "v/$v.tmp" "v/$v"
        done <versions.txt
        touch .complete
    )
fi

# --- ripgrep's history, for the git-history replay (section 6) ------------------------------
RIPGREP_COMMIT=${REWIND_BENCH_RIPGREP_COMMIT:-3fce3b5bb0236da2df6d99672afb8a719642eca7}
if [ ! -d ripgrep.git ]; then
    log "cloning ripgrep's history"
    git clone -q --bare https://github.com/BurntSushi/ripgrep ripgrep.git.tmp &&
        git -C ripgrep.git.tmp update-ref HEAD "$RIPGREP_COMMIT" &&
        mv ripgrep.git.tmp ripgrep.git
fi

# --- versions of everything, for RESULTS.md -----------------------------------------------
{
    echo "linux: $(cat linux.version) ($(find linux -type f | wc -l) files)"
    if [ -f linux-x6.complete ]; then
        echo "linux-x6: six copies of it in one git repository ($(git -C linux-x6 ls-files | wc -l) files)"
    fi
    if [ -f distinct.complete ]; then
        git -C distinct ls-files -s | awk '{ n++; c[$2]++ } END {
            for (k in c) { u++; if (c[k] > 1) same += c[k] }
            printf "distinct: %d files in one git repository, %d distinct contents: %.1f %% of the files share their content with another, %.1f %% are a repeat (linux-x6: 83.3 %%)\n", n, u, 100 * same / n, 100 * (n - u) / n }'
        echo "  from: $(tr '\n' ' ' <distinct.versions)"
    fi
    if [ -f linux-x13.complete ]; then
        echo "linux-x13: thirteen hard-linked copies of it in one git repository ($(git -C linux-x13 ls-files | wc -l) files)"
    fi
    echo "npm: $NPM_PACKAGE, $(wc -l <"npm/$NPM_PACKAGE/versions.txt") versions," \
        "$(head -n 1 "npm/$NPM_PACKAGE/versions.txt") .. $(tail -n 1 "npm/$NPM_PACKAGE/versions.txt")"
    for d in "$HOME"/.cargo/registry/src/*/; do
        echo "cargo: $d ($(ls "$d" | wc -l) crates, $(find "$d" -type f | wc -l) files)"
    done
    echo "git: $(git --version)"
    echo "hyperfine: $(hyperfine --version)$([ -x "$DATA/tools/bin/hyperfine" ] && echo ", $("$DATA/tools/bin/hyperfine" --version) for stdin-fed commands")"
    echo "b3sum: $(b3sum --version)"
} >VERSIONS
cat VERSIONS
