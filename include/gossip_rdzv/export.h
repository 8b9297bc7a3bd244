/* GOSSIP_RDZV_API marks what libgossip_rdzv.so exports: the C functions of gossip_rdzv.h and
 * the C++ classes and functions of the other public headers. The library is built with
 * hidden visibility (cmake/library.cmake), so everything without this mark stays inside it;
 * its linker version script (cmake/gossip_rdzv.map.in) then keeps only gossip_rdzv's own
 * names, so no copy of fmt, spdlog, ZeroMQ, msgpack or the standard library's templates is
 * exported to clash with a launcher's own. docs/abi.md says what changes the ABI.
 *
 * Define GOSSIP_RDZV_STATIC when compiling against a static copy of the library (nothing to
 * export or import then). Usable from C and C++. */
#ifndef GOSSIP_RDZV_EXPORT_H
#define GOSSIP_RDZV_EXPORT_H

/* GOSSIP_RDZV_LOCAL keeps a member of an exported class out of the ABI (the classes' Impl). */
#if defined(GOSSIP_RDZV_STATIC)
#define GOSSIP_RDZV_API
#define GOSSIP_RDZV_LOCAL
#elif defined(__GNUC__) || defined(__clang__)
#define GOSSIP_RDZV_API __attribute__((visibility("default")))
#define GOSSIP_RDZV_LOCAL __attribute__((visibility("hidden")))
#else
#define GOSSIP_RDZV_API
#define GOSSIP_RDZV_LOCAL
#endif

#endif /* GOSSIP_RDZV_EXPORT_H */
