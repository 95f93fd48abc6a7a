// The parts of libdbus-1 that `ferry daemon`'s desktop notifications use: a private
// connection to the session bus, messages built and read with iterators (the variadic calls
// are not callable from Swift), and the connection's file descriptor for its own poll loop.
// Everything is used from the notifier's one thread (see docs/ARCHITECTURE.md).
#ifndef FERRY_CDBUS_SHIM_H
#define FERRY_CDBUS_SHIM_H

#include <dbus/dbus.h>

#endif
