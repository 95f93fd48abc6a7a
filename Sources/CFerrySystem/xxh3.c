// XXH3-128 for Ferry's file digests, compiled in from xxHash's header (XXH_INLINE_ALL), so the
// binary needs no libxxhash at run time.
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "CFerrySystem.h"

struct ferry_xxh3 {
  XXH3_state_t *state;
};

ferry_xxh3 *ferry_xxh3_create(void) {
  ferry_xxh3 *wrapper = malloc(sizeof *wrapper);
  if (wrapper == NULL) return NULL;
  wrapper->state = XXH3_createState();
  if (wrapper->state == NULL) {
    free(wrapper);
    return NULL;
  }
  XXH3_128bits_reset(wrapper->state);
  return wrapper;
}

ferry_xxh3 *ferry_xxh3_copy(const ferry_xxh3 *state) {
  ferry_xxh3 *copy = ferry_xxh3_create();
  if (copy != NULL) XXH3_copyState(copy->state, state->state);
  return copy;
}

void ferry_xxh3_free(ferry_xxh3 *state) {
  if (state == NULL) return;
  XXH3_freeState(state->state);
  free(state);
}

void ferry_xxh3_update(ferry_xxh3 *state, const void *bytes, size_t count) {
  XXH3_128bits_update(state->state, bytes, count);
}

void ferry_xxh3_digest(const ferry_xxh3 *state, unsigned char digest[16]) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state->state));
  memcpy(digest, canonical.digest, 16);
}
