/*
 * A fake libnvidia-ml.so.1 for qgpu's tests: the NVML entry points qgpu binds, with the struct layouts
 * of NVML 13.x on x86_64 (see DESIGN.md, "NVML facts"), over configurable fake machines, plus control
 * functions (prefix fake_nvml_) that tests call through JNA on the same loaded library.
 *
 * Written for qgpu from the published API description; no NVIDIA code.
 *
 * Machines (fake_nvml_select_machine or env FAKE_NVML_MACHINE, default dgx-h100):
 *   dgx-h100      8 x H100 80 GiB, 18 NVLinks each, all to NVSwitches; NUMA 0: GPU0-3, NUMA 1: GPU4-7
 *   t4x4          4 x Tesla T4 16 GiB, PCIe only; GPU0-1 and GPU2-3 behind one host bridge each,
 *                 one pair per NUMA node
 *   a100-bridged  4 x A100 80 GiB PCIe, NVLink bridges (12 links) between GPU0-1 and GPU2-3
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

/* ---- NVML types and constants (layouts per DESIGN.md) ---------------------------------------- */

typedef int nvmlReturn_t;
typedef struct fake_device *nvmlDevice_t;
typedef struct fake_event_set *nvmlEventSet_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999
};

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
#define MAX_LINKS 36
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
    int numa;
    int nlinks;        /* NVLink count; 0: NVLink not supported (NOT_SUPPORTED) */
    int linkUp[MAX_LINKS];
    unsigned int remoteDomain[MAX_LINKS], remoteBus[MAX_LINKS], remoteDev[MAX_LINKS];
    unsigned int utilGpu, utilMem;
    int nprocs;
    nvmlProcessInfo_t procs[MAX_PROCS];
    int growOnQuery;   /* processes added after each count query (infos NULL), to exercise retry loops */
    int nsamples;
    nvmlProcessUtilizationSample_t samples[MAX_SAMPLES];
    int lost;
    long lostCountdown; /* < 0: off; else calls left before the GPU is lost */
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
    d->nlinks = nlinks;
    d->utilGpu = 0;
    d->utilMem = 0;
    d->lostCountdown = -1;
}

static int load_machine(const char *name) {
    if (name == NULL || *name == 0) {
        name = "dgx-h100";
    }
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
    return -1;
}

static void reset_locked(void) {
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
    return d != NULL && d >= &gpus[0] && d < &gpus[ngpus];
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
    *count = (unsigned int)ngpus;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    ENTER("nvmlDeviceGetHandleByIndex_v2", NULL, 0);
    if (device == NULL || index >= (unsigned int)ngpus) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (gpus[index].lost) {
        LEAVE(NVML_ERROR_GPU_IS_LOST);
    }
    *device = &gpus[index];
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    ENTER("nvmlDeviceGetHandleByUUID", NULL, 0);
    if (uuid == NULL || device == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    for (int i = 0; i < ngpus; i++) {
        if (strcmp(gpus[i].uuid, uuid) == 0) {
            if (gpus[i].lost) {
                LEAVE(NVML_ERROR_GPU_IS_LOST);
            }
            *device = &gpus[i];
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
    *index = (unsigned int)device->index;
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
    unsigned long long used = device->used;
    for (int i = 0; i < device->nprocs; i++) {
        if (device->procs[i].usedGpuMemory != ~0ULL) {
            used += device->procs[i].usedGpuMemory;
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
    utilization->gpu = device->utilGpu;
    utilization->memory = device->utilMem;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                           nvmlProcessInfo_t *infos) {
    ENTER("nvmlDeviceGetComputeRunningProcesses_v3", device, 1);
    if (infoCount == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    unsigned int have = (unsigned int)device->nprocs;
    if (*infoCount < have || (infos == NULL && have > 0)) {
        *infoCount = have;
        if (infos == NULL && device->growOnQuery > 0) {
            for (int k = 0; k < device->growOnQuery && device->nprocs < MAX_PROCS; k++) {
                nvmlProcessInfo_t *p = &device->procs[device->nprocs++];
                memset(p, 0, sizeof *p);
                p->pid = 90000u + (unsigned int)device->nprocs;
                p->usedGpuMemory = 1ULL << 20;
                p->gpuInstanceId = ~0u;
                p->computeInstanceId = ~0u;
            }
        }
        LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    if (have > 0) {
        memcpy(infos, device->procs, have * sizeof(nvmlProcessInfo_t));
    }
    *infoCount = have;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
                                                    unsigned int *processSamplesCount,
                                                    unsigned long long lastSeenTimeStamp) {
    ENTER("nvmlDeviceGetProcessUtilization", device, 1);
    if (processSamplesCount == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device->migCurrent) {
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
    if (utilization == NULL || *processSamplesCount < have) {
        *processSamplesCount = have;
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
    fill_pci(pci, device->domain, device->bus, device->devno, device->pciDeviceId, device->pciSubSystemId);
    LEAVE(NVML_SUCCESS);
}
#endif

static int level_of(const struct fake_device *a, const struct fake_device *b) {
    if (strcmp(machine, "t4x4") == 0 || strcmp(machine, "a100-bridged") == 0) {
        if (a->index / 2 == b->index / 2) {
            return 30; /* HOSTBRIDGE */
        }
        return 50;     /* SYSTEM */
    }
    /* dgx-h100: same NUMA node across host bridges, else across the SMP interconnect */
    return a->numa == b->numa ? 40 : 50;
}

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2, int *pathInfo) {
    ENTER("nvmlDeviceGetTopologyCommonAncestor", device1, 1);
    if (!valid_device(device2) || pathInfo == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (device2->lost) {
        LEAVE(NVML_ERROR_GPU_IS_LOST);
    }
    *pathInfo = device1 == device2 ? 0 : level_of(device1, device2);
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive) {
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
    *isActive = device->linkUp[link] ? 1 : 0;
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
    fill_pci(pci, device->remoteDomain[link], device->remoteBus[link], device->remoteDev[link], 0x22a310de, 0);
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

#ifndef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node) {
    ENTER("nvmlDeviceGetNumaNodeId", device, 1);
    if (node == NULL) {
        LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    }
    *node = (unsigned int)device->numa;
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
