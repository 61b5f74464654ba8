/* The OpenSHMEM 1.5 tables of types as X-macros: X(C type, TYPENAME). shmem.h
 * includes this; the family headers declare their typed routines with them. */
#ifndef SHMEMPLUS_TYPES_H
#define SHMEMPLUS_TYPES_H

/* Standard RMA types (Table 5). */
#define SHMEMPLUS_RMA_TYPES(X)                                                          \
    X(float, float)                                                                     \
    X(double, double)                                                                   \
    X(long double, longdouble)                                                          \
    X(char, char)                                                                       \
    X(signed char, schar)                                                               \
    X(short, short)                                                                     \
    X(int, int)                                                                         \
    X(long, long)                                                                       \
    X(long long, longlong)                                                              \
    X(unsigned char, uchar)                                                             \
    X(unsigned short, ushort)                                                           \
    X(unsigned int, uint)                                                               \
    X(unsigned long, ulong)                                                             \
    X(unsigned long long, ulonglong)                                                    \
    X(int8_t, int8)                                                                     \
    X(int16_t, int16)                                                                   \
    X(int32_t, int32)                                                                   \
    X(int64_t, int64)                                                                   \
    X(uint8_t, uint8)                                                                   \
    X(uint16_t, uint16)                                                                 \
    X(uint32_t, uint32)                                                                 \
    X(uint64_t, uint64)                                                                 \
    X(size_t, size)                                                                     \
    X(ptrdiff_t, ptrdiff)

/* Standard AMO types (Table 6). */
#define SHMEMPLUS_AMO_STANDARD_TYPES(X)                                                 \
    X(int, int)                                                                         \
    X(long, long)                                                                       \
    X(long long, longlong)                                                              \
    X(unsigned int, uint)                                                               \
    X(unsigned long, ulong)                                                             \
    X(unsigned long long, ulonglong)                                                    \
    X(int32_t, int32)                                                                   \
    X(int64_t, int64)                                                                   \
    X(uint32_t, uint32)                                                                 \
    X(uint64_t, uint64)                                                                 \
    X(size_t, size)                                                                     \
    X(ptrdiff_t, ptrdiff)

/* Extended AMO types (Table 7): the standard ones and these. */
#define SHMEMPLUS_AMO_EXTENDED_ONLY_TYPES(X) X(float, float) X(double, double)

/* Bitwise AMO types (Table 8). */
#define SHMEMPLUS_AMO_BITWISE_TYPES(X)                                                  \
    X(unsigned int, uint)                                                               \
    X(unsigned long, ulong)                                                             \
    X(unsigned long long, ulonglong)                                                    \
    X(int32_t, int32)                                                                   \
    X(int64_t, int64)                                                                   \
    X(uint32_t, uint32)                                                                 \
    X(uint64_t, uint64)

/* Point-to-point synchronization types (Table 10). */
#define SHMEMPLUS_P2P_TYPES(X)                                                          \
    X(short, short)                                                                     \
    X(int, int)                                                                         \
    X(long, long)                                                                       \
    X(long long, longlong)                                                              \
    X(unsigned short, ushort)                                                           \
    X(unsigned int, uint)                                                               \
    X(unsigned long, ulong)                                                             \
    X(unsigned long long, ulonglong)                                                    \
    X(int32_t, int32)                                                                   \
    X(int64_t, int64)                                                                   \
    X(uint32_t, uint32)                                                                 \
    X(uint64_t, uint64)                                                                 \
    X(size_t, size)                                                                     \
    X(ptrdiff_t, ptrdiff)

/* The sized RMA routines: X(bits). */
#define SHMEMPLUS_SIZES(X) X(8) X(16) X(32) X(64) X(128)

#endif /* SHMEMPLUS_TYPES_H */
