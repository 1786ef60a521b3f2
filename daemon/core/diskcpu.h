/* daemon/core/diskcpu.h: the CPU that takes a disk's completion interrupts.
 *
 * A write through O_DIRECT | O_DSYNC ends with the disk's interrupt, on the CPU its
 * interrupt is routed to; the kernel wakes the writer from there.  A writer running on
 * another CPU that sleeps idle waits for that CPU to be woken as well, which on a
 * virtual machine whose idle CPUs halt at once is a trip through the host: on the VM
 * this was measured on (virtio-blk, one request queue, its interrupt on CPU 1), a 4 KiB
 * write + sync took 112-118 us at p10 and 177-206 us at p50 from CPU 1, and 150-187 /
 * 372-396 us from CPU 0, alternated 25 writes at a time (bench_journal's "write from
 * each CPU" rows).  A device with a request queue per CPU (NVMe, virtio-blk with
 * num-queues) completes on the CPU that submitted, so no CPU is better there.
 *
 * jd_disk_irq_cpu finds the one CPU, when there is one: the block device holding the
 * path (its partition's disk), the PCI function above it in sysfs, the MSI interrupts
 * of that function that carry its traffic (those that fired at least 1/16 as often as
 * the busiest, which leaves out a configuration interrupt), and the CPUs they are
 * delivered to (/proc/irq/N/effective_affinity_list).  Linux only; anything it cannot
 * read or that does not fit (not a block device, a device-mapper or md volume, legacy
 * interrupts, interrupts on several CPUs) gives -1.  Any thread; it reads files.
 */
#ifndef JD_DISKCPU_H
#define JD_DISKCPU_H

#include <stddef.h>
#include <sys/types.h>

/* jd_disk_irq_cpu: the one CPU that takes the completion interrupts of the disk holding
 * path (while path does not exist yet, its nearest parent that does), or -1, with what
 * was found (the interrupt's name and CPU, or why none) in why. */
int jd_disk_irq_cpu(const char *path, char *why, size_t whylen);

/* jd_disk_irq_cpu_at: the same for the device dev, reading sysfs under sys ("/sys") and
 * procfs under proc ("/proc"): what the tests give a tree of their own. */
int jd_disk_irq_cpu_at(dev_t dev, const char *sys, const char *proc, char *why,
		       size_t whylen);

#endif /* JD_DISKCPU_H */
