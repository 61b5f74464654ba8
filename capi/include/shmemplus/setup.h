/* Library setup, query and ordering (shmem.h includes this). */
#ifndef SHMEMPLUS_SETUP_H
#define SHMEMPLUS_SETUP_H

SHMEMPLUS_BEGIN_C

void shmem_init(void);
void shmem_finalize(void);
int shmem_my_pe(void);
int shmem_n_pes(void);
void shmem_barrier_all(void);
void shmem_quiet(void);
void shmem_fence(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_ctx_fence(shmem_ctx_t ctx);
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);

void *shmem_malloc(size_t size);
void shmem_free(void *ptr);

SHMEMPLUS_END_C

#endif /* SHMEMPLUS_SETUP_H */
