# scripts/lib/release.sh - sourced: the one way Ferry's release binary is built. The Swift
# standard library, Foundation and dispatch are linked in (--static-swift-stdlib), no RUNPATH
# points into the toolchain (--disable-local-rpath), so the binary runs where no Swift is
# installed; only Debian's own libraries stay dynamic (scripts/package checks which).
# scripts/package, scripts/man -c release and scripts/bench build with these flags alike, so
# no release build in .build is ever rebuilt for want of them.
# shellcheck disable=SC2034
release_flags=(-c release --static-swift-stdlib --disable-local-rpath)
