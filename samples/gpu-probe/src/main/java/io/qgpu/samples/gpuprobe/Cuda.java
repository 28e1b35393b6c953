package io.qgpu.samples.gpuprobe;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.FloatByReference;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The CUDA driver through {@link CudaNative}, one context on one device: every call's result is checked
 * and a failure becomes a {@link CudaException} naming the call and the result.
 *
 * <pre>{@code
 * try (Cuda cuda = Cuda.load("libcuda.so.1", 0)) {
 *     long p = cuda.alloc(1L << 20);
 *     cuda.free(p);
 * }
 * }</pre>
 *
 * <p>Thread safety: not thread-safe (the context is current on the thread that created it).
 */
public final class Cuda implements DeviceMemory, AutoCloseable {
    private final CudaNative api;
    private final int device;
    private final Pointer context;

    private Cuda(CudaNative api, int device, Pointer context) {
        this.api = api;
        this.device = device;
        this.context = context;
    }

    /**
     * Loads the driver library, initializes it and creates a context on the device.
     *
     * @throws NoDriverException when the library cannot be loaded or lacks a symbol
     * @throws CudaException     when {@code cuInit}, {@code cuDeviceGet} or {@code cuCtxCreate_v2} fails
     */
    public static Cuda load(String library, int ordinal) throws NoDriverException, CudaException {
        CudaNative api;
        if (library.contains("/")) {
            library = java.nio.file.Path.of(library).toAbsolutePath().toString(); // the loader takes a path as given
        }
        try {
            NativeLibrary handle = NativeLibrary.getInstance(library);
            for (String symbol : CudaNative.SYMBOLS) {
                handle.getFunction(symbol);
            }
            api = Native.load(library, CudaNative.class);
        } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
            throw new NoDriverException(library + ": " + firstLine(e.getMessage()), e);
        }
        check(api, "cuInit", api.cuInit(0));
        IntByReference dev = new IntByReference();
        check(api, "cuDeviceGet", api.cuDeviceGet(dev, ordinal));
        PointerByReference ctx = new PointerByReference();
        check(api, "cuCtxCreate_v2", api.cuCtxCreate_v2(ctx, 0, dev.getValue()));
        return new Cuda(api, dev.getValue(), ctx.getValue());
    }

    /** The driver's CUDA version, e.g. 12040 for 12.4. */
    public int driverVersion() throws CudaException {
        IntByReference v = new IntByReference();
        check("cuDriverGetVersion", api.cuDriverGetVersion(v));
        return v.getValue();
    }

    /** The device's name, e.g. {@code NVIDIA H100 80GB HBM3}. */
    public String deviceName() throws CudaException {
        byte[] name = new byte[256];
        check("cuDeviceGetName", api.cuDeviceGetName(name, name.length, device));
        int n = 0;
        while (n < name.length && name[n] != 0) {
            n++;
        }
        return new String(name, 0, n, StandardCharsets.UTF_8);
    }

    /** A {@code CU_DEVICE_ATTRIBUTE_*} of the device. */
    public int attribute(int attribute) throws CudaException {
        IntByReference v = new IntByReference();
        check("cuDeviceGetAttribute", api.cuDeviceGetAttribute(v, attribute, device));
        return v.getValue();
    }

    /** {@code {free, total}} bytes as the context sees them ({@code cuMemGetInfo_v2}). */
    public long[] memoryInfo() throws CudaException {
        LongByReference free = new LongByReference();
        LongByReference total = new LongByReference();
        check("cuMemGetInfo_v2", api.cuMemGetInfo_v2(free, total));
        return new long[] {free.getValue(), total.getValue()};
    }

    @Override
    public long alloc(long bytes) throws CudaException {
        LongByReference p = new LongByReference();
        check("cuMemAlloc_v2", api.cuMemAlloc_v2(p, bytes));
        return p.getValue();
    }

    @Override
    public void free(long pointer) throws CudaException {
        check("cuMemFree_v2", api.cuMemFree_v2(pointer));
    }

    /** Loads a PTX module ({@code cuModuleLoadData}, which JIT-compiles it) and returns the entry's function. */
    public Kernel loadKernel(String ptx, String entry) throws CudaException {
        byte[] text = ptx.getBytes(StandardCharsets.US_ASCII);
        Memory image = new Memory(text.length + 1L);
        image.write(0, text, 0, text.length);
        image.setByte(text.length, (byte) 0);
        PointerByReference module = new PointerByReference();
        check("cuModuleLoadData", api.cuModuleLoadData(module, image));
        PointerByReference function = new PointerByReference();
        int rc = api.cuModuleGetFunction(function, module.getValue(), entry);
        if (rc != CudaNative.CUDA_SUCCESS) {
            api.cuModuleUnload(module.getValue());
            check("cuModuleGetFunction", rc);
        }
        return new Kernel(module.getValue(), function.getValue());
    }

    /** A loaded module and its entry function. */
    public final class Kernel implements AutoCloseable {
        private final Pointer module;
        private final Pointer function;

        private Kernel(Pointer module, Pointer function) {
            this.module = module;
            this.function = function;
        }

        /**
         * Launches the kernel on the default stream ({@code cuLaunchKernel}); does not wait.
         *
         * @param args one value per kernel parameter, in order: a {@link Long} for a {@code .u64}, an
         *             {@link Integer} for a {@code .u32}
         */
        public void launch(int blocks, int threads, List<Object> args) throws CudaException {
            Memory params = new Memory(8L * args.size());
            Memory[] values = new Memory[args.size()];
            for (int i = 0; i < args.size(); i++) {
                Object a = args.get(i);
                if (a instanceof Long l) {
                    values[i] = new Memory(8);
                    values[i].setLong(0, l);
                } else if (a instanceof Integer n) {
                    values[i] = new Memory(4);
                    values[i].setInt(0, n);
                } else {
                    throw new IllegalArgumentException("kernel argument " + i + " is a " + a.getClass().getSimpleName()
                            + ": only Long (.u64) and Integer (.u32) are passed");
                }
                params.setPointer(8L * i, values[i]);
            }
            check("cuLaunchKernel", api.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, null, params, null));
            // the driver copies the argument values during the call: keep them alive until it returns
            Reference.reachabilityFence(values);
            Reference.reachabilityFence(params);
        }

        @Override
        public void close() throws CudaException {
            check("cuModuleUnload", api.cuModuleUnload(module));
        }
    }

    /** A timing event on the default stream. */
    public final class Event implements AutoCloseable {
        private final Pointer event;

        private Event() throws CudaException {
            PointerByReference e = new PointerByReference();
            check("cuEventCreate", api.cuEventCreate(e, 0));
            this.event = e.getValue();
        }

        /** Records the event on the default stream. */
        public void record() throws CudaException {
            check("cuEventRecord", api.cuEventRecord(event, null));
        }

        /** Waits until the event has happened. */
        public void synchronize() throws CudaException {
            check("cuEventSynchronize", api.cuEventSynchronize(event));
        }

        /** Milliseconds from {@code start} to this event, both recorded and complete. */
        public float millisSince(Event start) throws CudaException {
            FloatByReference ms = new FloatByReference();
            check("cuEventElapsedTime", api.cuEventElapsedTime(ms, start.event, event));
            return ms.getValue();
        }

        @Override
        public void close() throws CudaException {
            check("cuEventDestroy_v2", api.cuEventDestroy_v2(event));
        }
    }

    /** A new timing event. */
    public Event event() throws CudaException {
        return new Event();
    }

    /** Waits for all work on the context ({@code cuCtxSynchronize}). */
    public void synchronize() throws CudaException {
        check("cuCtxSynchronize", api.cuCtxSynchronize());
    }

    @Override
    public void close() throws CudaException {
        check("cuCtxDestroy_v2", api.cuCtxDestroy_v2(context));
    }

    private void check(String call, int rc) throws CudaException {
        check(api, call, rc);
    }

    private static void check(CudaNative api, String call, int rc) throws CudaException {
        if (rc != CudaNative.CUDA_SUCCESS) {
            throw new CudaException(call, rc, errorName(api, rc));
        }
    }

    private static String errorName(CudaNative api, int rc) {
        PointerByReference name = new PointerByReference();
        if (api.cuGetErrorName(rc, name) == CudaNative.CUDA_SUCCESS && name.getValue() != null) {
            return name.getValue().getString(0, "US-ASCII");
        }
        return "CUresult " + rc;
    }

    /** The loader's reason in one line: its first two non-blank lines (JNA puts the dlopen error on the second). */
    private static String firstLine(String s) {
        if (s == null) {
            return "no message";
        }
        return String.join(" ", s.lines().map(String::strip).filter(l -> !l.isEmpty()).limit(2).toList());
    }
}
