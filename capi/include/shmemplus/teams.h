/* Teams (OpenSHMEM 1.5 section 9.4), contexts (9.5) and distributed locks (9.11)
 * (shmem.h includes this). */
#ifndef SHMEMPLUS_TEAMS_H
#define SHMEMPLUS_TEAMS_H

SHMEMPLUS_BEGIN_C

/* Teams. A split returns 0, or nonzero on every member (new teams then
 * SHMEM_TEAM_INVALID); PEs outside a new team get SHMEM_TEAM_INVALID. The stride of
 * shmem_team_split_strided may be negative (the team is numbered downwards). */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
int shmem_team_sync(shmem_team_t team);
void shmem_team_destroy(shmem_team_t team);

/* Contexts: create returns 0 and sets *ctx, or nonzero (then *ctx is
 * SHMEM_CTX_INVALID). */
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* Distributed locks on a symmetric long, zero before first use. shmem_test_lock
 * returns 0 when it acquired the lock, 1 when another PE holds it. */
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

SHMEMPLUS_END_C

#endif /* SHMEMPLUS_TEAMS_H */
