/* Library setup, query, ordering and the symmetric heap (shmem.h includes this). */
#ifndef SHMEMPLUS_SETUP_H
#define SHMEMPLUS_SETUP_H

SHMEMPLUS_BEGIN_C

/* Setup, exit and query (OpenSHMEM 1.5 section 9.1). */
void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);

/* Legacy names (deprecated by OpenSHMEM, still accepted). */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);

void shmem_barrier_all(void);
void shmem_quiet(void);
void shmem_fence(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_ctx_fence(shmem_ctx_t ctx);
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);

/* The symmetric heap (section 9.3); every routine is collective. */
void *shmem_malloc(size_t size);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_malloc_with_hints(size_t size, long hints);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);
void *shmalloc(size_t size);
void *shmemalign(size_t alignment, size_t size);
void *shrealloc(void *ptr, size_t size);
void shfree(void *ptr);

/* Deprecated cache management: no-ops (this library caches no remote data). */
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

SHMEMPLUS_END_C

/* The profiling interface's control (OpenSHMEM 1.5 section 9.16): shmemplus has no
 * profiling levels, so every level is accepted and changes nothing. */
static inline void shmem_pcontrol(const int level, ...) { (void)level; }

#endif /* SHMEMPLUS_SETUP_H */
