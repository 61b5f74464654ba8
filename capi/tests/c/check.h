/* Assertions for the C test programs: a failed CHECK prints where and what on stderr
 * and exits 1, which shmemrun reports as the PE's failure. */
#ifndef SHMEMPLUS_TEST_CHECK_H
#define SHMEMPLUS_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(),          \
                    __FILE__, __LINE__, #cond);                                         \
            fprintf(stderr, __VA_ARGS__);                                               \
            fprintf(stderr, "\n");                                                      \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

/* The line the harness looks for: "PE <me>: <name> ok". */
#define REPORT_OK(name) printf("PE %d: %s ok\n", shmem_my_pe(), name)

#endif
