/* unit_diskcpu.c: finding the CPU that takes a disk's completion interrupts
 * (daemon/core/diskcpu.c), on sysfs and procfs trees made in a temporary directory: a
 * virtio-blk disk with one request queue (its interrupt on one CPU, a configuration
 * interrupt that hardly fires elsewhere), the same through a partition, a disk whose
 * queues' interrupts go to two CPUs, one whose interrupt may go to a range of CPUs, a
 * device-mapper volume (no PCI function above it), and no device at all.  The last test
 * asks about the real root filesystem and checks only that an answer is a CPU or -1.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon/core/diskcpu.h"

static char root[PATH_MAX], sys[PATH_MAX + 8], proc[PATH_MAX + 8];

__attribute__((format(printf, 1, 2))) static void mkdirs(const char *fmt, ...)
{
	char p[PATH_MAX * 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p, sizeof(p), fmt, ap);
	va_end(ap);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0700);
			*s = '/';
		}
	mkdir(p, 0700);
}

__attribute__((format(printf, 2, 3))) static void put(const char *text, const char *fmt, ...)
{
	char p[PATH_MAX * 2];
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(p, sizeof(p), fmt, ap);
	va_end(ap);
	assert_non_null(f = fopen(p, "w"));
	fputs(text, f);
	fclose(f);
}

/* a PCI function at sys/devices/pci0000:00/FN with MSI interrupts irqs[] (each on the
 * CPU list cpus[]) and a disk DISK under it, linked as sys/dev/block/MAJ:MIN. */
static void disk(const char *fn, const char *disk, unsigned maj, unsigned min,
		 const unsigned *irqs, const char *const *cpus, size_t n)
{
	char target[PATH_MAX * 2], link[PATH_MAX * 2];

	mkdirs("%s/devices/pci0000:00/%s/virtio1/block/%s", sys, fn, disk);
	for (size_t i = 0; i < n; i++) {
		mkdirs("%s/devices/pci0000:00/%s/msi_irqs/%u", sys, fn, irqs[i]);
		mkdirs("%s/irq/%u", proc, irqs[i]);
		put(cpus[i], "%s/irq/%u/effective_affinity_list", proc, irqs[i]);
	}
	mkdirs("%s/dev/block", sys);
	snprintf(target, sizeof(target), "%s/devices/pci0000:00/%s/virtio1/block/%s", sys, fn,
		 disk);
	snprintf(link, sizeof(link), "%s/dev/block/%u:%u", sys, maj, min);
	unlink(link);
	assert_int_equal(symlink(target, link), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/unit-diskcpu-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(sys, sizeof(sys), "%s/sys", root);
	snprintf(proc, sizeof(proc), "%s/proc", root);
	mkdirs("%s", proc);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static const char interrupts[] =
	"           CPU0       CPU1       \n"
	" 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n"
	" 35:          0          1  PCI-MSIX-0000:00:02.0   0-edge      virtio1-config\n"
	" 36:          0    1779529  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n"
	" 40:      51200      48700  PCI-MSIX-0000:00:04.0   1-edge      virtio3-req.0\n"
	" 41:      50100          0  PCI-MSIX-0000:00:04.0   2-edge      virtio3-req.1\n"
	"NMI:          0          0   Non-maskable interrupts\n";

static void test_one_queue(void **state)
{
	static const unsigned irqs[] = {35, 36};
	static const char *const cpus[] = {"1\n", "1\n"};
	char why[256];

	(void)state;
	put(interrupts, "%s/interrupts", proc);
	disk("0000:00:02.0", "vda", 254, 0, irqs, cpus, 2);
	/* the configuration interrupt on CPU 0 is left out: it fired once */
	put("0\n", "%s/irq/35/effective_affinity_list", proc);
	assert_int_equal(jd_disk_irq_cpu_at(makedev(254, 0), sys, proc, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "virtio1-req.0"));
	assert_non_null(strstr(why, "CPU 1"));
}

static void test_partition(void **state)
{
	static const unsigned irqs[] = {35, 36};
	static const char *const cpus[] = {"1\n", "1\n"};
	char link[PATH_MAX * 2], target[PATH_MAX * 2];

	(void)state;
	put(interrupts, "%s/interrupts", proc);
	disk("0000:00:02.0", "vda", 254, 0, irqs, cpus, 2);
	mkdirs("%s/devices/pci0000:00/0000:00:02.0/virtio1/block/vda/vda1", sys);
	snprintf(target, sizeof(target), "%s/devices/pci0000:00/0000:00:02.0/virtio1/block/vda/vda1",
		 sys);
	snprintf(link, sizeof(link), "%s/dev/block/254:1", sys);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(jd_disk_irq_cpu_at(makedev(254, 1), sys, proc, NULL, 0), 1);
}

static void test_two_cpus(void **state)
{
	static const unsigned irqs[] = {40, 41};
	static const char *const cpus[] = {"1\n", "0\n"};
	char why[256];

	(void)state;
	put(interrupts, "%s/interrupts", proc);
	disk("0000:00:04.0", "vdb", 254, 16, irqs, cpus, 2);
	assert_int_equal(jd_disk_irq_cpu_at(makedev(254, 16), sys, proc, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "several CPUs"));
}

static void test_range(void **state)
{
	static const unsigned irqs[] = {35, 36};
	static const char *const cpus[] = {"0-1\n", "0-1\n"};

	(void)state;
	put(interrupts, "%s/interrupts", proc);
	disk("0000:00:02.0", "vda", 254, 0, irqs, cpus, 2);
	assert_int_equal(jd_disk_irq_cpu_at(makedev(254, 0), sys, proc, NULL, 0), -1);
	put("0,1\n", "%s/irq/36/effective_affinity_list", proc);
	assert_int_equal(jd_disk_irq_cpu_at(makedev(254, 0), sys, proc, NULL, 0), -1);
}

static void test_no_function(void **state)
{
	char link[PATH_MAX * 2], target[PATH_MAX * 2], why[256];

	(void)state;
	put(interrupts, "%s/interrupts", proc);
	mkdirs("%s/devices/virtual/block/dm-0", sys);
	mkdirs("%s/dev/block", sys);
	snprintf(target, sizeof(target), "%s/devices/virtual/block/dm-0", sys);
	snprintf(link, sizeof(link), "%s/dev/block/253:0", sys);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(jd_disk_irq_cpu_at(makedev(253, 0), sys, proc, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "no MSI interrupts"));
	/* no such device; and a filesystem without one (tmpfs, overlay: major 0) */
	assert_int_equal(jd_disk_irq_cpu_at(makedev(8, 0), sys, proc, NULL, 0), -1);
	assert_int_equal(jd_disk_irq_cpu_at(makedev(0, 42), sys, proc, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "not on a block device"));
}

static void test_real(void **state)
{
	int cpu;

	(void)state;
	cpu = jd_disk_irq_cpu("/", NULL, 0);
	assert_true(cpu >= -1 && cpu < 1024);
	/* a path not made yet is asked about through its parent */
	assert_int_equal(jd_disk_irq_cpu("/no/such/dir/at/all", NULL, 0), cpu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partition, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_cpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_function, setup, teardown),
		cmocka_unit_test(test_real),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
