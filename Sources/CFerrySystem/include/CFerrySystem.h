// Linux system calls that Swift's Glibc module does not export (they need _GNU_SOURCE), behind
// functions of our own so that Swift calls them with their real C signatures. Each returns what
// the system call returns (0, or -1 with errno set); callers check every result.
#ifndef CFERRYSYSTEM_H
#define CFERRYSYSTEM_H

#include <stdint.h>
#include <sys/types.h>

/// renameat2(2) with RENAME_NOREPLACE: fails with EEXIST instead of replacing `newpath`.
int ferry_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);

/// syncfs(2): flushes the filesystem holding `fd`.
int ferry_syncfs(int fd);

/// sync_file_range(2) with SYNC_FILE_RANGE_WRITE: starts writeback of the range without
/// waiting for it.
int ferry_start_writeback(int fd, off_t offset, off_t count);

/// fsetxattr(2): sets the extended attribute `name` of `fd` to `size` bytes at `value`.
int ferry_set_attribute(int fd, const char *name, const void *value, size_t size);

/// fgetxattr(2): reads the extended attribute `name` of `fd` into `value` (at most `size`
/// bytes); returns its length, or -1 with errno set.
ssize_t ferry_get_attribute(int fd, const char *name, void *value, size_t size);

/// lseek(2) with SEEK_DATA: the first offset at or after `offset` that holds data; -1 with
/// errno ENXIO when only a hole is left.
off_t ferry_seek_data(int fd, off_t offset);

/// lseek(2) with SEEK_HOLE: the first offset at or after `offset` in a hole (the end of the
/// file counts as one).
off_t ferry_seek_hole(int fd, off_t offset);

/// Tunes glibc's allocator for a server that holds large buffers a while: allocations of
/// 256 KiB and more are always their own mappings (given back to the system when freed; glibc
/// otherwise raises that threshold after the first such free, and later ones stay in the heap
/// for good), and at most two arenas (one per thread otherwise: memory freed by one thread is
/// not reused by the others). Returns 1 when both were taken.
int ferry_tune_allocator(void);

/// malloc_trim(3): gives the free memory at the top of each arena, and free whole pages inside
/// them, back to the system. Returns 1 when some was given back.
int ferry_trim_allocator(void);

/// The credentials of a Unix socket's peer as SO_PEERCRED gives them: struct ucred, spelled
/// out here because Swift's Glibc module leaves it out (it needs _GNU_SOURCE); system.c checks
/// that the two agree.
typedef struct ferry_peer_credentials {
  int32_t pid;
  uint32_t uid;
  uint32_t gid;
} ferry_peer_credentials;

/// An XXH3-128 hashing state (xxHash 0.8, built in from Debian's libxxhash-dev header: no
/// library is linked). Opaque; one thread at a time.
typedef struct ferry_xxh3 ferry_xxh3;

/// A new state, reset (NULL when out of memory). Free it with ferry_xxh3_free.
ferry_xxh3 *ferry_xxh3_create(void);

/// A new state that continues where `state` is (NULL when out of memory).
ferry_xxh3 *ferry_xxh3_copy(const ferry_xxh3 *state);

/// Frees a state made by ferry_xxh3_create or ferry_xxh3_copy.
void ferry_xxh3_free(ferry_xxh3 *state);

/// Hashes `count` more bytes at `bytes`.
void ferry_xxh3_update(ferry_xxh3 *state, const void *bytes, size_t count);

/// Writes the 16-byte digest of everything hashed so far, in xxHash's canonical (big-endian)
/// form, as `xxhsum -H2` prints it; the state can go on.
void ferry_xxh3_digest(const ferry_xxh3 *state, unsigned char digest[16]);

/// CRC-32 (ISO-HDLC, the one of zip and gzip) of `length` bytes at `bytes`, continuing from `crc`
/// (0 to start): slice-by-8 over a table made once.
uint32_t ferry_crc32(uint32_t crc, const void *bytes, size_t length);

#endif
