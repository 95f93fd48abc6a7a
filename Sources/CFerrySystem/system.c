#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "CFerrySystem.h"

_Static_assert(sizeof(ferry_peer_credentials) == sizeof(struct ucred), "ucred's size");
_Static_assert(offsetof(ferry_peer_credentials, uid) == offsetof(struct ucred, uid), "ucred's uid");

int ferry_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
  return renameat2(olddirfd, oldpath, newdirfd, newpath, RENAME_NOREPLACE);
}

int ferry_syncfs(int fd) { return syncfs(fd); }

int ferry_start_writeback(int fd, off_t offset, off_t count) {
  return sync_file_range(fd, offset, count, SYNC_FILE_RANGE_WRITE);
}

int ferry_set_attribute(int fd, const char *name, const void *value, size_t size) {
  return fsetxattr(fd, name, value, size, 0);
}

ssize_t ferry_get_attribute(int fd, const char *name, void *value, size_t size) {
  return fgetxattr(fd, name, value, size);
}

off_t ferry_seek_data(int fd, off_t offset) { return lseek(fd, offset, SEEK_DATA); }

off_t ferry_seek_hole(int fd, off_t offset) { return lseek(fd, offset, SEEK_HOLE); }

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_make_table(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[0][n] = c;
  }
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = crc_table[0][n];
    for (int k = 1; k < 8; k++) {
      c = crc_table[0][c & 0xFF] ^ (c >> 8);
      crc_table[k][n] = c;
    }
  }
}

uint32_t ferry_crc32(uint32_t crc, const void *bytes, size_t length) {
  pthread_once(&crc_once, crc_make_table);
  const unsigned char *p = bytes;
  uint32_t c = ~crc;
  while (length >= 8) {
    uint32_t low = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t high = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    c = crc_table[7][low & 0xFF] ^ crc_table[6][(low >> 8) & 0xFF] ^ crc_table[5][(low >> 16) & 0xFF]
        ^ crc_table[4][low >> 24] ^ crc_table[3][high & 0xFF] ^ crc_table[2][(high >> 8) & 0xFF]
        ^ crc_table[1][(high >> 16) & 0xFF] ^ crc_table[0][high >> 24];
    p += 8;
    length -= 8;
  }
  while (length--) c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

int ferry_tune_allocator(void) {
  int threshold = mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  int arenas = mallopt(M_ARENA_MAX, 2);
  return threshold == 1 && arenas == 1;
}

int ferry_trim_allocator(void) { return malloc_trim(0); }
