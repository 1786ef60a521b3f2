#!/bin/sh
# tests/slurm/test_cluster.sh: the cluster of tests/slurm/cluster.sh takes, runs and
# cancels jobs through the Slurm client commands (sbatch, squeue, scancel, scontrol).
# Inside `cluster.sh run` only.
set -eu
: "${JSCHED_SLURM_CLUSTER:?run me through tests/slurm/cluster.sh run}"
exec "$JSCHED_SLURM_CLUSTER" __selftest
