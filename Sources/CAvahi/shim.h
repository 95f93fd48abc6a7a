// The parts of libavahi-client that Ferry calls. Everything is used from the
// threaded poll's thread or under its lock (see docs/ARCHITECTURE.md).
#ifndef FERRY_CAVAHI_SHIM_H
#define FERRY_CAVAHI_SHIM_H

#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/error.h>
#include <avahi-common/thread-watch.h>
#include <avahi-common/strlst.h>
#include <avahi-common/alternative.h>
#include <avahi-common/address.h>
#include <avahi-common/malloc.h>
#include <avahi-common/timeval.h>

#endif
