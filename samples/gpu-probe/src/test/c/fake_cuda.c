/*
 * A fake CUDA driver library (libcuda.so.1) for gpu-probe's tests: the entry points the probe binds, with
 * the C signatures of cuda.h, over a pretend device. It checks what a real driver would reject (unknown
 * device, PTX without the busy entry, kernel arguments that are not a live allocation and a positive
 * iteration count, events of another kind) and keeps a virtual GPU clock: each launch advances it by
 * blocks * threads * iterations / FAKE_CUDA_RATE (iterations per millisecond, default 1e9), so the probe's
 * throughput comes out as FAKE_CUDA_RATE * 1000 per second. It enforces nothing beyond its capacity,
 * FAKE_CUDA_MEMORY_MIB (default 1024). With FAKE_CUDA_RECORD set, cuInit appends the process's CUDA_* and
 * LD_PRELOAD environment to that file as one line. Not a model of any GPU.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

#define OK 0
#define ERR_INVALID_VALUE 1
#define ERR_OUT_OF_MEMORY 2
#define ERR_NOT_INITIALIZED 3
#define ERR_INVALID_DEVICE 101
#define ERR_INVALID_PTX 218
#define ERR_INVALID_HANDLE 400
#define ERR_NOT_FOUND 500

#define MAX_ALLOCS 65536
static int initialized;
static int ctx_token, module_token, function_token;
static unsigned long long capacity, used;
static CUdeviceptr next_ptr = 0x700000000000ULL;
static struct { CUdeviceptr p; unsigned long long n; } allocs[MAX_ALLOCS];
static double gpu_ms;
static double rate = 1e9;

typedef struct { int magic; double at; int recorded; } event_t;
#define EVENT_MAGIC 0x45564e54

static void record_env(void) {
    const char *file = getenv("FAKE_CUDA_RECORD");
    if (file == NULL) return;
    FILE *f = fopen(file, "a");
    if (f == NULL) return;
    const char *names[] = {"CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                           "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT_0",
                           "CUDA_DEVICE_MEMORY_SHARED_CACHE", "LD_PRELOAD", NULL};
    for (int i = 0; names[i] != NULL; i++) {
        const char *v = getenv(names[i]);
        fprintf(f, "%s%s=%s", i ? " " : "", names[i], v ? v : "");
    }
    fprintf(f, "\n");
    fclose(f);
}

CUresult cuInit(unsigned int flags) {
    if (flags != 0) return ERR_INVALID_VALUE;
    const char *m = getenv("FAKE_CUDA_MEMORY_MIB");
    capacity = (m ? strtoull(m, NULL, 10) : 1024ULL) << 20;
    const char *r = getenv("FAKE_CUDA_RATE");
    if (r) rate = strtod(r, NULL);
    initialized = 1;
    record_env();
    return OK;
}

CUresult cuDriverGetVersion(int *v) { if (!v) return ERR_INVALID_VALUE; *v = 12040; return OK; }
CUresult cuDeviceGetCount(int *n) { if (!initialized) return ERR_NOT_INITIALIZED; *n = 1; return OK; }

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (!initialized) return ERR_NOT_INITIALIZED;
    if (ordinal != 0) return ERR_INVALID_DEVICE;
    *d = 0;
    return OK;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    if (d != 0) return ERR_INVALID_DEVICE;
    snprintf(name, (size_t) len, "Fake GPU");
    return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attribute, CUdevice d) {
    if (d != 0) return ERR_INVALID_DEVICE;
    switch (attribute) {
        case 16: *v = 4; return OK;   /* multiprocessors */
        case 75: *v = 9; return OK;   /* compute capability major */
        case 76: *v = 0; return OK;   /* minor */
        default: return ERR_INVALID_VALUE;
    }
}

CUresult cuCtxCreate_v2(void **ctx, unsigned int flags, CUdevice d) {
    if (!initialized) return ERR_NOT_INITIALIZED;
    if (d != 0 || flags != 0) return ERR_INVALID_VALUE;
    *ctx = &ctx_token;
    return OK;
}

CUresult cuCtxDestroy_v2(void *ctx) { return ctx == &ctx_token ? OK : ERR_INVALID_HANDLE; }
CUresult cuCtxSynchronize(void) { return OK; }

CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
    *free_ = (size_t) (capacity - used);
    *total = (size_t) capacity;
    return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    if (n == 0) return ERR_INVALID_VALUE;
    if (used + n > capacity) return ERR_OUT_OF_MEMORY;
    for (int i = 0; i < MAX_ALLOCS; i++) {
        if (allocs[i].p == 0) {
            allocs[i].p = next_ptr;
            allocs[i].n = n;
            *p = next_ptr;
            next_ptr += (n + 0xfff) & ~0xfffULL;
            used += n;
            return OK;
        }
    }
    return ERR_OUT_OF_MEMORY;
}

static int live(CUdeviceptr p, unsigned long long bytes) {
    for (int i = 0; i < MAX_ALLOCS; i++) {
        if (allocs[i].p != 0 && p >= allocs[i].p && p + bytes <= allocs[i].p + allocs[i].n) return 1;
    }
    return 0;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    for (int i = 0; i < MAX_ALLOCS; i++) {
        if (allocs[i].p == p && p != 0) {
            used -= allocs[i].n;
            allocs[i].p = 0;
            return OK;
        }
    }
    return ERR_INVALID_VALUE;
}

CUresult cuModuleLoadData(void **module, const void *image) {
    const char *ptx = (const char *) image;
    if (!ptx || !strstr(ptx, ".version ") || !strstr(ptx, ".target sm_") || !strstr(ptx, ".visible .entry busy(")) {
        return ERR_INVALID_PTX;
    }
    *module = &module_token;
    return OK;
}

CUresult cuModuleGetFunction(void **f, void *module, const char *name) {
    if (module != &module_token) return ERR_INVALID_HANDLE;
    if (strcmp(name, "busy") != 0) return ERR_NOT_FOUND;
    *f = &function_token;
    return OK;
}

CUresult cuModuleUnload(void *module) { return module == &module_token ? OK : ERR_INVALID_HANDLE; }

CUresult cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
                        unsigned int bz, unsigned int shared, void *stream, void **params, void **extra) {
    if (f != &function_token || params == NULL || extra != NULL || stream != NULL) return ERR_INVALID_VALUE;
    if (gy != 1 || gz != 1 || by != 1 || bz != 1 || shared != 0 || gx == 0 || bx == 0 || bx > 1024) return ERR_INVALID_VALUE;
    CUdeviceptr out = *(CUdeviceptr *) params[0];
    unsigned int iterations = *(unsigned int *) params[1];
    if (iterations == 0) return ERR_INVALID_VALUE;
    if (!live(out, 4ULL * gx * bx)) return ERR_INVALID_VALUE; /* the output array must hold one float per thread */
    gpu_ms += (double) gx * bx * iterations / rate;
    return OK;
}

CUresult cuEventCreate(void **e, unsigned int flags) {
    if (flags != 0) return ERR_INVALID_VALUE;
    event_t *ev = calloc(1, sizeof(event_t));
    ev->magic = EVENT_MAGIC;
    *e = ev;
    return OK;
}

CUresult cuEventRecord(void *e, void *stream) {
    event_t *ev = e;
    if (!ev || ev->magic != EVENT_MAGIC || stream != NULL) return ERR_INVALID_HANDLE;
    ev->at = gpu_ms;
    ev->recorded = 1;
    return OK;
}

CUresult cuEventSynchronize(void *e) {
    event_t *ev = e;
    return ev && ev->magic == EVENT_MAGIC ? OK : ERR_INVALID_HANDLE;
}

CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
    event_t *a = start, *b = end;
    if (!a || !b || a->magic != EVENT_MAGIC || b->magic != EVENT_MAGIC || !a->recorded || !b->recorded) return ERR_INVALID_HANDLE;
    *ms = (float) (b->at - a->at);
    return OK;
}

CUresult cuEventDestroy_v2(void *e) {
    event_t *ev = e;
    if (!ev || ev->magic != EVENT_MAGIC) return ERR_INVALID_HANDLE;
    ev->magic = 0;
    free(ev);
    return OK;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
    switch (error) {
        case OK: *name = "CUDA_SUCCESS"; return OK;
        case ERR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return OK;
        case ERR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return OK;
        case ERR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; return OK;
        case ERR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; return OK;
        case ERR_INVALID_PTX: *name = "CUDA_ERROR_INVALID_PTX"; return OK;
        case ERR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; return OK;
        case ERR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; return OK;
        default: *name = NULL; return ERR_INVALID_VALUE;
    }
}
