/*
 * A fake libnvidia-ml.so.1 for qgpu's tests: the NVML entry points qgpu binds, with the struct layouts
 * and parameter types of NVML 13.x on x86_64 (docs/nvml.md lists them), over configurable fake machines,
 * plus control functions (prefix fake_nvml_) that tests call through JNA on the same loaded library.
 *
 * Written for qgpu from the published API description; no NVIDIA code.
 *
 * Machines (fake_nvml_select_machine or env FAKE_NVML_MACHINE, default dgx-h100):
 *   dgx-h100      8 x H100 80 GiB, 18 NVLinks each, all to NVSwitches; NUMA 0: GPU0-3, NUMA 1: GPU4-7
 *                 (this one also answers nvmlDeviceGetNumaNodeId with that node, as a platform whose GPU
 *                 memory is a NUMA node would; the other machines answer NOT_SUPPORTED, as x86 does)
 *   t4x4          4 x Tesla T4 16 GiB, PCIe only; GPU0-1 and GPU2-3 behind one host bridge each,
 *                 one pair per NUMA node
 *   a100-bridged  4 x A100 80 GiB PCIe, NVLink bridges (12 links) between GPU0-1 and GPU2-3
 *   a100-mig      2 x A100-SXM4 80 GiB seen from a container: GPU0 MIG on with 3g.40gb, 2g.20gb and two
 *                 1g.10gb instances, GPU1 MIG on with one 7g.80gb instance; NO_PERMISSION for a MIG
 *                 parent's memory and process lists, NOT_SUPPORTED utilization; 12 NVLinks to switches
 *   x86-numa      4 x L40S on two sockets: nvmlDeviceGetNumaNodeId NOT_SUPPORTED (x86), memory and CPU
 *                 affinity per socket (CPUs 0-23,48-71 and 24-47,72-95); GPU0-1 PIX, GPU2-3 NODE
 *   h100-vm       4 x H100 SXM passed through to a VM: 18 active NVLinks each whose remote side NVML
 *                 cannot identify (remote PCI info and remote type fail), common ancestor NOT_SUPPORTED,
 *                 no NUMA information
 *
 * Compute mode: kept per GPU (DEFAULT when a machine is loaded), read and set through NVML or with
 * fake_nvml_compute_mode / fake_nvml_set_compute_mode.
 *
 * Fault injection: fake_nvml_set_fault (any return code for any function, after some calls, some
 * times), fake_nvml_gpu_lost_after (GPU lost after N calls that touch it), fake_nvml_inject_xid
 * (an Xid event now), fake_nvml_set_link (a link down), and more below.
 *
 * Built with -DFAKE_NVML_OLD it lacks nvmlDeviceGetNumaNodeId (an optional symbol); built with
 * -DFAKE_NVML_BROKEN it also lacks nvmlDeviceGetPciInfo_v3 (a required one).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- NVML types and constants (the layouts and enum types of nvml.h, NVML 13.x) ------------------- */

typedef struct fake_device *nvmlDevice_t;
typedef struct fake_event_set *nvmlEventSet_t;

typedef enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/* parameter types as nvml.h declares them */
typedef enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 } nvmlEnableState_t;
typedef enum {
    NVML_TOPOLOGY_INTERNAL = 0,
    NVML_TOPOLOGY_SINGLE = 10,
    NVML_TOPOLOGY_MULTIPLE = 20,
    NVML_TOPOLOGY_HOSTBRIDGE = 30,
    NVML_TOPOLOGY_NODE = 40,
    NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;
typedef enum {
    NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
    NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
    NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
    NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF
} nvmlIntNvLinkDeviceType_t;
typedef unsigned int nvmlAffinityScope_t;
typedef enum {
    NVML_COMPUTEMODE_DEFAULT = 0,
    NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1, /* deprecated by NVIDIA; still a value of the enum */
    NVML_COMPUTEMODE_PROHIBITED = 2,
    NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3
} nvmlComputeMode_t;
#define NVML_AFFINITY_SCOPE_NODE 0u
#define NVML_AFFINITY_SCOPE_SOCKET 1u

typedef struct {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(offsetof(nvmlMemory_v2_t, total) == 8, "total");
_Static_assert(offsetof(nvmlMemory_v2_t, reserved) == 16, "reserved");
_Static_assert(offsetof(nvmlMemory_v2_t, free) == 24, "free");
_Static_assert(offsetof(nvmlMemory_v2_t, used) == 32, "used");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t");
_Static_assert(offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8, "usedGpuMemory");
_Static_assert(offsetof(nvmlProcessInfo_t, gpuInstanceId) == 16, "gpuInstanceId");
_Static_assert(offsetof(nvmlProcessInfo_t, computeInstanceId) == 20, "computeInstanceId");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8, "timeStamp");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16, "smUtil");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, decUtil) == 28, "decUtil");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");
_Static_assert(offsetof(nvmlPciInfo_t, domain) == 16, "domain");
_Static_assert(offsetof(nvmlPciInfo_t, pciSubSystemId) == 32, "pciSubSystemId");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "busId");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t");
_Static_assert(offsetof(nvmlEventData_t, eventType) == 8, "eventType");
_Static_assert(offsetof(nvmlEventData_t, eventData) == 16, "eventData");
_Static_assert(offsetof(nvmlEventData_t, gpuInstanceId) == 24, "gpuInstanceId");
_Static_assert(offsetof(nvmlEventData_t, computeInstanceId) == 28, "computeInstanceId");

#define NVML_MEMORY_V2_VERSION 0x02000028u
#define EVENT_XID 8ULL

/* ---- fake machine state ------------------------------------------------------------------------ */

#define MAX_GPUS 16
/* NVML_NVLINK_MAX_LINKS: 18 before NVML 13.3, 36 from 13.3 */
#define MAX_LINKS 36
#define MAX_MIG_SLOTS 7
#define MAX_MIGS 16
#define MAX_MPS 64
/* what real drivers answer to the process-utilization count query, whatever the true count */
#define FIXED_SAMPLE_COUNT 100
#define MAX_PROCS 256
#define MAX_SAMPLES 256
#define MAX_SETS 16
#define QUEUE_LEN 64
#define MAX_FAULTS 32
#define MAX_COUNTERS 64
#define NAME_LEN 512

struct fake_device {
    int index;
    char uuid[80];
    char name[NAME_LEN];
    unsigned long long total, reserved, used;
    unsigned int minor;
    unsigned int domain, bus, devno, pciDeviceId, pciSubSystemId;
    int ccMajor, ccMinor;
    int migSupported, migCurrent, migPending;
    int numa;          /* the NUMA node nearest the GPU (sets the affinity masks); < 0: none */
    int gpuNuma;       /* the GPU's own NUMA node id; < 0: nvmlDeviceGetNumaNodeId NOT_SUPPORTED (x86) */
    unsigned long memAffinity[2];  /* NUMA node bitmask by scope (NODE, SOCKET); 0: NOT_SUPPORTED */
    unsigned long cpuAffinity[2][2]; /* CPU bitmask (128 CPUs) by scope; all 0: NOT_SUPPORTED */
    int nlinks;        /* NVLink count; 0: NVLink not supported (NOT_SUPPORTED) */
    int linkUp[MAX_LINKS];
    unsigned int remoteDomain[MAX_LINKS], remoteBus[MAX_LINKS], remoteDev[MAX_LINKS];
    nvmlIntNvLinkDeviceType_t remoteType[MAX_LINKS];
    int remoteUnknown; /* remote PCI info and remote type fail (NVML in a VM) */
    /* MIG: a parent has slots; an instance (isMig) has its parent and ids */
    int isMig;
    struct fake_device *parent;
    struct fake_device *migSlot[MAX_MIG_SLOTS];
    unsigned int giId, ciId;
    int nmps;
    nvmlProcessInfo_t mps[MAX_MPS];
    int fixedSampleCount; /* the count query answers FIXED_SAMPLE_COUNT (real drivers) */
    unsigned int utilGpu, utilMem;
    int nprocs;
    nvmlProcessInfo_t procs[MAX_PROCS];
    int growOnQuery;   /* processes added after each count query (infos NULL), to exercise retry loops */
    int nsamples;
    nvmlProcessUtilizationSample_t samples[MAX_SAMPLES];
    int lost;
    long lostCountdown; /* < 0: off; else calls left before the GPU is lost */
    nvmlComputeMode_t computeMode; /* DEFAULT when the machine is loaded; set by nvmlDeviceSetComputeMode */
};

struct fake_event_set {
    int inUse;
    unsigned long long mask[MAX_GPUS];
    int head, len;
    nvmlEventData_t queue[QUEUE_LEN];
};

struct fault {
    char fn[64];
    int code;
    long skip;   /* calls that pass before the fault applies */
    long times;  /* calls that fail; < 0: for ever */
};

struct counter {
    char fn[64];
    long calls;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t eventCond;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static char machine[32];
static char driverVersion[80];
static char nvmlVersion[80];
static int ngpus;
static struct fake_device gpus[MAX_GPUS];
static struct fake_device migs[MAX_MIGS];
static int nmigs;
static int visible[MAX_GPUS];    /* NVML index -> position in gpus[] (a container sees some GPUs) */
static int nvisible;
static int containerView;      /* NO_PERMISSION for MIG parents' memory and process lists */
static int ancestorUnsupported; /* nvmlDeviceGetTopologyCommonAncestor NOT_SUPPORTED (VMs) */
static struct fake_event_set sets[MAX_SETS];
static struct fault faults[MAX_FAULTS];
static int nfaults;
static struct counter counters[MAX_COUNTERS];
static int ncounters;
static int initCount;        /* NVML's own init reference count */
static long initCalls, shutdownCalls;

static unsigned long long GiB = 1ULL << 30;

static void build_gpu(int i, const char *name, unsigned long long totalGiB, unsigned int bus,
                      int ccMajor, int ccMinor, int migSupported, int numa, int nlinks) {
    struct fake_device *d = &gpus[i];
    memset(d, 0, sizeof(*d));
    d->index = i;
    /* deterministic UUIDs: the machine's tag in the first group, the index in the last */
    snprintf(d->uuid, sizeof d->uuid, "GPU-%08x-fa4e-4e00-8000-%012x",
             (unsigned int)(machine[0] * 0x01000193u ^ (unsigned int)bus), (unsigned int)(0xd00000 + i));
    snprintf(d->name, sizeof d->name, "%s", name);
    d->total = totalGiB * GiB;
    d->reserved = 512ULL << 20;
    d->used = 0;
    d->minor = (unsigned int)i;
    d->domain = 0;
    d->bus = bus;
    d->devno = 0;
    d->pciDeviceId = 0x233010de;
    d->pciSubSystemId = 0x16c110de;
    d->ccMajor = ccMajor;
    d->ccMinor = ccMinor;
    d->migSupported = migSupported;
    d->numa = numa;
    d->gpuNuma = numa;
    if (numa >= 0) {
        d->memAffinity[0] = 1UL << numa;
        d->memAffinity[1] = 1UL << numa;
        /* 16 CPUs per NUMA node */
        d->cpuAffinity[0][0] = 0xffffUL << (16 * numa);
        d->cpuAffinity[1][0] = 0xffffUL << (16 * numa);
    }
    d->nlinks = nlinks;
    d->utilGpu = 0;
    d->utilMem = 0;
    d->lostCountdown = -1;
}

/* A MIG instance (GPU instance gi, compute instance ci) of profile `profile` in slot `slot` of gpus[parent]. */
static void add_mig(int parent, int slot, const char *profile, unsigned long long memMiB, unsigned int gi,
                    unsigned int ci) {
    struct fake_device *p = &gpus[parent];
    struct fake_device *m = &migs[nmigs];
    memset(m, 0, sizeof *m);
    m->index = -1;
    m->isMig = 1;
    m->parent = p;
    m->giId = gi;
    m->ciId = ci;
    snprintf(m->uuid, sizeof m->uuid, "MIG-%08x-fa4e-4e00-9000-%012x",
             (unsigned int)(machine[0] * 0x01000193u ^ p->bus), (unsigned int)(0xe00000 + nmigs));
    snprintf(m->name, sizeof m->name, "%s MIG %s", p->name, profile);
    m->total = memMiB << 20;
    m->reserved = 0;
    m->numa = -1;
    m->lostCountdown = -1;
    m->ccMajor = p->ccMajor;
    m->ccMinor = p->ccMinor;
    p->migSlot[slot] = m;
    nmigs++;
}

static int load_machine(const char *name) {
    if (name == NULL || *name == 0) {
        name = "dgx-h100";
    }
    nmigs = 0;
    memset(migs, 0, sizeof migs);
    nvisible = -1; /* every GPU, set below */
    containerView = 0;
    ancestorUnsupported = 0;
    if (strcmp(name, "dgx-h100") == 0) {
        static const unsigned int bus[8] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
        snprintf(machine, sizeof machine, "%s", name);
        ngpus = 8;
        for (int i = 0; i < 8; i++) {
            build_gpu(i, "NVIDIA H100 80GB HBM3", 80, bus[i], 9, 0, 1, i < 4 ? 0 : 1, 18);
            gpus[i].pciDeviceId = 0x233010de;
            for (int l = 0; l < 18; l++) {
                /* every link ends on one of four NVSwitches (buses 0x05..0x08 of domain 1) */
                gpus[i].linkUp[l] = 1;
                gpus[i].remoteDomain[l] = 1;
                gpus[i].remoteBus[l] = 0x05 + (unsigned int)(l % 4);
                gpus[i].remoteDev[l] = 0;
                gpus[i].remoteType[l] = NVML_NVLINK_DEVICE_TYPE_SWITCH;
            }
        }
        snprintf(driverVersion, sizeof driverVersion, "%s", "580.65.06");
        snprintf(nvmlVersion, sizeof nvmlVersion, "%s", "13.580.65.06");
        return 0;
    }
    if (strcmp(name, "t4x4") == 0) {
        static const unsigned int bus[4] = {0x3b, 0x5e, 0x86, 0xaf};
        snprintf(machine, sizeof machine, "%s", name);
        ngpus = 4;
        for (int i = 0; i < 4; i++) {
            build_gpu(i, "Tesla T4", 16, bus[i], 7, 5, 0, i < 2 ? 0 : 1, 0);
            gpus[i].gpuNuma = -1; /* x86: the GPU is no NUMA node of its own */
            gpus[i].pciDeviceId = 0x1eb810de;
        }
        snprintf(driverVersion, sizeof driverVersion, "%s", "535.183.01");
        snprintf(nvmlVersion, sizeof nvmlVersion, "%s", "12.535.183.01");
        return 0;
    }
    if (strcmp(name, "a100-bridged") == 0) {
        static const unsigned int bus[4] = {0x17, 0x31, 0xb1, 0xca};
        snprintf(machine, sizeof machine, "%s", name);
        ngpus = 4;
        for (int i = 0; i < 4; i++) {
            build_gpu(i, "NVIDIA A100 80GB PCIe", 80, bus[i], 8, 0, 1, i < 2 ? 0 : 1, 12);
            gpus[i].gpuNuma = -1;
            gpus[i].pciDeviceId = 0x20b510de;
            int peer = i ^ 1;
            for (int l = 0; l < 12; l++) {
                gpus[i].linkUp[l] = 1;
                gpus[i].remoteDomain[l] = 0;
                gpus[i].remoteBus[l] = bus[peer];
                gpus[i].remoteDev[l] = 0;
            }
        }
        snprintf(driverVersion, sizeof driverVersion, "%s", "570.86.15");
        snprintf(nvmlVersion, sizeof nvmlVersion, "%s", "12.570.86.15");
        return 0;
    }
    if (strcmp(name, "a100-mig") == 0) {
        static const unsigned int bus[2] = {0x07, 0x0f};
        snprintf(machine, sizeof machine, "%s", name);
        ngpus = 2;
        for (int i = 0; i < 2; i++) {
            build_gpu(i, "NVIDIA A100-SXM4-80GB", 80, bus[i], 8, 0, 1, 0, 12);
            gpus[i].gpuNuma = -1;
            gpus[i].pciDeviceId = 0x20b210de;
            gpus[i].migCurrent = 1;
            gpus[i].migPending = 1;
            for (int l = 0; l < 12; l++) {
                gpus[i].linkUp[l] = 1;
                gpus[i].remoteDomain[l] = 1;
                gpus[i].remoteBus[l] = 0xc4 + (unsigned int)(l % 6);
                gpus[i].remoteType[l] = NVML_NVLINK_DEVICE_TYPE_SWITCH;
            }
        }
        add_mig(0, 0, "3g.40gb", 40192, 2, 0);
        add_mig(0, 1, "2g.20gb", 19968, 3, 0);
        add_mig(0, 2, "1g.10gb", 9856, 9, 0);
        add_mig(0, 3, "1g.10gb", 9856, 10, 0);
        add_mig(1, 0, "7g.80gb", 81152, 0, 0);
        containerView = 1;
        snprintf(driverVersion, sizeof driverVersion, "%s", "580.65.06");
        snprintf(nvmlVersion, sizeof nvmlVersion, "%s", "13.580.65.06");
        return 0;
    }
    if (strcmp(name, "x86-numa") == 0) {
        static const unsigned int bus[4] = {0x1b, 0x1c, 0x9b, 0xc3};
        snprintf(machine, sizeof machine, "%s", name);
        ngpus = 4;
        for (int i = 0; i < 4; i++) {
            int socket = i < 2 ? 0 : 1;
            build_gpu(i, "NVIDIA L40S", 48, bus[i], 8, 9, 0, -1, 0);
            gpus[i].pciDeviceId = 0x26b910de;
            gpus[i].memAffinity[0] = 1UL << socket;
            gpus[i].memAffinity[1] = 1UL << socket;
            /* socket 0: CPUs 0-23 and 48-71 (their hyperthreads); socket 1: 24-47 and 72-95 */
            unsigned long w0 = socket == 0 ? 0xffffffUL | (0xffffUL << 48) : 0xffffffUL << 24;
            unsigned long w1 = socket == 0 ? 0xffUL : 0xffffffUL << 8;
            for (int scope = 0; scope < 2; scope++) {
                gpus[i].cpuAffinity[scope][0] = w0;
                gpus[i].cpuAffinity[scope][1] = w1;
            }
        }
        snprintf(driverVersion, sizeof driverVersion, "%s", "580.65.06");
        snprintf(nvmlVersion, sizeof nvmlVersion, "%s", "13.580.65.06");
        return 0;
    }
    if (strcmp(name, "h100-vm") == 0) {
        static const unsigned int bus[4] = {0x05, 0x06, 0x07, 0x08};
        snprintf(machine, sizeof machine, "%s", name);
        ngpus = 4;
        for (int i = 0; i < 4; i++) {
            build_gpu(i, "NVIDIA H100 80GB HBM3", 80, bus[i], 9, 0, 1, -1, 18);
            gpus[i].remoteUnknown = 1;
            for (int l = 0; l < 18; l++) {
                gpus[i].linkUp[l] = 1;
                gpus[i].remoteType[l] = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
            }
        }
        ancestorUnsupported = 1;
        snprintf(driverVersion, sizeof driverVersion, "%s", "580.65.06");
        snprintf(nvmlVersion, sizeof nvmlVersion, "%s", "13.580.65.06");
        return 0;
    }
    return -1;
}

static void all_visible(void) {
    nvisible = ngpus;
    for (int i = 0; i < ngpus; i++) {
        visible[i] = i;
    }
}

/* the NVML index of a GPU, or -1 when this process cannot see it */
static int nvml_index(const struct fake_device *d) {
    for (int i = 0; i < nvisible; i++) {
        if (&gpus[visible[i]] == d) {
            return i;
        }
    }
    return -1;
}

static void reset_locked(void) {
    all_visible();
    memset(sets, 0, sizeof sets);
    memset(faults, 0, sizeof faults);
    nfaults = 0;
    memset(counters, 0, sizeof counters);
    ncounters = 0;
    initCalls = 0;
    shutdownCalls = 0;
}

static void first_use(void) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&eventCond, &attr);
    pthread_condattr_destroy(&attr);
    const char *env = getenv("FAKE_NVML_MACHINE");
    if (load_machine(env) != 0) {
        fprintf(stderr, "fake NVML: unknown FAKE_NVML_MACHINE '%s', using dgx-h100\n", env);
        load_machine("dgx-h100");
    }
    reset_locked();
}

static void lock(void) {
    pthread_once(&once, first_use);
    pthread_mutex_lock(&mu);
}

static void unlock(void) {
    pthread_mutex_unlock(&mu);
}

static void count_call(const char *fn) {
    for (int i = 0; i < ncounters; i++) {
        if (strcmp(counters[i].fn, fn) == 0) {
            counters[i].calls++;
            return;
        }
    }
    if (ncounters < MAX_COUNTERS) {
        snprintf(counters[ncounters].fn, sizeof counters[ncounters].fn, "%s", fn);
        counters[ncounters].calls = 1;
        ncounters++;
    }
}

static int injected_fault(const char *fn) {
    for (int i = 0; i < nfaults; i++) {
        struct fault *f = &faults[i];
        if (strcmp(f->fn, fn) != 0 || f->times == 0) {
            continue;
        }
        if (f->skip > 0) {
            f->skip--;
            return NVML_SUCCESS;
        }
        if (f->times > 0) {
            f->times--;
        }
        return f->code;
    }
    return NVML_SUCCESS;
}

static int valid_device(nvmlDevice_t d) {
    return d != NULL && ((d >= &gpus[0] && d < &gpus[ngpus]) || (d >= &migs[0] && d < &migs[nmigs]));
}

static int is_gpu(nvmlDevice_t d) {
    return d != NULL && d >= &gpus[0] && d < &gpus[ngpus];
}

/* a MIG-enabled parent as an unprivileged process (a container) sees it */
static int parent_hidden(nvmlDevice_t d) {
    return containerView && !d->isMig && d->migCurrent;
}

/*
 * Common entry (mutex held): counts the call, checks init, the device handle (when given), lost
 * GPUs and injected faults. Returns the code the function must return, or SUCCESS to go on.
 */
static int enter(const char *fn, nvmlDevice_t d, int needsDevice) {
    count_call(fn);
    if (initCount == 0) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (needsDevice) {
        if (!valid_device(d)) {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        if (d->lostCountdown == 0) {
            d->lost = 1;
            d->lostCountdown = -1;
        } else if (d->lostCountdown > 0) {
            d->lostCountdown--;
        }
        if (d->lost) {
            return NVML_ERROR_GPU_IS_LOST;
        }
    }
    return injected_fault(fn);
}

#define ENTER(fn, dev, needsDevice)                     \
    lock();                                             \
    int rc_ = enter(fn, dev, needsDevice);              \
    if (rc_ != NVML_SUCCESS) {                          \
        unlock();                                       \
        return rc_;                                     \
    }

#define LEAVE(rc) \
    do {          \
        unlock(); \
        return (rc); \
    } while (0)

static nvmlReturn_t copy_string(const char *s, char *buf, unsigned int len) {
    size_t need = strlen(s) + 1;
    if (buf == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (len < need) {
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(buf, s, need);
    return NVML_SUCCESS;
}

/* ---- NVML entry points --------------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlInit_v2(void) {
    lock();
    count_call("nvmlInit_v2");
    int rc = injected_fault("nvmlInit_v2");
    if (rc == NVML_SUCCESS) {
        initCount++;
        initCalls++;
    }
    LEAVE(rc);
}

EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    lock();
    count_call("nvmlInitWithFlags");
    int rc = injected_fault("nvmlInitWithFlags");
    if (rc == NVML_SUCCESS) {
        initCount++;
        initCalls++;
    }
    LEAVE(rc);
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
    lock();
    count_call("nvmlShutdown");
    if (initCount == 0) {
        LEAVE(NVML_ERROR_UNINITIALIZED);
    }
    int rc = injected_fault("nvmlShutdown");
    if (rc == NVML_SUCCESS) {
        initCount--;
        shutdownCalls++;
    }
    LEAVE(rc);
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    ENTER("nvmlSystemGetDriverVersion", NULL, 0);
    LEAVE(copy_string(driverVersion, version, length));
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    ENTER("nvmlSystemGetNVMLVersion", NULL, 0);
    LEAVE(copy_string(nvmlVersion, version, length));
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    ENTER("nvmlDeviceGetCount_v2", NULL, 0);
    if (count == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    *count = (unsigned int)nvisible;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    ENTER("nvmlDeviceGetHandleByIndex_v2", NULL, 0);
    if (device == NULL || index >= (unsigned int)nvisible) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (gpus[visible[index]].lost) {
        LEAVE(NVML_ERROR_GPU_IS_LOST);
    }
    *device = &gpus[visible[index]];
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    ENTER("nvmlDeviceGetHandleByUUID", NULL, 0);
    if (uuid == NULL || device == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    for (int i = 0; i < ngpus; i++) {
        if (strcmp(gpus[i].uuid, uuid) == 0 && nvml_index(&gpus[i]) >= 0) {
            if (gpus[i].lost) {
                LEAVE(NVML_ERROR_GPU_IS_LOST);
            }
            *device = &gpus[i];
            LEAVE(NVML_SUCCESS);
        }
    }
    for (int i = 0; i < nmigs; i++) {
        if (strcmp(migs[i].uuid, uuid) == 0) {
            *device = &migs[i];
            LEAVE(NVML_SUCCESS);
        }
    }
    LEAVE(NVML_ERROR_NOT_FOUND);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    ENTER("nvmlDeviceGetUUID", device, 1);
    LEAVE(copy_string(device->uuid, uuid, length));
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    ENTER("nvmlDeviceGetName", device, 1);
    LEAVE(copy_string(device->name, name, length));
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
    ENTER("nvmlDeviceGetIndex", device, 1);
    if (index == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->isMig) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    *index = (unsigned int)nvml_index(device);
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor) {
    ENTER("nvmlDeviceGetMinorNumber", device, 1);
    if (minor == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    *minor = device->minor;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    ENTER("nvmlDeviceGetMemoryInfo_v2", device, 1);
    if (memory == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (memory->version != NVML_MEMORY_V2_VERSION) {
        LEAVE(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    }
    if (parent_hidden(device)) {
        LEAVE(NVML_ERROR_NO_PERMISSION);
    }
    unsigned long long used = device->used;
    for (int i = 0; i < device->nprocs; i++) {
        if (device->procs[i].usedGpuMemory != ~0ULL) {
            used += device->procs[i].usedGpuMemory;
        }
    }
    for (int k = 0; k < MAX_MIG_SLOTS; k++) {
        struct fake_device *m = device->migSlot[k];
        for (int i = 0; m != NULL && i < m->nprocs; i++) {
            if (m->procs[i].usedGpuMemory != ~0ULL) {
                used += m->procs[i].usedGpuMemory;
            }
        }
    }
    memory->total = device->total;
    memory->reserved = device->reserved;
    memory->used = used;
    memory->free = device->total - device->reserved - used;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
    ENTER("nvmlDeviceGetUtilizationRates", device, 1);
    if (utilization == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->isMig || device->migCurrent) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED); /* no utilization rates on MIG-enabled GPUs */
    }
    utilization->gpu = device->utilGpu;
    utilization->memory = device->utilMem;
    LEAVE(NVML_SUCCESS);
}

/* The compute (mps == 0) or MPS client (mps == 1) processes of a device: its own, and on a MIG parent
 * also those of its instances. Returns how many were written to out (at most max). */
static unsigned int gather_procs(nvmlDevice_t device, int mps, nvmlProcessInfo_t *out, unsigned int max) {
    unsigned int n = 0;
    int own = mps ? device->nmps : device->nprocs;
    const nvmlProcessInfo_t *list = mps ? device->mps : device->procs;
    for (int i = 0; i < own && n < max; i++) {
        out[n++] = list[i];
    }
    for (int k = 0; k < MAX_MIG_SLOTS && !mps; k++) {
        struct fake_device *m = device->migSlot[k];
        for (int i = 0; m != NULL && i < m->nprocs && n < max; i++) {
            out[n++] = m->procs[i];
        }
    }
    return n;
}

/* The count-then-fill protocol of the process-list calls (mutex held). */
static nvmlReturn_t list_procs(nvmlDevice_t device, int mps, unsigned int *infoCount, nvmlProcessInfo_t *infos) {
    static nvmlProcessInfo_t all[MAX_PROCS];
    if (infoCount == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (parent_hidden(device)) {
        return NVML_ERROR_NO_PERMISSION;
    }
    unsigned int have = gather_procs(device, mps, all, MAX_PROCS);
    if (*infoCount < have || (infos == NULL && have > 0)) {
        *infoCount = have;
        if (infos == NULL && device->growOnQuery > 0 && !mps) {
            for (int k = 0; k < device->growOnQuery && device->nprocs < MAX_PROCS; k++) {
                nvmlProcessInfo_t *p = &device->procs[device->nprocs++];
                memset(p, 0, sizeof *p);
                p->pid = 90000u + (unsigned int)device->nprocs;
                p->usedGpuMemory = 1ULL << 20;
                p->gpuInstanceId = ~0u;
                p->computeInstanceId = ~0u;
            }
        }
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (have > 0) {
        memcpy(infos, all, have * sizeof(nvmlProcessInfo_t));
    }
    *infoCount = have;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                           nvmlProcessInfo_t *infos) {
    ENTER("nvmlDeviceGetComputeRunningProcesses_v3", device, 1);
    LEAVE(list_procs(device, 0, infoCount, infos));
}

EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                              nvmlProcessInfo_t *infos) {
    ENTER("nvmlDeviceGetMPSComputeRunningProcesses_v3", device, 1);
    LEAVE(list_procs(device, 1, infoCount, infos));
}

EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
                                                    unsigned int *processSamplesCount,
                                                    unsigned long long lastSeenTimeStamp) {
    ENTER("nvmlDeviceGetProcessUtilization", device, 1);
    if (processSamplesCount == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->migCurrent || device->isMig) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    unsigned int have = 0;
    for (int i = 0; i < device->nsamples; i++) {
        if (device->samples[i].timeStamp > lastSeenTimeStamp) {
            have++;
        }
    }
    if (have == 0) {
        LEAVE(NVML_ERROR_NOT_FOUND);
    }
    /* real drivers answer with a fixed buffer size rather than the true count */
    unsigned int answer = device->fixedSampleCount ? FIXED_SAMPLE_COUNT : have;
    if (utilization == NULL || *processSamplesCount < answer) {
        *processSamplesCount = answer;
        LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    unsigned int n = 0;
    for (int i = 0; i < device->nsamples; i++) {
        if (device->samples[i].timeStamp > lastSeenTimeStamp) {
            utilization[n++] = device->samples[i];
        }
    }
    *processSamplesCount = n;
    LEAVE(NVML_SUCCESS);
}

static void fill_pci(nvmlPciInfo_t *pci, unsigned int domain, unsigned int bus, unsigned int dev,
                     unsigned int deviceId, unsigned int subsys) {
    memset(pci, 0, sizeof *pci);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = deviceId;
    pci->pciSubSystemId = subsys;
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", domain, bus, dev);
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", domain, bus, dev);
}

#ifndef FAKE_NVML_BROKEN
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    ENTER("nvmlDeviceGetPciInfo_v3", device, 1);
    if (pci == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->isMig) {
        device = device->parent;
    }
    fill_pci(pci, device->domain, device->bus, device->devno, device->pciDeviceId, device->pciSubSystemId);
    LEAVE(NVML_SUCCESS);
}
#endif

static nvmlGpuTopologyLevel_t level_of(const struct fake_device *a, const struct fake_device *b) {
    if (strcmp(machine, "a100-mig") == 0) {
        return NVML_TOPOLOGY_MULTIPLE;
    }
    if (strcmp(machine, "x86-numa") == 0) {
        if (a->index / 2 != b->index / 2) {
            return NVML_TOPOLOGY_SYSTEM;
        }
        return a->index < 2 ? NVML_TOPOLOGY_SINGLE : NVML_TOPOLOGY_NODE;
    }
    if (strcmp(machine, "t4x4") == 0 || strcmp(machine, "a100-bridged") == 0) {
        if (a->index / 2 == b->index / 2) {
            return NVML_TOPOLOGY_HOSTBRIDGE;
        }
        return NVML_TOPOLOGY_SYSTEM;
    }
    /* dgx-h100: same NUMA node across host bridges, else across the SMP interconnect */
    return a->numa == b->numa ? NVML_TOPOLOGY_NODE : NVML_TOPOLOGY_SYSTEM;
}

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                        nvmlGpuTopologyLevel_t *pathInfo) {
    ENTER("nvmlDeviceGetTopologyCommonAncestor", device1, 1);
    if (!valid_device(device2) || pathInfo == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (ancestorUnsupported || device1->isMig || device2->isMig) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    if (device2->lost) {
        LEAVE(NVML_ERROR_GPU_IS_LOST);
    }
    *pathInfo = device1 == device2 ? NVML_TOPOLOGY_INTERNAL : level_of(device1, device2);
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive) {
    ENTER("nvmlDeviceGetNvLinkState", device, 1);
    if (isActive == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->nlinks == 0) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    if (link >= (unsigned int)device->nlinks) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    *isActive = device->linkUp[link] ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci) {
    ENTER("nvmlDeviceGetNvLinkRemotePciInfo_v2", device, 1);
    if (pci == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->nlinks == 0) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    if (link >= (unsigned int)device->nlinks) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->remoteUnknown) {
        LEAVE(NVML_ERROR_UNKNOWN); /* NVML in a VM cannot identify the remote side */
    }
    unsigned int id = device->remoteType[link] == NVML_NVLINK_DEVICE_TYPE_GPU ? 0x20b510de : 0x22a310de;
    fill_pci(pci, device->remoteDomain[link], device->remoteBus[link], device->remoteDev[link], id, 0);
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                        nvmlIntNvLinkDeviceType_t *pNvLinkDeviceType) {
    ENTER("nvmlDeviceGetNvLinkRemoteDeviceType", device, 1);
    if (pNvLinkDeviceType == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->nlinks == 0) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    if (link >= (unsigned int)device->nlinks) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->remoteUnknown) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    *pNvLinkDeviceType = device->remoteType[link];
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t device, unsigned int nodeSetSize, unsigned long *nodeSet,
                                                nvmlAffinityScope_t scope) {
    ENTER("nvmlDeviceGetMemoryAffinity", device, 1);
    if (nodeSetSize == 0 || nodeSet == NULL || scope > NVML_AFFINITY_SCOPE_SOCKET) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->isMig) {
        device = device->parent;
    }
    if (device->memAffinity[scope] == 0) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    memset(nodeSet, 0, nodeSetSize * sizeof(unsigned long));
    nodeSet[0] = device->memAffinity[scope];
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t device, unsigned int cpuSetSize,
                                                        unsigned long *cpuSet, nvmlAffinityScope_t scope) {
    ENTER("nvmlDeviceGetCpuAffinityWithinScope", device, 1);
    if (cpuSetSize == 0 || cpuSet == NULL || scope > NVML_AFFINITY_SCOPE_SOCKET) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->isMig) {
        device = device->parent;
    }
    if (device->cpuAffinity[scope][0] == 0 && device->cpuAffinity[scope][1] == 0) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    memset(cpuSet, 0, cpuSetSize * sizeof(unsigned long));
    for (unsigned int w = 0; w < 2 && w < cpuSetSize; w++) {
        cpuSet[w] = device->cpuAffinity[scope][w];
    }
    LEAVE(NVML_SUCCESS);
}

/* ---- MIG ----------------------------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
    ENTER("nvmlDeviceGetMaxMigDeviceCount", device, 1);
    if (count == NULL || device->isMig) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    *count = device->migSupported && device->migCurrent ? MAX_MIG_SLOTS : 0; /* 0 when MIG is off */
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                        nvmlDevice_t *migDevice) {
    ENTER("nvmlDeviceGetMigDeviceHandleByIndex", device, 1);
    if (migDevice == NULL || device->isMig || index >= MAX_MIG_SLOTS) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (!device->migSupported) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    if (!device->migCurrent || device->migSlot[index] == NULL) {
        LEAVE(NVML_ERROR_NOT_FOUND);
    }
    *migDevice = device->migSlot[index];
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice) {
    ENTER("nvmlDeviceIsMigDeviceHandle", device, 1);
    if (isMigDevice == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    *isMigDevice = device->isMig ? 1u : 0u;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
    ENTER("nvmlDeviceGetGpuInstanceId", device, 1);
    if (id == NULL || !device->isMig) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    *id = device->giId;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
    ENTER("nvmlDeviceGetComputeInstanceId", device, 1);
    if (id == NULL || !device->isMig) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    *id = device->ciId;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device) {
    ENTER("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migDevice, 1);
    if (device == NULL || !migDevice->isMig) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    *device = migDevice->parent;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode) {
    ENTER("nvmlDeviceGetMigMode", device, 1);
    if (currentMode == NULL || pendingMode == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (!device->migSupported) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    *currentMode = (unsigned int)device->migCurrent;
    *pendingMode = (unsigned int)device->migPending;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    ENTER("nvmlDeviceGetCudaComputeCapability", device, 1);
    if (major == NULL || minor == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    *major = device->ccMajor;
    *minor = device->ccMinor;
    LEAVE(NVML_SUCCESS);
}

/* The compute mode is kept per GPU (every GPU starts in DEFAULT when a machine is loaded). A MIG device
 * handle answers NOT_SUPPORTED: the fake keeps the mode on whole GPUs only. Faults: fake_nvml_set_fault on
 * either name (NO_PERMISSION is what an unprivileged caller of the setter gets from real drivers). */
EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode) {
    ENTER("nvmlDeviceGetComputeMode", device, 1);
    if (mode == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->isMig) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    *mode = device->computeMode;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode) {
    ENTER("nvmlDeviceSetComputeMode", device, 1);
    if ((int)mode < (int)NVML_COMPUTEMODE_DEFAULT || (int)mode > (int)NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->isMig) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    device->computeMode = mode;
    LEAVE(NVML_SUCCESS);
}

#ifndef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node) {
    ENTER("nvmlDeviceGetNumaNodeId", device, 1);
    if (node == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->gpuNuma < 0) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED); /* the GPU is not a NUMA node of its own (x86) */
    }
    *node = (unsigned int)device->gpuNuma;
    LEAVE(NVML_SUCCESS);
}
#endif

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    ENTER("nvmlEventSetCreate", NULL, 0);
    if (set == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    for (int i = 0; i < MAX_SETS; i++) {
        if (!sets[i].inUse) {
            memset(&sets[i], 0, sizeof sets[i]);
            sets[i].inUse = 1;
            *set = &sets[i];
            LEAVE(NVML_SUCCESS);
        }
    }
    LEAVE(NVML_ERROR_UNKNOWN);
}

static int valid_set(nvmlEventSet_t s) {
    return s != NULL && s >= &sets[0] && s < &sets[MAX_SETS] && s->inUse;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    ENTER("nvmlEventSetFree", NULL, 0);
    if (!valid_set(set)) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    set->inUse = 0;
    pthread_cond_broadcast(&eventCond);
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set) {
    ENTER("nvmlDeviceRegisterEvents", device, 1);
    if (!valid_set(set)) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (!is_gpu(device)) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    if ((eventTypes & ~EVENT_XID) != 0) {
        LEAVE(NVML_ERROR_NOT_SUPPORTED);
    }
    set->mask[device->index] |= eventTypes;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    ENTER("nvmlEventSetWait_v2", NULL, 0);
    if (!valid_set(set) || data == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeoutms / 1000;
    deadline.tv_nsec += (long)(timeoutms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    while (set->inUse && set->len == 0) {
        int w = pthread_cond_timedwait(&eventCond, &mu, &deadline);
        if (w == ETIMEDOUT) {
            break;
        }
    }
    if (!set->inUse) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (set->len == 0) {
        LEAVE(NVML_ERROR_TIMEOUT);
    }
    *data = set->queue[set->head];
    set->head = (set->head + 1) % QUEUE_LEN;
    set->len--;
    LEAVE(NVML_SUCCESS);
}

/* ---- control functions for tests ----------------------------------------------------------------- */

/** Loads a machine preset and clears faults, processes, samples, event sets and counters.
 *  NVML's init count is kept. Returns 0, or -1 for an unknown name. */
EXPORT int fake_nvml_select_machine(const char *name) {
    lock();
    char keep[32];
    snprintf(keep, sizeof keep, "%s", machine);
    int rc = load_machine(name);
    if (rc != 0) {
        load_machine(keep);
    }
    reset_locked();
    pthread_cond_broadcast(&eventCond);
    unlock();
    return rc;
}

/** The loaded machine's name, copied into buf. */
EXPORT void fake_nvml_machine(char *buf, int len) {
    lock();
    snprintf(buf, (size_t)len, "%s", machine);
    unlock();
}

/** NVML's init reference count right now. */
EXPORT int fake_nvml_init_count(void) {
    lock();
    int n = initCount;
    unlock();
    return n;
}

/** Successful nvmlInit* calls and nvmlShutdown calls since the last reset. */
EXPORT long fake_nvml_init_calls(void) {
    lock();
    long n = initCalls;
    unlock();
    return n;
}

EXPORT long fake_nvml_shutdown_calls(void) {
    lock();
    long n = shutdownCalls;
    unlock();
    return n;
}

/** Calls of one NVML function since the last reset. */
EXPORT long fake_nvml_calls(const char *fn) {
    lock();
    long n = 0;
    for (int i = 0; i < ncounters; i++) {
        if (strcmp(counters[i].fn, fn) == 0) {
            n = counters[i].calls;
        }
    }
    unlock();
    return n;
}

/** Makes function fn return code: the next `skip` calls pass, then `times` calls fail (< 0: all).
 *  Returns 0, or -1 when the fault table is full. */
EXPORT int fake_nvml_set_fault(const char *fn, int code, long skip, long times) {
    lock();
    if (nfaults >= MAX_FAULTS) {
        unlock();
        return -1;
    }
    struct fault *f = &faults[nfaults++];
    snprintf(f->fn, sizeof f->fn, "%s", fn);
    f->code = code;
    f->skip = skip;
    f->times = times;
    unlock();
    return 0;
}

EXPORT void fake_nvml_clear_faults(void) {
    lock();
    memset(faults, 0, sizeof faults);
    nfaults = 0;
    unlock();
}

/** GPU gpu is lost after `calls` more calls that touch it (0: at its next call). */
EXPORT int fake_nvml_gpu_lost_after(int gpu, long calls) {
    lock();
    if (gpu < 0 || gpu >= ngpus) {
        unlock();
        return -1;
    }
    gpus[gpu].lostCountdown = calls;
    unlock();
    return 0;
}

/** Queues an Xid critical-error event for GPU gpu in every event set registered for it and wakes
 *  waiters. Returns how many sets got it. */
EXPORT int fake_nvml_inject_xid(int gpu, unsigned long long xid) {
    lock();
    if (gpu < 0 || gpu >= ngpus) {
        unlock();
        return -1;
    }
    int n = 0;
    for (int i = 0; i < MAX_SETS; i++) {
        struct fake_event_set *s = &sets[i];
        if (s->inUse && (s->mask[gpu] & EVENT_XID) && s->len < QUEUE_LEN) {
            nvmlEventData_t *e = &s->queue[(s->head + s->len) % QUEUE_LEN];
            memset(e, 0, sizeof *e);
            e->device = &gpus[gpu];
            e->eventType = EVENT_XID;
            e->eventData = xid;
            e->gpuInstanceId = ~0u;
            e->computeInstanceId = ~0u;
            s->len++;
            n++;
        }
    }
    pthread_cond_broadcast(&eventCond);
    unlock();
    return n;
}

/** Adds a running compute process (usedBytes ~0: not available). */
EXPORT int fake_nvml_add_process(int gpu, unsigned int pid, unsigned long long usedBytes) {
    lock();
    if (gpu < 0 || gpu >= ngpus || gpus[gpu].nprocs >= MAX_PROCS) {
        unlock();
        return -1;
    }
    nvmlProcessInfo_t *p = &gpus[gpu].procs[gpus[gpu].nprocs++];
    p->pid = pid;
    p->usedGpuMemory = usedBytes;
    p->gpuInstanceId = ~0u;
    p->computeInstanceId = ~0u;
    unlock();
    return 0;
}

/** Each count query of running processes on gpu adds `extra` processes afterwards (a racing launch). */
EXPORT int fake_nvml_grow_processes_on_query(int gpu, int extra) {
    lock();
    if (gpu < 0 || gpu >= ngpus) {
        unlock();
        return -1;
    }
    gpus[gpu].growOnQuery = extra;
    unlock();
    return 0;
}

/** Adds a process utilization sample. */
EXPORT int fake_nvml_add_sample(int gpu, unsigned int pid, unsigned long long timeStampMicros,
                                unsigned int smUtil, unsigned int memUtil) {
    lock();
    if (gpu < 0 || gpu >= ngpus || gpus[gpu].nsamples >= MAX_SAMPLES) {
        unlock();
        return -1;
    }
    nvmlProcessUtilizationSample_t *s = &gpus[gpu].samples[gpus[gpu].nsamples++];
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->timeStamp = timeStampMicros;
    s->smUtil = smUtil;
    s->memUtil = memUtil;
    unlock();
    return 0;
}

EXPORT int fake_nvml_set_utilization(int gpu, unsigned int gpuPercent, unsigned int memPercent) {
    lock();
    if (gpu < 0 || gpu >= ngpus) {
        unlock();
        return -1;
    }
    gpus[gpu].utilGpu = gpuPercent;
    gpus[gpu].utilMem = memPercent;
    unlock();
    return 0;
}

/** Renames a GPU (long names exercise the INSUFFICIENT_SIZE retry). */
EXPORT int fake_nvml_set_name(int gpu, const char *name) {
    lock();
    if (gpu < 0 || gpu >= ngpus) {
        unlock();
        return -1;
    }
    snprintf(gpus[gpu].name, sizeof gpus[gpu].name, "%s", name);
    unlock();
    return 0;
}

/** Takes an NVLink up (1) or down (0). */
EXPORT int fake_nvml_set_link(int gpu, int link, int up) {
    lock();
    if (gpu < 0 || gpu >= ngpus || link < 0 || link >= gpus[gpu].nlinks) {
        unlock();
        return -1;
    }
    gpus[gpu].linkUp[link] = up;
    unlock();
    return 0;
}

/** GPU gpu's compute mode as the fake holds it (nvmlComputeMode_t), without counting a call; -1 for a bad index. */
EXPORT int fake_nvml_compute_mode(int gpu) {
    lock();
    int mode = gpu < 0 || gpu >= ngpus ? -1 : (int)gpus[gpu].computeMode;
    unlock();
    return mode;
}

/** Sets GPU gpu's compute mode behind NVML's back (as nvidia-smi -c would); 0, or -1 for a bad index or mode. */
EXPORT int fake_nvml_set_compute_mode(int gpu, int mode) {
    lock();
    if (gpu < 0 || gpu >= ngpus || mode < 0 || mode > 3) {
        unlock();
        return -1;
    }
    gpus[gpu].computeMode = (nvmlComputeMode_t)mode;
    unlock();
    return 0;
}

EXPORT int fake_nvml_set_mig(int gpu, int current, int pending) {
    lock();
    if (gpu < 0 || gpu >= ngpus || !gpus[gpu].migSupported) {
        unlock();
        return -1;
    }
    gpus[gpu].migCurrent = current;
    gpus[gpu].migPending = pending;
    unlock();
    return 0;
}

/** Adds a process to MIG instance `slot` of gpu, with that instance's GPU and compute instance ids. */
EXPORT int fake_nvml_add_mig_process(int gpu, int slot, unsigned int pid, unsigned long long usedBytes) {
    lock();
    if (gpu < 0 || gpu >= ngpus || slot < 0 || slot >= MAX_MIG_SLOTS || gpus[gpu].migSlot[slot] == NULL
        || gpus[gpu].migSlot[slot]->nprocs >= MAX_PROCS) {
        unlock();
        return -1;
    }
    struct fake_device *m = gpus[gpu].migSlot[slot];
    nvmlProcessInfo_t *p = &m->procs[m->nprocs++];
    p->pid = pid;
    p->usedGpuMemory = usedBytes;
    p->gpuInstanceId = m->giId;
    p->computeInstanceId = m->ciId;
    unlock();
    return 0;
}

/** Adds an MPS client process (listed by nvmlDeviceGetMPSComputeRunningProcesses_v3). */
EXPORT int fake_nvml_add_mps_process(int gpu, unsigned int pid, unsigned long long usedBytes) {
    lock();
    if (gpu < 0 || gpu >= ngpus || gpus[gpu].nmps >= MAX_MPS) {
        unlock();
        return -1;
    }
    nvmlProcessInfo_t *p = &gpus[gpu].mps[gpus[gpu].nmps++];
    p->pid = pid;
    p->usedGpuMemory = usedBytes;
    p->gpuInstanceId = ~0u;
    p->computeInstanceId = ~0u;
    unlock();
    return 0;
}

/** 1: the process-utilization count query of gpu answers a fixed 100, as real drivers do. */
EXPORT int fake_nvml_set_fixed_sample_count(int gpu, int on) {
    lock();
    if (gpu < 0 || gpu >= ngpus) {
        unlock();
        return -1;
    }
    gpus[gpu].fixedSampleCount = on;
    unlock();
    return 0;
}

/** 1: the caller is an unprivileged process (a container): NO_PERMISSION for MIG parents' memory and
 *  process lists. */
EXPORT void fake_nvml_set_container_view(int on) {
    lock();
    containerView = on;
    unlock();
}

/** Sets the remote device type NVML reports for one link (nvmlIntNvLinkDeviceType_t). */
EXPORT int fake_nvml_set_link_remote_type(int gpu, int link, int type) {
    lock();
    if (gpu < 0 || gpu >= ngpus || link < 0 || link >= gpus[gpu].nlinks) {
        unlock();
        return -1;
    }
    gpus[gpu].remoteType[link] = (nvmlIntNvLinkDeviceType_t)type;
    unlock();
    return 0;
}

/** Makes one link's remote side the PCI device bus:00.0 of domain 0 (for example another GPU). */
EXPORT int fake_nvml_set_link_remote(int gpu, int link, unsigned int bus) {
    lock();
    if (gpu < 0 || gpu >= ngpus || link < 0 || link >= gpus[gpu].nlinks) {
        unlock();
        return -1;
    }
    gpus[gpu].remoteDomain[link] = 0;
    gpus[gpu].remoteBus[link] = bus;
    gpus[gpu].remoteDev[link] = 0;
    unlock();
    return 0;
}

/** Which GPUs this process sees (bit i: the machine's GPU i), as a container given some of them;
 *  0: all. They get NVML indices 0, 1, ... in order. Returns 0, or -1 for a bit past the last GPU. */
EXPORT int fake_nvml_set_visible(unsigned int mask) {
    lock();
    if (ngpus < 32 && (mask >> ngpus) != 0) {
        unlock();
        return -1;
    }
    if (mask == 0) {
        all_visible();
    } else {
        nvisible = 0;
        for (int i = 0; i < ngpus; i++) {
            if (mask & (1u << i)) {
                visible[nvisible++] = i;
            }
        }
    }
    unlock();
    return 0;
}
