/* tests/slurm/cluster.h: what the Slurm tests share about the cluster that
 * tests/slurm/cluster.sh makes for a run (its environment is described there). */
#ifndef JST_CLUSTER_H
#define JST_CLUSTER_H

#include <stdio.h>
#include <stdlib.h>

/* jst_ctld: stop or start the run's slurmctld ("stop", "start"): cluster.sh's `ctld`.
 * Returns system()'s status (0: done). */
static inline int jst_ctld(const char *what)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "'%s' ctld %s", getenv("JSCHED_SLURM_CLUSTER"), what);
	return system(cmd);
}

#endif /* JST_CLUSTER_H */
