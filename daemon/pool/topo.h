/* daemon/pool/topo.h: stealing order from the CPU topology (topo.c). */
#ifndef JD_POOL_TOPO_H
#define JD_POOL_TOPO_H

struct jd_pool;
struct jd_worker;

/* jd_topo_plan: give every worker of p its CPU and its victims in tier order (SMT
 * siblings, shared last-level cache, the rest).  Returns 0 or JSCHED_ENOMEM.  The
 * creating thread, before the workers start. */
int jd_topo_plan(struct jd_pool *p);

/* jd_topo_pin: bind the calling worker thread to its CPU.  Returns 0 or
 * JSCHED_EINTERNAL.  The worker's own thread. */
int jd_topo_pin(struct jd_worker *w);

#endif /* JD_POOL_TOPO_H */
