#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "CFerrySystem.h"

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
